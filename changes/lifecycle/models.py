"""A change run's picture: what the change is (branch, title), where it stands, its checks report and
plan, what was merged and deployed. The run and its ledger are the record; this row is what the
change's own operations note as they go, so the changes page and `manage.py change list` read one
row per change."""
from __future__ import annotations

from django.db import models

from changes.lifecycle.states import ChangeState


class ChangeRun(models.Model):
    """One change: its run (id `change-...`), the branch it merges, and how far it got."""

    run_id = models.CharField(max_length=200, primary_key=True)
    repo_url = models.CharField(max_length=500)
    branch = models.CharField(max_length=200)
    base = models.CharField(max_length=200, default="main")
    title = models.CharField(max_length=200)
    description = models.TextField(blank=True, default="")
    pull_request = models.CharField(max_length=500, blank=True, default="")
    opened_by = models.CharField(max_length=150)
    opened_at = models.DateTimeField()
    # A hash of the change workflow's own code: a deploy moves this run only onto a version whose
    # change workflow is the same code.
    change_code = models.CharField(max_length=64)
    state = models.CharField(max_length=32, choices=ChangeState.choices, default=ChangeState.OPENED)
    head_sha = models.CharField(max_length=64, blank=True, default="")
    checks = models.JSONField(default=dict, blank=True)
    plan = models.JSONField(default=dict, blank=True)
    merged_sha = models.CharField(max_length=64, blank=True, default="")
    deployed_revision = models.CharField(max_length=64, blank=True, default="")
    deployed_version = models.CharField(max_length=200, blank=True, default="")
    updated_at = models.DateTimeField()

    class Meta:
        db_table = "changes_changerun"  # the table it had when the life of a change was part of the declared state
        verbose_name = "change"
        verbose_name_plural = "changes"
        ordering = ["-opened_at"]
        indexes = [models.Index(fields=["branch", "-opened_at"], name="change_branch")]

    def __str__(self) -> str:
        return f"{self.title} ({self.branch})"


__all__ = ["ChangeRun", "ChangeState"]
