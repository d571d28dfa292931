"""Changes in the admin (*Changes › Change runs*): the list of changes the signed-in user may see
(whoever may see a change's run: its opener, its approvers, operators), an *Open a change* form,
and each change's page: its checks report (each problem at `file:line`), the plan of what apply
would do with the change's tree and the policy's verdict on each call, the approval the merge
waits for (decided on the run's page), what was merged and deployed, and a link to the run.

Nothing is edited here: a change is opened through `changes.lifecycle.services.open_change`, as
the signed-in user, and its run (a worker runs it) records everything else on the row.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote, unquote
from django.core.validators import RegexValidator
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from pydantic import ValidationError

from changes.lifecycle import in_flight, selectors, services
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.workflow import NAME, ChangeInput
from changes.resources.workflows import READ_OP
from connectors.errors import ConfigError, IssueCode, SanomaError
from runs.admin.base import LIVE_SECONDS, ReadOnlyMixin, is_staff, me, refusal, run_link
from runs.approvals.extras import Extra
from runs.config import paths as shown_paths
from runs.config.registry import get_config
from runs.display import moment, moment_column, short_id, version
from runs.models import Approval, Run

BASE = "main"
BRANCH_RULE = "letters, digits, '.', '_', '/' and '-'"


class OpenChangeForm(forms.Form):
    """What a change from a branch needs; checked as the `change` workflow checks its input."""

    branch = forms.CharField(
        max_length=200, widget=forms.TextInput(attrs={"class": "vTextField", "autofocus": True}),
        validators=[RegexValidator(r"^[A-Za-z0-9._/-]+$", f"A branch name is {BRANCH_RULE}",
                                   code=IssueCode.INVALID_BRANCH)],
        help_text=f"The branch to check, merge into {BASE} and deploy: it must be pushed to the company's repository.")
    title = forms.CharField(max_length=200, widget=forms.TextInput(attrs={"class": "vTextField"}))
    description = forms.CharField(required=False, max_length=5000, strip=False,
                                  widget=forms.Textarea(attrs={"rows": 4, "cols": 60, "class": "vLargeTextField"}))

    def clean_branch(self) -> str:
        branch: str = self.cleaned_data["branch"]
        if branch == BASE:
            raise forms.ValidationError(f"This is the base ({BASE}): a change merges another branch into it",
                                        code=IssueCode.IS_BASE)
        return branch

    def add_refusal(self, err: SanomaError, root: Path | None = None) -> None:
        """The service's refusal, on the field its issue names (a branch the repository lacks: on
        `branch`), else above the form; a path on this machine in it shown relative to `root`, as
        the desk shows paths everywhere."""
        issues = err.data.get("issues") if isinstance(err.data, dict) else None
        placed = False
        for issue in issues or []:
            where = (issue.get("path") or [None])[0]
            if where in self.fields:
                self.add_error(where, shown_paths.relative(issue.get("message") or refusal(err), root))
                placed = True
        if not placed:
            self.add_error(None, shown_paths.relative(refusal(err), root))

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:
            return cleaned
        try:
            ChangeInput.model_validate({k: cleaned.get(k, "") for k in ("branch", "title", "description")})
        except ValidationError as err:
            for problem in err.errors():
                where = problem["loc"][0] if problem["loc"] else None
                self.add_error(where if where in self.fields else None, problem["msg"])
        return cleaned


def verdict_text(verdict: dict[str, Any] | None) -> str:
    """The policy's verdict on a planned call: `allow`, `held for <approver>`, `deny: <reason>`."""
    verdict = verdict or {}
    decision = verdict.get("decision")
    if decision == "allow":
        return "allow"
    if decision == "held":
        return f"held for {verdict.get('approver') or 'an approver'}"
    if decision == "deny":
        return f"deny: {verdict['reason']}" if verdict.get("reason") else "deny"
    return f"cannot be decided: {verdict.get('reason') or 'no verdict'}"


def checks_rows(report: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Each check as shown: its name, ok / failed / skipped, its summary, its problems as `file:line: message`."""
    rows = []
    for check in (report or {}).get("checks", []):
        mark = "ok" if check.get("ok") else ("skipped" if check.get("skipped") else "failed")
        problems = [(f"{p['file']}:{p.get('line') or 0}: " if p.get("file") else "") + str(p.get("message", ""))
                    for p in check.get("problems") or []]
        rows.append({"name": check.get("name", "?"), "mark": mark, "problems": problems,
                     "summary": check.get("skipped") if mark == "skipped" else check.get("summary", "")})
    return rows


def plan_rows(plan: dict[str, Any] | None, drifted: dict[tuple[str, str], Any] | None = None) -> list[dict[str, Any]]:
    """Each planned change with its calls and their verdicts; each field with what this site's data
    files declare where the vendor's value differs from it (`drifted`, from `selectors.drifted_fields`)."""
    rows = []
    drifted = drifted or {}
    for change in (plan or {}).get("changes", []):
        where = f"{change['file']}:{change['line']}" if change.get("file") else ""
        fields = [{**f, **({"declared": drifted[(change.get("resource"), f.get("path"))]}
                           if (change.get("resource"), f.get("path")) in drifted else {})}
                  for f in change.get("fields") or []]
        rows.append({"action": change.get("action", "?"), "type": change.get("type", ""),
                     "name": change.get("name") or change.get("import_id") or change.get("resource") or "",
                     "where": where, "fields": fields,
                     "calls": [{"op": call.get("op", "?"), "decision": (call.get("verdict") or {}).get("decision"),
                                "verdict": verdict_text(call.get("verdict"))} for call in change.get("calls", [])]})
    return rows


def patch_lines(patch: str) -> list[tuple[str, str]]:
    """A patch's lines, each with how it reads: `meta` (file headers), `hunk`, `add`, `del` or `same`."""
    lines = []
    for line in patch.splitlines():
        if line.startswith(("diff --git", "--- ", "+++ ", "index ", "new file", "deleted file", "similarity",
                            "rename ", "Binary files")):
            kind = "meta"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "same"
        lines.append((kind, line))
    return lines


def review_of(row: ChangeRun) -> dict[str, Any]:
    """What whoever lets the change merge reads: its checks (each with its result), its plan (each
    call with the policy's verdict), what it does to the work in flight (the runs it migrates and
    pins, the held calls it releases, reassigns or refuses) and what the checked commit brings into
    the base (its diff)."""
    report = row.checks or {}
    diff = report.get("diff") or {}
    flight = report.get("in_flight") or None
    return {"checked": bool(report), "checks": checks_rows(report), "checks_ok": report.get("ok"),
            "in_flight": flight, "in_flight_limit": in_flight.LISTED,
            "in_flight_rows": [{**r, "url": reverse("admin:runs_run_change", args=[quote(r["run"])])}
                               for r in in_flight.table(flight)],
            "checked_sha": report.get("sha") or "", "plan": row.plan or None,
            "plan_rows": plan_rows(row.plan, selectors.drifted_fields(row.plan, selectors.declared_here())),
            "diff": diff, "diff_lines": patch_lines(str(diff.get("patch") or "")), "base": row.base,
            "branch": row.branch, "declares": _declares()}


def _declares() -> bool:
    """Whether this config declares resources at its vendors (else a change has nothing to plan)."""
    try:
        return READ_OP in get_config().ops
    except ConfigError:
        return True


MERGE_OP = "sanoma.change.merge"


def merge_approval_extra(approval: Approval, full: bool) -> Extra | None:
    """The approval a merge waits for: in the inbox, a link to its change; on the approval's page,
    the change's checks, plan, work in flight and diff, so the approver sees what they let merge."""
    if approval.op != MERGE_OP or approval.run.workflow != NAME:
        return None
    link = ("the change: its checks, plan and diff", reverse("admin:lifecycle_changerun_change",
                                                              args=[quote(approval.run_id)]))
    if not full:
        return Extra(link=link)
    row = ChangeRun.objects.filter(run_id=approval.run_id).first()
    if row is None:
        return Extra(link=link)
    merges = (approval.op_input or {}).get("head_sha") if isinstance(approval.op_input, dict) else None
    return Extra(link=link, template="admin/lifecycle/changerun/_review.html",
                 context={**review_of(row), "merges_sha": merges or "", "change_url": link[1]})


@admin.register(ChangeRun)
class ChangeRunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("title", "branch", "state", "run_status", "opened_by", "opened", "merged", "deployed")
    list_display_links = ("title",)
    list_filter = ("state",)
    search_fields = ("title", "branch", "run_id")
    ordering = ("-opened_at", "-run_id")
    list_per_page = 50
    missing_noun = "change"

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        # Which changes: get_queryset keeps those whose runs the user may see.
        return is_staff(request)

    def get_queryset(self, request: HttpRequest) -> QuerySet[ChangeRun]:
        run = Run.objects.filter(pk=OuterRef("run_id"))
        return (selectors.visible_changes(me(request))
                .annotate(run_status=Subquery(run.values("status")[:1]),
                          run_waiting_for=Subquery(run.values("waiting_for")[:1])))

    def get_urls(self) -> list[Any]:
        wrap = self.admin_site.admin_view
        return [path("open/", wrap(self.open_view), name="lifecycle_changerun_open"), *super().get_urls()]

    # ---- the list's columns ----

    @admin.display(description="run", ordering="run_status")
    def run_status(self, row: ChangeRun) -> str:
        status = getattr(row, "run_status", None) or "-"
        waiting = getattr(row, "run_waiting_for", "")
        return f"{status} ({waiting})" if waiting else status

    opened = moment_column("opened_at", "opened")

    @admin.display(description="merged")
    def merged(self, row: ChangeRun) -> str:
        return short_id(row.merged_sha) if row.merged_sha else "-"

    @admin.display(description="deployed")
    def deployed(self, row: ChangeRun) -> str:
        if not row.deployed_revision:
            return "-"
        return format_html("{} on {}", short_id(row.deployed_revision), version(row.deployed_version)) \
            if row.deployed_version else short_id(row.deployed_revision)

    # ---- the pages ----

    def _context(self, request: HttpRequest, **extra: Any) -> dict[str, Any]:
        return {**self.admin_site.each_context(request), "opts": self.opts, **extra}

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "",
                    extra_context: dict[str, Any] | None = None) -> HttpResponse:
        row = self.get_object(request, unquote(object_id))
        if row is None or not self.has_view_permission(request, row):
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        run = Run.objects.get(pk=row.run_id)
        # Paths relative to the config root, never this machine's (shown_paths).
        root = get_config().root
        picture = shown_paths.relative(selectors.picture(row, run), root)
        picture["repository"] = shown_paths.repository(row.repo_url, root)
        approvals = [{**a, "url": reverse("admin:runs_approval_change", args=[a["id"]])}
                     for a in picture["approvals"]]
        return TemplateResponse(request, "admin/lifecycle/changerun/change.html", self._context(
            request, title=row.title, original=row, p=picture, run_link=run_link(run.id),
            applied=selectors.applied_text(picture),
            run_url=reverse("admin:runs_run_change", args=[quote(run.id)]), approvals=approvals,
            # Paths in the checks relative to the config root (shown_paths), as in the picture.
            review={**review_of(row), "checks": checks_rows(picture["checks"])},
            opened=moment(row.opened_at), updated=moment(row.updated_at),
            ended=moment(run.ended_at) if run.ended_at else "",
            # Live while the run goes on, as the run's page is: the checks, the merge, the deploy land.
            live=None if run.ended else LIVE_SECONDS))

    def open_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_module_permission(request):
            messages.error(request, "You may not open changes here")
            return redirect("admin:index")
        form = OpenChangeForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                run = services.open_change(branch=data["branch"], title=data["title"],
                                           description=data["description"], base=BASE, by=me(request))
            except SanomaError as err:
                form.add_refusal(err, get_config().root)
            else:
                messages.success(request, f"Opened the change of {data['branch']} as run {run.id}: a worker checks "
                                          "it; this page shows how far it got")
                return redirect("admin:lifecycle_changerun_change", quote(run.id))
        return TemplateResponse(request, "admin/lifecycle/changerun/open.html", self._context(
            request, title="Open a change", form=form, base=BASE))


__all__ = ["ChangeRunAdmin", "OpenChangeForm", "checks_rows", "merge_approval_extra", "patch_lines", "plan_rows",
           "review_of", "verdict_text"]
