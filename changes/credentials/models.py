"""Connectors' stored credentials and who changed them.

The tables keep the names they had when credentials were part of the declared state
(`changes_credential`, `changes_credentialchange`)."""
from __future__ import annotations

from django.db import models

__all__ = ["Credential", "CredentialChange", "CredentialChangeAction"]


class Credential(models.Model):
    """One stored variable of a connector's environment, encrypted (Fernet): never its plaintext.

    `key_id` names the key that encrypted it (a short fingerprint, or `development` for the key a
    DEBUG site derives), so a value encrypted with another key is reported as such, not as garbage.
    """

    name = models.CharField(max_length=128, unique=True)
    ciphertext = models.TextField()
    key_id = models.CharField(max_length=32)
    updated_at = models.DateTimeField()
    updated_by = models.CharField(max_length=150)

    class Meta:
        db_table = "changes_credential"  # the table it had when credentials were part of the declared state
        ordering = ["name"]
        permissions = [("manage_credentials", "Can set and clear connectors' credentials")]

    def __str__(self) -> str:
        return self.name


class CredentialChangeAction(models.TextChoices):
    SET = "set", "set"
    CLEARED = "cleared", "cleared"


class CredentialChange(models.Model):
    """Who set or cleared which variable, and when; never the value. Its largest id is the store's version."""

    name = models.CharField(max_length=128)
    action = models.CharField(max_length=16, choices=CredentialChangeAction.choices)
    by = models.CharField(max_length=150)
    at = models.DateTimeField()

    class Meta:
        db_table = "changes_credentialchange"
        ordering = ["-id"]
        indexes = [models.Index(fields=["name", "-id"], name="credential_change_name")]

    def __str__(self) -> str:
        return f"{self.name} {self.action} by {self.by}"
