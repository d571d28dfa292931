"""What a sandbox run keeps besides its run: the scenario it was seeded from, its fakes' books
(state, remembered replies, pending faults and calls, per vendor), and its checks once evaluated."""
from __future__ import annotations

from django.db import models


class SandboxRun(models.Model):
    """A run made against fakes. Its row is written with the run's, in the start's transaction, so
    no worker ever advances the run without knowing it is a sandbox."""

    run = models.OneToOneField("runs.Run", primary_key=True, on_delete=models.CASCADE, related_name="sandbox")
    scenario = models.CharField(max_length=300, help_text="the scenario's name")
    file = models.CharField(max_length=300, blank=True, default="", help_text="its feature file, from the config root")
    # vendor -> the fake's book as its state file holds it (runs.sandbox.fakes).
    books = models.JSONField(default=dict)
    # vendor -> how many calls its fake had seen once seeded (`reached the vendor` counts from there).
    calls_before = models.JSONField(default=dict)
    # [{"step": ..., "line": ..., "ok": ..., "detail": ...}] once the run has ended; None before.
    checks = models.JSONField(null=True, blank=True)
    checked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "runs"
        verbose_name = "sandbox run"

    def __str__(self) -> str:
        return f"sandbox {self.run_id} ({self.scenario})"

    @property
    def passed(self) -> int:
        return sum(1 for c in self.checks or () if c.get("ok"))

    @property
    def failed(self) -> int:
        return sum(1 for c in self.checks or () if not c.get("ok"))
