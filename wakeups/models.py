"""When things run: the wakeup row (one per instance) and each schedule's state."""
from __future__ import annotations

from typing import Any

from django.db import models

WAKEUP_ROW_ID = 1


class WakeupRow(models.Model):
    """Exactly one row (id 1): the deadline the stopped worker registered, when it stopped, and the
    last registration error. Written only by the worker's stop rule; read by the supervisor."""

    id = models.PositiveSmallIntegerField(primary_key=True, default=WAKEUP_ROW_ID)
    at = models.DateTimeField(null=True, blank=True, help_text="the next deadline registered with the wakeup")
    stopped_at = models.DateTimeField(null=True, blank=True, help_text="when the worker last stopped itself")
    last_error = models.TextField(blank=True, default="", help_text="why the last registration failed")

    class Meta:
        db_table = "sanoma_wakeup"
        verbose_name = "worker wake-up"
        verbose_name_plural = "worker wake-up"
        constraints = [models.CheckConstraint(condition=models.Q(id=WAKEUP_ROW_ID), name="sanoma_wakeup_one_row")]

    def __str__(self) -> str:
        return f"wakeup at {self.at or '-'}"

    @classmethod
    def get(cls) -> WakeupRow:
        row, _ = cls.objects.get_or_create(pk=WAKEUP_ROW_ID)
        return row

    @classmethod
    def record(cls, **fields: object) -> None:
        """Set fields of the one row, creating it first if need be."""
        cls.get()
        cls.objects.filter(pk=WAKEUP_ROW_ID).update(**fields)


class ScheduleState(models.Model):
    """A scheduled workflow's progress: the last fire handled (the back-fill cursor), its run, and
    what was skipped (overlap) or missed (older than the catch-up window)."""

    workflow = models.CharField(primary_key=True, max_length=200)
    last_fire_at = models.DateTimeField(null=True, blank=True)
    last_run_id = models.CharField(max_length=200, blank=True, default="")
    skipped = models.PositiveIntegerField(default=0, help_text="fires skipped: the last run was unfinished")
    last_skip_at = models.DateTimeField(null=True, blank=True)
    backfilled = models.PositiveIntegerField(default=0, help_text="missed fires run late, within catch-up")
    missed = models.PositiveIntegerField(default=0, help_text="missed fires older than catch-up: not run")
    last_missed_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["workflow"]

    def __str__(self) -> str:
        return self.workflow

    def as_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in self._meta.fields}
