"""The desk's list of approval announcements: each one's channel, state, attempts and last error."""
from __future__ import annotations

from django.contrib import admin

from runs.admin.base import ReadOnlyMixin
from runs.approvals.announce_models import ApprovalAnnouncement


@admin.register(ApprovalAnnouncement)
class ApprovalAnnouncementAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("created_at", "run_id", "approval", "status", "attempts", "delivered_at", "reconciled")
    list_filter = ("status",)
    search_fields = ("run_id", "key")
    readonly_fields = ("approval", "run_id", "key", "op", "message", "status", "attempts", "next_at", "claimed_until",
                       "created_at", "delivered_at", "output", "error", "reconciled")

    def has_view_permission(self, request, obj=None) -> bool:  # operators only
        return bool(request.user.is_active and (request.user.is_superuser
                                                or request.user.has_perm("runs.view_any_run")))
