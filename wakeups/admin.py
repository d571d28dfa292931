"""The admin: the wakeup row (read-only) and the schedules page (next fires, last run, skips,
back-fills, and "run now")."""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse

from connectors.errors import SanomaError
from runs.admin.base import LIVE_SECONDS, ReadOnlyMixin
from runs.config.registry import get_config
from runs.display import moment, moment_column
from wakeups.models import ScheduleState, WakeupRow
from wakeups.selectors import ScheduleView, schedules
from wakeups.services import run_now


@admin.register(WakeupRow)
class WakeupRowAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "wakes", "stopped", "last_error")
    fields = ("id", "wakes", "stopped", "last_error")
    readonly_fields = fields

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        # The row alone says little: the title says what it is for.
        title = ("Worker wake-up: when a worker that stopped while idle must start again (the next sleep, "
                 "schedule or deadline); none until a worker has stopped")
        return super().changelist_view(request, {"title": title, **(extra_context or {})})

    wakes = moment_column("at", "wakes the worker at")
    stopped = moment_column("stopped_at", "the worker stopped at")


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
            "live": LIVE_SECONDS,  # the next fires move on, runs start: the page follows
            "opts": self.model._meta,
            "schedules": [shown(view) for view in schedules(config)],
            "can_run": request.user.has_perm("runs.start_workflow"),
        }
        return TemplateResponse(request, "admin/wakeups/schedules.html", context)


def shown(view: ScheduleView) -> dict[str, Any]:
    """A schedule as the page shows it: its moments the desk's one way (the person's zone, named)."""
    state = view.state
    return {**view.as_dict(), "next_fires_shown": [moment(fire) for fire in view.next_fires],
            "last_fire_shown": moment(state.last_fire_at if state else None)}
