"""The codes the credentials put on an error (registered with `connectors.errors`'s list on import)."""
from __future__ import annotations

from enum import StrEnum

from connectors.errors import register_codes


@register_codes
class CredentialCode(StrEnum):
    """Connectors' credentials and the secrets data files name."""

    UNKNOWN_CREDENTIAL = "unknown_credential"  # no connector declares a variable of that name
    SECRET_MISSING = "secret_missing"  # a secret a data file names has no value
    SECRETS_KEY_MISSING = "secrets_key_missing"  # storing a value needs SANOMA_SECRETS_KEY
