"""Ghost's Admin API token: a short-lived HS256 JWT signed with the Admin API key's secret.

The key is `<id>:<secret>`, the secret in hex; the token's header names the key (`kid`), its
payload the Admin API as its audience (`aud: /admin/`) and a life of five minutes at most.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re

TOKEN_LIFE_SECONDS = 300  # the most Ghost accepts
_KEY = re.compile(r"^([0-9a-f]+):([0-9a-f]+)$")


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def split_key(key: str) -> tuple[str, bytes]:
    """The key's id and its secret's bytes; ValueError naming the expected shape otherwise."""
    found = _KEY.match(key.strip())
    if found is None or len(found.group(2)) % 2:
        raise ValueError("GHOST_ADMIN_API_KEY must be <id>:<secret>, the secret in hex (Ghost's custom "
                         "integration shows it as the Admin API key)")
    return found.group(1), bytes.fromhex(found.group(2))


def sign(header: dict, payload: dict, secret: bytes) -> str:
    """A JWT of `header` and `payload`, signed HS256 with `secret`."""
    signing_input = f"{b64url(json.dumps(header, separators=(',', ':')).encode())}." \
                    f"{b64url(json.dumps(payload, separators=(',', ':')).encode())}"
    signature = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(signature)}"


def admin_token(key: str, *, now: int) -> str:
    """The Admin API token for `key`, issued at `now` (epoch seconds), valid five minutes."""
    key_id, secret = split_key(key)
    return sign({"alg": "HS256", "typ": "JWT", "kid": key_id},
                {"iat": now, "exp": now + TOKEN_LIFE_SECONDS, "aud": "/admin/"}, secret)
