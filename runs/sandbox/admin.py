"""Sandbox runs on the desk: the "Try in sandbox" page (choose one of the workflow's scenarios,
start), the runs list's badge and filter, and the mark the run page and the inbox show."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from connectors.errors import SanomaError
from runs.admin.base import me, refusal
from runs.approvals.permissions import check_can_start, principal_of
from runs.config.registry import get_config
from runs.sandbox.scenarios import reader
from runs.sandbox.services import start_sandbox

if TYPE_CHECKING:
    from runs.models import Run

    _RunAdminBase = admin.ModelAdmin[Run]
else:
    _RunAdminBase = object

BADGE = '<span class="sanoma-sandbox-badge" title="a sandbox run: on fakes, seeded from a scenario">sandbox</span>'


def badge() -> str:
    return format_html(BADGE)


class SandboxFilter(admin.SimpleListFilter):
    """Sandbox runs, or none of them (`?sandbox=yes` / `no`): both kinds are listed by default."""

    title = "sandbox"
    parameter_name = "sandbox"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Sandbox runs"), ("no", "Runs on real vendors")]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        value = self.value()
        if not value:
            return queryset
        if value not in ("yes", "no"):
            messages.error(request, f"“{value}” is not a sandbox choice: yes or no")
            return queryset.none()
        return queryset.filter(sandbox__isnull=value == "no")


class SandboxStartMixin(_RunAdminBase):
    """The run admin's "Try in sandbox" page (`admin:runs_run_sandbox`): a workflow's scenarios to
    seed from; starting one opens the new run's page."""

    def sandbox_view(self, request: HttpRequest) -> HttpResponse:
        config = get_config()
        name = request.POST.get("_workflow") or request.GET.get("workflow") or ""
        context: dict[str, Any] = {**self.admin_site.each_context(request), "opts": self.opts,
                                   "title": "Try in sandbox"}
        if name and name not in config.workflows:
            self.message_user(request, f"No workflow {name!r}: choose one of the list", messages.ERROR)
            return redirect("admin:runs_run_sandbox")
        try:
            scenarios = reader().of_workflow(config, name or None)
        except SanomaError as err:
            self.message_user(request, refusal(err), messages.ERROR)
            return redirect("admin:runs_run_changelist")
        if not name:
            counts: dict[str, int] = {}
            for scenario in scenarios:
                counts[scenario.workflow] = counts.get(scenario.workflow, 0) + 1
            context["workflows"] = [
                {"name": w, "title": config.workflows[w].title, "scenarios": counts.get(w, 0),
                 "url": reverse("admin:runs_run_sandbox") + f"?workflow={w}"}
                for w in sorted(config.workflows) if not config.workflows[w].builtin]
            return TemplateResponse(request, "admin/runs/run/sandbox.html", context)
        error = ""
        chosen = request.POST.get("_scenario", "")
        may_start, why_not = self._may_start(request, name)
        if request.method == "POST" and not may_start:
            error = why_not  # the button was not there: a hand-made post is refused before anything is read
        elif request.method == "POST":
            if not chosen:
                error = "Choose a scenario to seed the sandbox run from"
            else:
                try:
                    run = start_sandbox(scenario=chosen, workflow=name, started_by=me(request), config=config)
                except SanomaError as err:
                    error = refusal(err)
                else:
                    self.message_user(request, f"Started {run.workflow} in the sandbox as run {run.id}, seeded from "
                                               f"“{chosen}”", messages.SUCCESS)
                    return redirect("admin:runs_run_change", quote(run.pk))
        context.update(title=f"Try {name} in sandbox", workflow=config.workflows[name], scenarios=scenarios,
                       chosen=chosen, error=error, may_start=may_start, why_not=why_not,
                       start_url=reverse("admin:runs_run_start") + f"?workflow={name}")
        status = 403 if request.method == "POST" and not may_start else 400 if error else 200
        return TemplateResponse(request, "admin/runs/run/sandbox.html", context, status=status)

    @staticmethod
    def _may_start(request: HttpRequest, workflow: str) -> tuple[bool, str]:
        """Whether the signed-in user may start `workflow` (a sandbox run is started as they are), and
        if not, why, in a line."""
        principal = principal_of(me(request))
        try:
            check_can_start(principal, workflow)
        except SanomaError as err:
            return False, (f"{principal.id} may not start {workflow}, so may not start it in the sandbox either: a "
                           f"sandbox run is started as you, with the same right as a real run "
                           f"(runs.start_workflow) ({err.code})")
        return True, ""
