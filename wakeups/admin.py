"""The admin: the wakeup row (read-only) and the schedules page (next fires, last run, skips,
back-fills, and "run now")."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from connectors.errors import SanomaError
from runs.admin.common import ReadOnlyMixin
from runs.config.registry import get_config
from wakeups.models import ScheduleState, WakeupRow
from wakeups.selectors import schedules
from wakeups.services import run_now


@admin.register(WakeupRow)
class WakeupRowAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "at", "stopped_at", "last_error")
    readonly_fields = ("id", "at", "stopped_at", "last_error")


@admin.register(ScheduleState)
class ScheduleAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """One page: every scheduled workflow of the config, with a "run now" button each."""

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        if not self.has_view_permission(request):
            return HttpResponse(status=403)
        config = get_config()
        if request.method == "POST":
            if not request.user.has_perm("runs.start_workflow"):
                messages.error(request, "You may not start workflows")
            else:
                try:
                    run = run_now(config=config, workflow=str(request.POST.get("workflow", "")))
                    messages.success(request, f"Started {run.id}")
                except SanomaError as err:
                    messages.error(request, str(err))
            return HttpResponseRedirect(request.path)
        context = {
            **self.admin_site.each_context(request),
            "title": "Schedules",
            "opts": self.model._meta,
            "schedules": [v.as_dict() for v in schedules(config)],
            "can_run": request.user.has_perm("runs.start_workflow"),
        }
        return TemplateResponse(request, "admin/wakeups/schedules.html", context)
