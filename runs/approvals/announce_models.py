"""The outbox of approval announcements: one row per approval asked, written in the transaction that
asks it, delivered after commit by the worker (`runs.approvals.announce`)."""
from __future__ import annotations

from django.db import models


class AnnouncementStatus(models.TextChoices):
    PENDING = "pending", "pending"  # to be posted at `next_at`
    SENDING = "sending", "sending"  # claimed by a delivery until `claimed_until`; past it, in doubt
    DELIVERED = "delivered", "delivered"
    FAILED = "failed", "failed"  # the vendor refused it for good, or it ran out of attempts


class ApprovalAnnouncement(models.Model):
    """An approval's announcement where people are (a Slack channel), and how its delivery went."""

    approval = models.OneToOneField("runs.Approval", on_delete=models.CASCADE, related_name="announcement")
    run_id = models.CharField(max_length=200, db_index=True)
    key = models.CharField(max_length=300, unique=True)  # the marker a reconcile read finds the post by
    op = models.CharField(max_length=200)  # the operation that posts it: slack.message.post
    message = models.JSONField()  # the post's input
    status = models.CharField(max_length=16, choices=AnnouncementStatus.choices, default=AnnouncementStatus.PENDING)
    attempts = models.IntegerField(default=0)
    next_at = models.DateTimeField()
    claimed_until = models.DateTimeField(null=True, blank=True)
    queued_until = models.DateTimeField(null=True, blank=True)  # a delivery task is queued until then
    created_at = models.DateTimeField()
    delivered_at = models.DateTimeField(null=True, blank=True)
    output = models.JSONField(null=True, blank=True)  # the vendor's answer: {channel, ts}
    error = models.JSONField(null=True, blank=True)  # the last failure
    reconciled = models.BooleanField(default=False)  # found by the reconcile read after a lost reply

    class Meta:
        app_label = "runs"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "next_at"], name="announcement_due")]
        verbose_name = "approval announcement"

    def __str__(self) -> str:
        # As the desk names an approval (`approval-1 of refund-7`), not by its row's id.
        return f"announcement of {self.approval.approval_id} of {self.run_id} ({self.status})"
