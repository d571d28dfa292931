"""The declared state in the admin (*Changes › Resources*): every resource the data files declare,
with its latest drift verdict and the fields that differ, the data files' problems at
`file:line:column`, a *Run drift* button, the plan after the latest finished drift run with the
policy's verdict for the viewer on each call, how many of its changes the policy will refuse, an
*Apply* button (not offered when the policy refuses every change), and how the latest apply ended.
The plan names the policy version it was judged with, and warns when the workers hold another (an
apply is then refused with `plan_policy_changed`: the page's own version is posted with it).

The buttons start runs of the built-in workflows as the signed-in user (the policy decides on each
call for them, held changes wait for their approvers); a worker runs them. While one of those runs
has not ended the page is live (read again every few seconds, as the run page is). The verdicts
shown are those of the latest finished drift run the viewer can see, kept in `DriftVerdict` as it
is read.
"""
from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path

from changes import services
from changes.errors import StateCode
from changes.models import DriftVerdict
from changes.plan_policy import policy_changed
from changes.resources.outcome import OUTCOMES, counts, said
from changes.selectors import declared_resources
from connectors.errors import SanomaError
from runs.admin.base import LIVE_SECONDS, ReadOnlyMixin, is_staff, me, refusal, run_link
from runs.approvals.permissions import Principal
from runs.display import moment
from runs.models import Approval, ApprovalStatus, Run, RunStatus


def apply_outcome(run: Run | None, viewer: Principal) -> dict[str, Any] | None:
    """How the latest apply ended (or that it has not), for the page: its counts, and whether every
    change of its plan was made; for a cancelled one, what it had made before."""
    if run is None:
        return None
    shown: dict[str, Any] = {"link": run_link(run.id), "status": run.status, "ended": moment(run.ended_at),
                             "started": moment(run.created_at), "complete": run.status == RunStatus.FINISHED}
    error = run.error or {}
    if run.status == RunStatus.FAILED and error.get("code") == StateCode.APPLY_INCOMPLETE:
        data = error.get("data") or {}
        found = {k: int(data.get(k) or 0) for k in OUTCOMES}
        shown.update(counts=found, planned=data.get("planned", sum(found.values())), said=said(found),
                     message=error.get("message", ""))
    elif run.status == RunStatus.FAILED:
        shown.update(message=f"{error.get('code') or error.get('name') or 'failed'}: {error.get('message', '')}")
    elif run.status == RunStatus.FINISHED:
        found = counts((run.result or {}).get("changes", []))
        shown.update(counts=found, planned=sum(found.values()))
    elif run.status == RunStatus.CANCELLED:
        shown.update(made=services.made_before_end(run, viewer=viewer))
    return shown


def doing(run: Run) -> str:
    """What a run in flight does, in words: `waiting for group:security to approve` (whom), `waiting
    for message`, `running`."""
    if run.status != RunStatus.WAITING or not run.waiting_for:
        return str(run.status)
    if run.waiting_for == "approval":
        approvers = list(dict.fromkeys(Approval.objects.filter(run_id=run.pk, status=ApprovalStatus.PENDING)
                                       .order_by("seq").values_list("approver", flat=True)))
        if approvers:
            return f"waiting for {' or '.join(approvers)} to approve"
    return f"waiting for {run.waiting_for}"


@admin.register(DriftVerdict)
class ResourcesAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """One page: the declared resources, their drift, the plan; buttons to drift and to apply."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("", wrap(self.changelist_view), name="changes_driftverdict_changelist"),
            path("drift/", wrap(self.start_view), {"workflow": "drift"}, name="changes_driftverdict_drift"),
            path("apply/", wrap(self.start_view), {"workflow": "apply"}, name="changes_driftverdict_apply"),
        ]

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if not self.has_view_permission(request):
            messages.error(request, "You may not see the declared resources")
            return redirect("admin:index")
        viewer = me(request)
        resources: list[dict[str, Any]] = []
        problems: list[dict[str, Any]] = []
        try:
            found = declared_resources().plain()
            resources, problems = found["resources"], found["problems"]
        except Exception as err:  # a config without a root or one that does not resolve: said, not a 500
            messages.error(request, f"The data files cannot be read: {err}")
        latest = services.latest_drift(viewer)
        plan: dict[str, Any] | None = None
        if latest is not None:
            report = latest.result or {}
            services.keep_verdicts(latest, report)
            try:
                plan = services.plan(report, by=viewer.id)
            except SanomaError as err:
                messages.error(request, refusal(err))
        verdicts = {v.resource: v for v in DriftVerdict.objects.all()} if latest is not None else {}
        rows = [{"r": r, "verdict": verdicts.get(r["id"])} for r in resources]
        last_apply = services.latest_run(viewer, "apply")
        running = [{"run": run, "link": run_link(run.id), "since": moment(run.created_at), "doing": doing(run)}
                   for run in services.in_flight(viewer)]
        return TemplateResponse(request, "admin/changes/driftverdict/resources.html", {
            **self.admin_site.each_context(request), "opts": self.model._meta, "title": "Resources",
            "rows": rows, "problems": problems, "latest": latest, "latest_ended": moment(latest.ended_at) if latest
            else "", "latest_link": run_link(latest.id) if latest is not None else "", "plan": plan,
            "refused": services.refused_text(plan, to="you") if plan else "",
            "stuck": services.stuck_text(plan) if plan else "",
            "apply_label": services.apply_label(plan) if plan else "",
            "may_apply": plan is not None and not plan["empty"] and not plan["all_refused"],
            # The workers hold another policy than the one this plan was judged with: an apply is refused.
            "policy_changed": policy_changed(plan["policy_version"]) if plan else None,
            "apply": apply_outcome(last_apply, viewer),
            # The plan is from before the latest apply: what the vendors hold now, a drift tells.
            "applied_since": bool(last_apply and latest and last_apply.ended_at and latest.ended_at
                                  and last_apply.ended_at > latest.ended_at),
            "running": running, "live": LIVE_SECONDS if running else None,
        })

    def start_view(self, request: HttpRequest, workflow: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            messages.error(request, "You may not start runs here")
            return redirect("admin:index")
        try:
            if workflow == "apply":  # a page shown before the policy changed may still offer it
                services.check_apply(by=me(request), plan_version=request.POST.get("policy_version"))
            run = services.start(workflow, by=me(request))
        except SanomaError as err:
            messages.error(request, refusal(err))
        else:
            messages.success(request, f"Started {workflow} run {run.id}: a worker runs it; this page shows its "
                                      "result when it ends" + (" (held changes wait for their approvers)"
                                                               if workflow == "apply" else ""))
        return redirect("admin:changes_driftverdict_changelist")
