"""What retention removed: one row per pruned run, with its chain's head and the export holding it."""
from __future__ import annotations

from django.db import models


class PrunedRun(models.Model):
    """A run retention exported and removed. The ledger's delete refusal lets a record go only when
    its run is here and `records` covers its chain index; `head` is its chain's last hash, as the
    export's head line has it."""

    run_id = models.CharField(max_length=200, db_index=True)
    workflow = models.CharField(max_length=200)
    status = models.CharField(max_length=16)
    ended_at = models.DateTimeField()
    records = models.IntegerField(help_text="how many ledger records its chain had")
    head = models.CharField(max_length=64, blank=True, default="", help_text="its chain's last hash")
    export_file = models.CharField(max_length=300, help_text="the export file's name, in the retention folder")
    pruned_at = models.DateTimeField()

    class Meta:
        app_label = "runs"
        ordering = ["-pruned_at", "-id"]
        verbose_name = "pruned run"

    def __str__(self) -> str:
        return f"{self.run_id} ({self.records} records, in {self.export_file})"
