"""The last `ledger verify` of the whole ledger, kept so the desk and the alerts can say whether it passed."""
from __future__ import annotations

from django.db import models


class LedgerVerification(models.Model):
    """One `manage.py ledger verify` of every chain (a verify of one run with `--run` is not kept):
    when, whether every chain held, how much it checked and the first broken record it named."""

    checked_at = models.DateTimeField()
    ok = models.BooleanField()
    runs = models.IntegerField(help_text="chains checked")
    records = models.IntegerField(help_text="records checked")
    broken = models.IntegerField(help_text="chains broken")
    first_break = models.TextField(blank=True, default="", help_text="the first broken record, as verify named it")

    class Meta:
        app_label = "runs"
        db_table = "sanoma_ledger_verification"
        ordering = ["-checked_at", "-id"]
        verbose_name = "ledger verification"

    def __str__(self) -> str:
        return f"ledger verify at {self.checked_at:%Y-%m-%d %H:%M}: {'ok' if self.ok else f'{self.broken} broken'}"
