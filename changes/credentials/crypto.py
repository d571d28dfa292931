"""Encryption at rest: Fernet, keyed by the SANOMA_SECRETS_KEY setting.

Several keys (comma-separated) rotate: the first encrypts, every one decrypts. Without a key,
encrypting and decrypting are refused, unless DEBUG is on: then a development key derived from
SECRET_KEY is used, labelled `development` on every value it encrypts, with one warning a process.
"""
from __future__ import annotations

import base64
import hashlib
import logging
import threading
from dataclasses import dataclass

from cryptography.fernet import Fernet, InvalidToken, MultiFernet
from django.conf import settings

from changes.credentials.errors import CredentialCode
from connectors.errors import SanomaError

log = logging.getLogger("sanoma.credentials")

DEVELOPMENT_KEY_ID = "development"
SECRETS_KEY_MISSING = CredentialCode.SECRETS_KEY_MISSING
GENERATE = "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'"

_warned = threading.Event()


class DecryptionFailed(Exception):
    """A stored value that cannot be read with the keys at hand; the message says why, never the value."""


@dataclass(frozen=True)
class Keys:
    fernet: MultiFernet
    key_id: str  # the id of the key that encrypts (the first)
    ids: tuple[str, ...]  # the ids of every key that decrypts


def key_id(key: str) -> str:
    """A short fingerprint naming a key in the rows it encrypted (tells nothing about the key)."""
    return hashlib.sha256(b"sanoma-secrets-key-id:" + key.encode()).hexdigest()[:12]


def _development_key() -> str:
    digest = hashlib.sha256(b"sanoma-development-secrets-key:" + str(settings.SECRET_KEY).encode()).digest()
    return base64.urlsafe_b64encode(digest).decode()


def keys() -> Keys:
    """The keys in use; refused (`secrets_key_missing`) without SANOMA_SECRETS_KEY unless DEBUG is on."""
    configured = [k for k in getattr(settings, "SANOMA_SECRETS_KEY", []) if k]
    if configured:
        return Keys(fernet=MultiFernet([Fernet(k) for k in configured]), key_id=key_id(configured[0]),
                    ids=tuple(key_id(k) for k in configured))
    if not settings.DEBUG:
        raise SanomaError(
            "SANOMA_SECRETS_KEY is not set: stored credentials are encrypted with it. Set it to a Fernet key "
            f"({GENERATE}), or set the variables in the environment instead",
            code=SECRETS_KEY_MISSING,
        )
    if not _warned.is_set():
        _warned.set()
        log.warning("SANOMA_SECRETS_KEY is not set: DEBUG is on, so stored credentials are encrypted with a "
                    "DEVELOPMENT key derived from SECRET_KEY; set SANOMA_SECRETS_KEY before storing real ones")
    return Keys(fernet=MultiFernet([Fernet(_development_key())]), key_id=DEVELOPMENT_KEY_ID,
                ids=(DEVELOPMENT_KEY_ID,))


def encrypt(plaintext: str) -> tuple[str, str]:
    """The ciphertext of `plaintext` and the id of the key that encrypted it."""
    current = keys()
    return current.fernet.encrypt(plaintext.encode()).decode("ascii"), current.key_id


def decrypt(ciphertext: str, stored_key_id: str) -> str:
    """The plaintext; DecryptionFailed says why not (never the value)."""
    try:
        current = keys()
    except SanomaError as err:
        raise DecryptionFailed("SANOMA_SECRETS_KEY is not set to decrypt it") from err
    try:
        return current.fernet.decrypt(ciphertext.encode("ascii")).decode()
    except (InvalidToken, UnicodeError, ValueError):
        if stored_key_id not in current.ids:
            which = "the development key" if stored_key_id == DEVELOPMENT_KEY_ID else f"key {stored_key_id}"
            raise DecryptionFailed(f"it was encrypted with {which}, which SANOMA_SECRETS_KEY does not hold: "
                                   "set it again") from None
        raise DecryptionFailed("it cannot be decrypted (damaged): set it again") from None
