"""The declared state's tables: connectors' stored credentials and who changed them, and (defined in
`changes.resources.models`, registered by importing them here) what sanoma created at vendors and the
latest drift verdicts."""
from __future__ import annotations

from django.db import models

from changes.lifecycle.models import ChangeRun, ChangeState
from changes.resources.models import DriftVerdict, ManagedResource

__all__ = ["ChangeRun", "ChangeState", "Credential", "CredentialChange", "CredentialChangeAction", "DriftVerdict",
           "ManagedResource"]


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
        ordering = ["-id"]
        indexes = [models.Index(fields=["name", "-id"], name="credential_change_name")]

    def __str__(self) -> str:
        return f"{self.name} {self.action} by {self.by}"
