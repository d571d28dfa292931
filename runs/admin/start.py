"""Starting a run: a form built from the workflow's input JSON Schema, and the page that shows it."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import quote
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import reverse

from connectors.errors import InvalidInput, IssueCode, SanomaError, describe_issues
from runs import services
from runs.admin.base import me, refusal
from runs.approvals.permissions import check_can_start, principal_of
from runs.config.registry import get_config
from runs.config.resolution import input_schema
from runs.validation import RUN_ID_RULE, is_valid_run_id, parse_json

if TYPE_CHECKING:
    from runs.models import Run

    _RunAdminBase = admin.ModelAdmin[Run]  # what StartRunMixin is mixed into: admin_site, opts, message_user
else:
    _RunAdminBase = object

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
        if text is None or text in self.empty_values:
            return EMPTY
        try:
            return parse_json(text, what="The value")
        except InvalidInput as err:
            raise forms.ValidationError(f"Not valid JSON: {err.message}", code=IssueCode.INVALID_JSON) from None

    def validate(self, value: Any) -> None:
        if value is EMPTY and self.required:
            raise forms.ValidationError(self.error_messages["required"], code=IssueCode.REQUIRED)


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
        date_widget = forms.DateInput(attrs={"type": "date"}, format="%Y-%m-%d")
        return forms.DateField(widget=date_widget, initial=initial, **common), "date"
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

    def add_service_error(self, err: SanomaError, *, beside: bool = False) -> None:
        """A refusal from `services.start`, its issues shown on the fields they name. `beside`: the
        form has errors of its own, and the issues of the fields it already refused are left out
        (the form's own word on them stands, and a field it could not read is "missing" to the service)."""
        issues = err.data.get("issues") if isinstance(err, InvalidInput) or err.code == "invalid_input" else None
        if not issues:
            self.add_error(None, refusal(err))
            return
        loose = []
        for issue in issues:
            where = list(issue.get("path") or [])
            message = issue.get("message", "invalid")
            head = where[0] if where else None
            if beside and (head in self.errors or head not in self.fields):
                continue
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


def _run_id_rule(value: str) -> None:
    if value and not is_valid_run_id(value):
        raise forms.ValidationError(RUN_ID_RULE, code=IssueCode.INVALID_RUN_ID)


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
        label="Run id", required=False, strip=False, widget=forms.TextInput(attrs={"class": "vTextField"}),
        validators=[_run_id_rule],
        help_text="Optional: 1-200 characters, letters, digits, - _ . : @ ~. Starting again with the same id, "
                  "workflow and input returns the same run.",
    )
    return type("WorkflowInputForm", (SchemaForm,), {**fields, "readers": readers})


# ---- the page: choose a workflow, fill in its form, start ----------------------------------------


class StartRunMixin(_RunAdminBase):
    """The run admin's "Start a run" page (`admin:runs_run_start`): its URL is in `RunAdmin.get_urls`."""

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
        if request.method == "POST" and not form.is_valid() and "__input__" not in form.fields:
            # Every field's error at once: what the form could read is checked as the start would.
            try:
                services.check_input(config=config, workflow=name, input=form.input_value())
            except SanomaError as err:
                form.add_service_error(err, beside=True)
        elif request.method == "POST" and form.is_valid():
            run_id = form.cleaned_data.get(RUN_ID_FIELD) or None
            try:
                run, created = services.start_or_get(workflow=name, input=form.input_value(), started_by=me(request),
                                                     run_id=run_id)
            except SanomaError as err:
                form.add_service_error(err)
            else:
                if not created:
                    self.message_user(request, f"Run {run.id} was already started with this input: here it is",
                                      messages.INFO)
                else:
                    self.message_user(request, f"Started {run.workflow} as run {run.id}", messages.SUCCESS)
                return redirect("admin:runs_run_change", quote(run.pk))
        # Who may not start it reads the form without a Start button, and is told why up front.
        principal = principal_of(me(request))
        try:
            check_can_start(principal, name)
            why_not = ""
        except SanomaError as err:
            why_not = f"{principal.id} may not start {name} ({err.code}): you may read its input here."
        context.update(title=f"Start {name}", workflow=definition, form=form, why_not=why_not,
                       schema_json=json.dumps(input_schema(definition), indent=2))
        return TemplateResponse(request, "admin/runs/run/start.html", context)
