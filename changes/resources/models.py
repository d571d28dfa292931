"""The declared state's own table: what sanoma created at a vendor (imported by `changes.models`)."""
from __future__ import annotations

from django.db import models


class ManagedResource(models.Model):
    """An instance an apply created at a vendor (`<vendor>.<type>` and its import id), so a later
    plan may delete it once no data file declares it. Nothing absent from this table is ever
    deleted by sanoma. A row goes when the instance is deleted (a person: deactivated)."""

    type = models.CharField(max_length=200)
    import_id = models.CharField(max_length=500)
    created_by = models.CharField(max_length=200, help_text="the run whose call created it")
    created_at = models.DateTimeField()

    # Declared so type checkers see it: the model lives outside `changes.models`, which re-exports it.
    objects: models.Manager[ManagedResource] = models.Manager()

    class Meta:
        app_label = "changes"
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["type", "import_id"], name="managed_resource_once")]

    def __str__(self) -> str:
        return f"{self.type} {self.import_id}"


class DriftVerdict(models.Model):
    """The latest drift verdict of one declared resource, kept when a drift or apply run ends: what
    the admin shows beside each resource. A resource's id is `<file>#<name>`."""

    resource = models.CharField(max_length=500, unique=True)
    type = models.CharField(max_length=200)
    status = models.CharField(max_length=16)
    diffs = models.JSONField(default=list)
    error = models.JSONField(null=True, blank=True)
    run_id = models.CharField(max_length=200)
    at = models.DateTimeField()

    objects: models.Manager[DriftVerdict] = models.Manager()

    class Meta:
        app_label = "changes"
        ordering = ["resource"]
        # The admin's page of these rows is the declared resources' page (*Changes › Resources*).
        verbose_name = "resource"
        verbose_name_plural = "resources"

    def __str__(self) -> str:
        return f"{self.resource}: {self.status}"
