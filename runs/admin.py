"""The operator's desk: runs, the approvals inbox, the ledger, starting a run, start permissions.

Every view reads through the selectors and acts through the services (`runs.services`,
`runs.approvals`, `runs.permissions`), so the admin enforces what the API and the commands enforce:
a user who is not an operator sees only the runs they started or were asked to approve.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.db.models import Count, IntegerField, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from guardian.admin import GuardedModelAdmin

from connectors.errors import InvalidInput, SanomaError, describe_issues
from runs import approvals, services
from runs.config import input_schema
from runs.models import (
    Approval,
    ApprovalStatus,
    AppVersion,
    DecisionMessage,
    LedgerRecord,
    Run,
    Step,
    WorkflowEntry,
)
from runs.permissions import check_can_view, is_operator, visible_runs, request_principal
from runs.versions import sync_workflow_entries
from runs.registry import get_config

# How long the approval page waits for the run to apply a decision before saying it is still pending.
DECIDE_WAIT_SECONDS = 5.0

admin.site.site_header = "sanoma: the operator's desk"
admin.site.site_title = "sanoma"
admin.site.index_title = "Runs, approvals and the ledger"


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def pretty_json(value: Any) -> str:
    if value is None:
        return "-"
    return format_html('<pre class="sanoma-json">{}</pre>', as_json(value))


def is_staff(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_staff)


me = request_principal


def run_link(run_id: str, label: str | None = None) -> str:
    url = reverse("admin:runs_run_change", args=[run_id])
    return format_html('<a href="{}">{}</a>', url, label or run_id)


def refusal(err: SanomaError) -> str:
    return f"{err.message} ({err.code})" if err.code else err.message


class ReadOnlyMixin:
    """Nothing here is added, changed or deleted through the admin: the services do that."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# ---- runs ---------------------------------------------------------------------------------------


class StepInline(ReadOnlyMixin, admin.TabularInline):
    model = Step
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("seq", "kind", "name", "attempt", "output_json", "error_json", "decision_json", "created_at")
    readonly_fields = fields
    verbose_name = "step (checkpoint)"
    verbose_name_plural = "steps (checkpoints)"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="output")
    def output_json(self, step: Step) -> str:
        return pretty_json(step.output)

    @admin.display(description="error")
    def error_json(self, step: Step) -> str:
        return pretty_json(step.error)

    @admin.display(description="decision")
    def decision_json(self, step: Step) -> str:
        return pretty_json(step.decision)


class ApprovalInline(ReadOnlyMixin, admin.TabularInline):
    model = Approval
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("approval", "title", "approver", "status", "requested_by", "op", "covers", "decided_by", "decided_at",
              "note")
    readonly_fields = fields

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="approval")
    def approval(self, approval: Approval) -> str:
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        action = "decide" if approval.status == ApprovalStatus.PENDING else "open"
        return format_html('<a href="{}">{}</a> ({})', url, approval.approval_id, action)


@admin.register(Run)
class RunAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("id", "workflow", "status", "started_by", "created_at", "pending_approvals", "error_code")
    list_filter = ("status", "workflow", "started_by")
    search_fields = ("id",)
    search_help_text = "Search by run id"
    ordering = ("-created_at", "-id")
    list_per_page = 50
    inlines = (ApprovalInline, StepInline)
    actions = ("cancel_selected",)
    fieldsets = (
        (None, {"fields": (("id", "workflow", "status"), ("started_by", "groups"), ("waiting_for", "wake_at"),
                           "app_version")}),
        ("When", {"fields": (("created_at", "updated_at", "ended_at"),)}),
        ("Input", {"fields": ("input_json",)}),
        ("Outcome", {"fields": ("result_json", "error_json")}),
        ("Lease", {"fields": ("lease_owner", "lease_until", "signal_gen"), "classes": ("collapse",)}),
    )
    readonly_fields = ("input_json", "result_json", "error_json")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Run | None = None) -> bool:
        if not is_staff(request):
            return False
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        pending = (
            Approval.objects.filter(run=OuterRef("pk"), status=ApprovalStatus.PENDING)
            .order_by().values("run").annotate(n=Count("id")).values("n")
        )
        runs = visible_runs(me(request))
        return runs.annotate(pending_count=Coalesce(Subquery(pending, output_field=IntegerField()), Value(0)))

    @admin.display(description="pending approvals", ordering="pending_count")
    def pending_approvals(self, run: Run) -> int:
        return getattr(run, "pending_count", 0)

    @admin.display(description="error")
    def error_code(self, run: Run) -> str:
        if not run.error:
            return ""
        return run.error.get("code") or run.error.get("name") or "error"

    @admin.display(description="input")
    def input_json(self, run: Run) -> str:
        return pretty_json(run.input)

    @admin.display(description="result")
    def result_json(self, run: Run) -> str:
        return pretty_json(run.result)

    @admin.display(description="error")
    def error_json(self, run: Run) -> str:
        return pretty_json(run.error)

    # -- actions

    @admin.action(description="Cancel selected runs")
    def cancel_selected(self, request: HttpRequest, queryset) -> None:
        cancelled = []
        for run in queryset:
            try:
                services.cancel(run_id=run.id, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
            else:
                cancelled.append(run.id)
        if cancelled:
            self.message_user(request, f"Cancelled {len(cancelled)} run(s): {', '.join(cancelled)}", messages.SUCCESS)

    # -- pages

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("start/", wrap(self.start_view), name="runs_run_start"),
            path("<path:object_id>/cancel/", wrap(self.cancel_view), name="runs_run_cancel"),
            *super().get_urls(),
        ]

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        extra_context = dict(extra_context or {})
        run = self.get_object(request, unquote(object_id))
        if run is not None:
            try:
                records = services.ledger_of(run_id=run.id, viewer=me(request))
            except SanomaError:
                records = []
            extra_context.update(
                ledger_rows=[timeline_row(r) for r in records],
                run_ended=run.ended,
                ledger_list_url=reverse("admin:runs_ledgerrecord_changelist") + f"?run_id={run.id}",
            )
        return super().change_view(request, object_id, form_url, extra_context)

    def cancel_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        run = self.get_object(request, unquote(object_id))
        if run is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            try:
                services.cancel(run_id=run.id, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{run.id} was not cancelled: {refusal(err)}", messages.ERROR)
            else:
                self.message_user(request, f"Cancelled {run.id}: it makes no further calls", messages.SUCCESS)
        return redirect("admin:runs_run_change", run.pk)

    def start_view(self, request: HttpRequest) -> HttpResponse:
        config = get_config()
        context: dict[str, Any] = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Start a run",
            "workflows": [
                {"name": name, "title": d.title, "app": d.app, "builtin": d.builtin,
                 "url": reverse("admin:runs_run_start") + f"?workflow={name}"}
                for name, d in sorted(config.workflows.items())
            ],
        }
        name = request.POST.get("_workflow") or request.GET.get("workflow")
        if not name:
            return TemplateResponse(request, "admin/runs/run/start.html", context)
        definition = config.workflows.get(name)
        if definition is None:
            self.message_user(request, f"No workflow {name!r}: choose one of the list", messages.ERROR)
            return redirect("admin:runs_run_start")
        form_class = schema_form(input_schema(definition))
        form = form_class(request.POST or None)
        if request.method == "POST" and form.is_valid():
            run_id = form.cleaned_data.get(RUN_ID_FIELD) or None
            existed = run_id is not None and services.get_run(run_id=run_id) is not None
            try:
                run = services.start(workflow=name, input=form.input_value(), started_by=me(request), run_id=run_id)
            except SanomaError as err:
                form.add_service_error(err)
            else:
                if existed:
                    self.message_user(request, f"Run {run.id} was already started with this input: here it is",
                                      messages.INFO)
                else:
                    self.message_user(request, f"Started {run.workflow} as run {run.id}", messages.SUCCESS)
                return redirect("admin:runs_run_change", run.pk)
        context.update(title=f"Start {name}", workflow=definition, form=form,
                       schema_json=json.dumps(input_schema(definition), indent=2))
        return TemplateResponse(request, "admin/runs/run/start.html", context)


def timeline_row(record: dict[str, Any]) -> dict[str, Any]:
    """A ledger record as one line of the run page's timeline."""
    kind = record.get("type", "")
    what = ""
    if kind == "op.called":
        what = f"{record.get('op')} ({record.get('effect')})"
    elif kind.startswith("approval."):
        parts = [record.get("approval", "")]
        for key in ("title", "approver", "by"):
            if record.get(key):
                parts.append(f"{key} {record[key]}")
        what = ", ".join(p for p in parts if p)
    elif kind == "sleep.started":
        what = f"until {record.get('until')}"
    elif kind == "run.cancelled":
        what = f"by {record.get('by')}"
    decision = record.get("decision")
    if isinstance(decision, dict):
        decision_text = str(decision.get("kind", ""))
        if decision.get("approver"):
            decision_text += f" ({decision['approver']})"
        if decision.get("reason"):
            decision_text += f": {decision['reason']}"
    else:
        decision_text = str(decision or "")
    error = record.get("error")
    error_text = ""
    if isinstance(error, dict):
        error_text = f"{error.get('code') or error.get('name', 'error')}: {error.get('message', '')}"
    group = record.get("group")
    at = record.get("at")
    when = dt.datetime.fromtimestamp(at / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] if at else ""
    return {
        "seq": record.get("seq"), "type": kind, "at": when, "what": what, "decision": decision_text,
        "error": error_text, "group": json.dumps(group) if group is not None else "",
        "body": json.dumps(record, indent=2, sort_keys=True, default=str),
    }


# ---- the start form, from the workflow's input JSON Schema ---------------------------------------

RUN_ID_FIELD = "_run_id"
EMPTY = object()


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    seen = 0
    while isinstance(schema, dict) and "$ref" in schema and seen < 20:
        ref = schema["$ref"]
        target: Any = root
        if isinstance(ref, str) and ref.startswith("#/"):
            for part in ref[2:].split("/"):
                target = target.get(part, {}) if isinstance(target, dict) else {}
        extra = {k: v for k, v in schema.items() if k != "$ref"}
        schema = {**(target if isinstance(target, dict) else {}), **extra}
        seen += 1
    return schema


def _unwrap(prop: dict[str, Any], root: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """The property's own schema (references followed) and whether it may be null."""
    prop = _resolve(prop, root)
    options = prop.get("anyOf") or prop.get("oneOf")
    if not options:
        return prop, prop.get("type") == "null"
    non_null = [o for o in options if _resolve(o, root).get("type") != "null"]
    nullable = len(non_null) < len(options)
    if len(non_null) == 1:
        inner = _resolve(non_null[0], root)
        meta = {k: v for k, v in prop.items() if k not in ("anyOf", "oneOf")}
        return {**inner, **meta}, nullable
    return prop, nullable


class JSONTextField(forms.CharField):
    """Anything nested: typed as JSON."""

    widget = forms.Textarea(attrs={"rows": 4, "cols": 60, "class": "vLargeTextField sanoma-json-input"})

    def to_python(self, value: Any) -> Any:
        text = super().to_python(value)
        if text in self.empty_values:
            return EMPTY
        try:
            return json.loads(text)
        except ValueError as err:
            raise forms.ValidationError(f"Not valid JSON: {err}", code="invalid_json") from None

    def validate(self, value: Any) -> None:
        if value is EMPTY and self.required:
            raise forms.ValidationError(self.error_messages["required"], code="required")


def _field_for(name: str, prop: dict[str, Any], required: bool, nullable: bool) -> tuple[forms.Field, str]:
    """A form field for one property, and how to read its value back ('enum', 'datetime', ...)."""
    label = prop.get("title") or name
    help_text = prop.get("description", "")
    default = prop.get("default", EMPTY)
    initial = None if default is EMPTY else default
    common = {"label": label, "help_text": help_text, "required": required and not nullable}
    kind = prop.get("type")
    if "enum" in prop:
        choices = [(json.dumps(v), str(v)) for v in prop["enum"]]
        if not common["required"] and default is EMPTY:
            choices = [("", "---------"), *choices]
        chosen = None if initial is None else json.dumps(initial)
        return forms.ChoiceField(choices=choices, initial=chosen, **common), "enum"
    if kind == "string" and prop.get("format") == "date-time":
        widget = forms.DateTimeInput(attrs={"type": "datetime-local", "step": "1"}, format="%Y-%m-%dT%H:%M:%S")
        formats = ["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        return forms.DateTimeField(widget=widget, input_formats=formats, initial=initial, **common), "datetime"
    if kind == "string" and prop.get("format") == "date":
        widget = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        return forms.DateField(widget=widget, initial=initial, **common), "date"
    if kind == "string":
        return forms.CharField(initial=initial, widget=forms.TextInput(attrs={"class": "vTextField"}), **common), "text"
    if kind == "integer":
        return forms.IntegerField(initial=initial, **common), "number"
    if kind == "number":
        return forms.FloatField(initial=initial, widget=forms.NumberInput(attrs={"step": "any"}), **common), "number"
    if kind == "boolean":
        if nullable or (not required and default is EMPTY):
            return forms.NullBooleanField(initial=initial, label=label, help_text=help_text), "nullbool"
        return forms.BooleanField(initial=bool(initial), required=False, label=label, help_text=help_text), "bool"
    text_initial = None if default is EMPTY else json.dumps(default, indent=2)
    return JSONTextField(initial=text_initial, **{**common, "help_text": help_text or "JSON"}), "json"


class SchemaForm(forms.Form):
    """Built by `schema_form`: one field per input property, then the optional run id."""

    readers: dict[str, tuple[str, bool, bool]] = {}

    def input_value(self) -> Any:
        """The input to send: empty optional fields are left out so their defaults apply."""
        data = self.cleaned_data
        if "__input__" in self.readers:
            value = data.get("__input__")
            return {} if value is EMPTY else value
        out: dict[str, Any] = {}
        for name, (kind, required, nullable) in self.readers.items():
            value = data.get(name)
            if kind == "bool":
                out[name] = bool(value)
                continue
            if value is None or value is EMPTY or value == "":
                if required and nullable:
                    out[name] = None
                continue
            if kind == "enum":
                out[name] = json.loads(value)
            elif kind in ("datetime", "date"):
                out[name] = value.isoformat()
            else:
                out[name] = value
        return out

    def add_service_error(self, err: SanomaError) -> None:
        """A refusal from `services.start`, its issues shown on the fields they name."""
        issues = err.data.get("issues") if isinstance(err, InvalidInput) or err.code == "invalid_input" else None
        if not issues:
            self.add_error(None, refusal(err))
            return
        loose = []
        for issue in issues:
            where = list(issue.get("path") or [])
            message = issue.get("message", "invalid")
            head = where[0] if where else None
            if head == "runId" and RUN_ID_FIELD in self.fields:
                self.add_error(RUN_ID_FIELD, message)
            elif head in self.fields and head != "__input__":
                rest = ".".join(str(p) for p in where[1:])
                self.add_error(head, f"{rest}: {message}" if rest else message)
            else:
                loose.append(issue)
        if loose:
            target = "__input__" if "__input__" in self.fields else None
            self.add_error(target, describe_issues(loose))


def schema_form(schema: dict[str, Any]) -> type[SchemaForm]:
    fields: dict[str, forms.Field] = {}
    readers: dict[str, tuple[str, bool, bool]] = {}
    properties = schema.get("properties") if schema.get("type", "object") == "object" else None
    if isinstance(properties, dict):
        required = set(schema.get("required") or ())
        for name, raw in properties.items():
            prop, nullable = _unwrap(raw if isinstance(raw, dict) else {}, schema)
            field, kind = _field_for(name, prop, name in required, nullable)
            fields[name] = field
            readers[name] = (kind, name in required, nullable)
    else:
        fields["__input__"] = JSONTextField(label="Input", required=False, help_text="The whole input, as JSON")
        readers["__input__"] = ("json", False, False)
    fields[RUN_ID_FIELD] = forms.CharField(
        label="Run id", required=False, max_length=200, widget=forms.TextInput(attrs={"class": "vTextField"}),
        help_text="Optional. Starting again with the same id, workflow and input returns the same run.",
    )
    return type("WorkflowInputForm", (SchemaForm,), {**fields, "readers": readers})


# ---- approvals: the inbox ------------------------------------------------------------------------


class ApprovalStatusFilter(admin.SimpleListFilter):
    """Pending by default: the inbox. `All` shows what was decided too."""

    title = "status"
    parameter_name = "status"

    def lookups(self, request: HttpRequest, model_admin: Any):
        return [(s.value, s.label) for s in ApprovalStatus] + [("all", "All")]

    def value(self) -> str:
        return super().value() or ApprovalStatus.PENDING

    def choices(self, changelist: Any):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request: HttpRequest, queryset):
        value = self.value()
        return queryset if value == "all" else queryset.filter(status=value)


class DecisionForm(forms.Form):
    note = forms.CharField(required=False, strip=True, widget=forms.Textarea(attrs={"rows": 3, "cols": 60}),
                           help_text="Recorded with the decision, in the ledger.")


@admin.register(Approval)
class ApprovalAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("title_link", "run_column", "workflow", "lets_through", "approver", "status", "requested_at")
    list_display_links = None
    list_filter = (ApprovalStatusFilter,)
    list_select_related = ("run",)
    ordering = ("-requested_at", "-id")
    search_fields = ("title", "run__id")
    search_help_text = "Search by title or run id"
    actions = None

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Approval | None = None) -> bool:
        if not is_staff(request):
            return False
        return obj is None or check_can_view(me(request), obj.run, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        """The inbox: what this user may decide (operators: everything)."""
        return approvals.visible_approvals(principal=me(request)).order_by("-requested_at", "-id")

    def get_object(self, request: HttpRequest, object_id: str, from_field: Any = None) -> Approval | None:
        """An approval's page is open to whoever may see its run: its approvers, starter, operators."""
        runs = visible_runs(me(request)).values("pk")
        try:
            return Approval.objects.select_related("run").filter(run__in=runs).get(pk=int(object_id))
        except (Approval.DoesNotExist, ValueError, TypeError):
            return None

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        extra_context = {"title": "Approvals inbox", **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    @admin.display(description="approval", ordering="title")
    def title_link(self, approval: Approval) -> str:
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        return format_html('<a href="{}">{}</a>', url, approval.title)

    @admin.display(description="run")
    def run_column(self, approval: Approval) -> str:
        return format_html("{} ({})", run_link(approval.run_id), approval.approval_id)

    @admin.display(description="workflow")
    def workflow(self, approval: Approval) -> str:
        return approval.run.workflow

    @admin.display(description="lets through")
    def lets_through(self, approval: Approval) -> str:
        parts = []
        if approval.op:
            parts.append(format_html("<code>{}</code> {}", approval.op,
                                     json.dumps(approval.op_input, sort_keys=True, default=str)))
        covers = [c for c in approval.covers if c != approval.op]
        if covers:
            parts.append(format_html("covers {}", format_html_join(", ", "<code>{}</code>", ((c,) for c in covers))))
        if not parts:
            return "nothing further (a workflow approval)"
        return format_html_join(format_html("<br>"), "{}", ((p,) for p in parts))

    def change_view(self, request: HttpRequest, object_id: str, form_url: str = "", extra_context: Any = None):
        approval = self.get_object(request, unquote(object_id))
        if approval is None:
            return self._get_obj_does_not_exist_redirect(request, self.opts, object_id)
        if request.method == "POST":
            return self._act(request, approval)
        principal = me(request)
        why_not = None
        if approval.status == ApprovalStatus.PENDING:
            try:
                approvals.check_decide(run_id=approval.run_id, approval_id=approval.approval_id,
                                       decision="approve", by=principal)
            except SanomaError as err:
                why_not = refusal(err)
        may_withdraw = approval.status == ApprovalStatus.PENDING and not approval.run.ended and (
            approval.run.started_by == principal.id or principal.has_global("runs.operate_runs")
        )
        queued = list(DecisionMessage.objects.filter(approval=approval, applied=False).order_by("id"))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": approval.title,
            "subtitle": f"{approval.approval_id} of run {approval.run_id}",
            "original": approval,
            "approval": approval,
            "state": approvals.approval_state(approval),
            "state_json": as_json(approvals.approval_state(approval)),
            "op_input_json": as_json(approval.op_input) if approval.op else "",
            "details_json": as_json(approval.details) if approval.details is not None else "",
            "links": [{"href": str(link), "web": str(link).startswith(("https://", "http://"))} for link in approval.links],
            "run_url": reverse("admin:runs_run_change", args=[approval.run_id]),
            "inbox_url": reverse("admin:runs_approval_changelist"),
            "form": DecisionForm(),
            "may_decide": approval.status == ApprovalStatus.PENDING and why_not is None,
            "why_not": why_not,
            "may_withdraw": may_withdraw,
            "queued": queued,
            "is_operator": is_operator(principal),
        }
        return TemplateResponse(request, "admin/runs/approval/decide.html", context)

    def _act(self, request: HttpRequest, approval: Approval) -> HttpResponse:
        form = DecisionForm(request.POST)
        note = form.cleaned_data.get("note", "") if form.is_valid() else ""
        where = f"{approval.approval_id} of run {approval.run_id}"
        try:
            if "_withdraw" in request.POST:
                approvals.withdraw(run_id=approval.run_id, approval_id=approval.approval_id, by=me(request),
                                   reason=note)
                self.message_user(request, f"Withdrew {where}: the run will stop waiting for it", messages.SUCCESS)
            elif "_approve" in request.POST or "_reject" in request.POST:
                decision = "approve" if "_approve" in request.POST else "reject"
                state = approvals.decide(run_id=approval.run_id, approval_id=approval.approval_id, decision=decision,
                                         note=note, by=me(request), timeout=DECIDE_WAIT_SECONDS)
                if state["status"] == ApprovalStatus.PENDING:
                    self.message_user(
                        request,
                        f"Your decision ({decision}) on {where} was sent, still pending "
                        "(the run will apply it when a worker runs)",
                        messages.WARNING,
                    )
                else:
                    self.message_user(request, f"Decided: {where} is {state['status']} by {state.get('decided_by')}",
                                      messages.SUCCESS)
            else:
                self.message_user(request, "Choose Approve, Reject or Withdraw", messages.ERROR)
        except SanomaError as err:
            self.message_user(request, f"Not done: {refusal(err)}", messages.ERROR)
        return HttpResponseRedirect(request.path)


# ---- the ledger ---------------------------------------------------------------------------------


@admin.register(LedgerRecord)
class LedgerRecordAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Append-only: nobody adds, changes or deletes a record here, superusers included."""

    list_display = ("record_id", "run", "seq", "kind", "actor", "workflow", "when", "group")
    list_filter = ("kind",)
    search_fields = ("=run_id", "record_id")
    search_help_text = "Search by run id (exact) or record id"
    ordering = ("-at", "-id")
    list_per_page = 100
    actions = None
    fields = ("record_id", "run", "seq", "kind", "v", "app", "actor", "workflow", "when", "group", "body_json")
    readonly_fields = ("run", "when", "body_json")

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: LedgerRecord | None = None) -> bool:
        if not is_staff(request):
            return False
        if obj is None:
            return True
        run = Run.objects.filter(pk=obj.run_id).first()
        return run is not None and check_can_view(me(request), run, raise_error=False)

    def get_queryset(self, request: HttpRequest):
        principal = me(request)
        records = LedgerRecord.objects.all()
        if is_operator(principal):
            return records
        return records.filter(run_id__in=visible_runs(principal).values("pk"))

    @admin.display(description="run", ordering="run_id")
    def run(self, record: LedgerRecord) -> str:
        return run_link(record.run_id)

    @admin.display(description="at (UTC)", ordering="at")
    def when(self, record: LedgerRecord) -> str:
        return dt.datetime.fromtimestamp(record.at / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]

    @admin.display(description="record")
    def body_json(self, record: LedgerRecord) -> str:
        return pretty_json(record.as_dict())


# ---- versions and start permissions --------------------------------------------------------------


@admin.register(AppVersion)
class AppVersionAdmin(ReadOnlyMixin, admin.ModelAdmin):
    list_display = ("version", "first_started_at", "promoted_at", "current")
    ordering = ("-promoted_at",)
    actions = None

    @admin.display(boolean=True, description="this site's version")
    def current(self, version: AppVersion) -> bool:
        return version.version == get_config().version


@admin.register(WorkflowEntry)
class WorkflowEntryAdmin(GuardedModelAdmin):
    """One row per workflow of the config: its "Object permissions" page grants who may start it."""

    list_display = ("name", "config_title", "app", "in_config")
    search_fields = ("name",)
    readonly_fields = ("name", "title", "app")
    fields = ("name", "title", "app")
    actions = None

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def changelist_view(self, request: HttpRequest, extra_context: Any = None):
        sync_workflow_entries(get_config())  # every workflow of the config has a row to grant on
        return super().changelist_view(request, extra_context)

    @admin.display(description="title")
    def config_title(self, entry: WorkflowEntry) -> str:
        definition = get_config().workflows.get(entry.name)
        return (definition.title if definition else entry.title) or ""

    @admin.display(boolean=True, description="in the config")
    def in_config(self, entry: WorkflowEntry) -> bool:
        return entry.name in get_config().workflows

