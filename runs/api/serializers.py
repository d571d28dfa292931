"""What the API reads (input serializers: the body and query string checked before a service is
called) and what it answers (output serializers: the shapes the OpenAPI schema documents)."""
from __future__ import annotations

import dataclasses
import math
from datetime import datetime
from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from connectors.errors import IssueCode
from runs.approvals.selectors import pending_counts
from runs.config.resolution import input_schema
from runs.config.workflows import WorkflowDefinition
from runs.models import Decision, Run, RunStatus
from runs.sandbox.selectors import sandbox_data, sandbox_of
from runs.selectors import WAITING_FOR, children_of, waiting_on
from runs.validation import RUN_ID_RULE, is_valid_run_id

# ---- input --------------------------------------------------------------------------------------


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class StrictCharField(serializers.CharField):
    """Text, and only text: DRF's CharField would take the number 1001 as "1001" (and a boolean as an
    error message nobody understands); here anything but a JSON string is refused, saying what it was."""

    default_error_messages = {"not_text": "must be text (a JSON string), not {kind}"}

    def to_internal_value(self, data: Any) -> str:
        if not isinstance(data, str):
            self.fail("not_text", kind=_json_kind(data))
        return str(super().to_internal_value(data))


class NamedChoiceField(serializers.ChoiceField):
    """One of a few values, and a refusal that names them (DRF's says only "not a valid choice")."""

    default_error_messages = {"invalid_choice": '"{input}" is not one of: {choices}'}

    def to_internal_value(self, data: Any) -> Any:
        if data == "" and self.allow_blank:
            return ""
        try:
            return self.choice_strings_to_values[str(data)]
        except KeyError:
            self.fail("invalid_choice", input=data, choices=", ".join(self.choice_strings_to_values))


class StrictSerializer(serializers.Serializer):
    """Refuses fields it does not know, so a typo (`inputs`) is an error rather than a silent default;
    the unknown fields are named along with any other field's error, in one answer. Every input of
    the API goes through one (`SanomaAPIView.checked` takes no other), with StrictCharField for text."""

    # Names the serializer leaves to someone else (a paginator's `limit` and `offset`).
    also_known: tuple[str, ...] = ()

    def unknown_message(self, known: list[str]) -> str:
        return f"unknown field; send {', '.join(known)}"

    def to_internal_value(self, data: Any) -> Any:
        initial = data if isinstance(data, dict) else {}
        known = [*self.fields, *self.also_known]
        unknown = sorted(set(initial) - set(known))
        try:
            value = super().to_internal_value(data)
        except serializers.ValidationError as exc:
            if not unknown or not isinstance(exc.detail, dict):
                raise
            errors = dict(exc.detail)
        else:
            if not unknown:
                return value
            errors = {}
        message = self.unknown_message(known)
        errors.update({name: [serializers.ErrorDetail(message, code=IssueCode.UNKNOWN_FIELD)] for name in unknown})
        raise serializers.ValidationError(errors)


class StartRunInput(StrictSerializer):
    workflow = StrictCharField(help_text="The workflow's name, e.g. `refund`.")
    input = serializers.JSONField(required=False, default=dict, help_text="The workflow's input (see its JSON Schema).")
    run_id = StrictCharField(
        required=False, allow_null=True, allow_blank=True, trim_whitespace=False,
        help_text="A caller-given id makes the start idempotent: the same workflow, input and starter "
                  "return the same run. 1-200 characters: letters, digits, `-`, `_`, `.`, `:` and `@`.",
    )

    def validate_run_id(self, value: Any) -> Any:
        if value is not None and not is_valid_run_id(value):
            raise serializers.ValidationError(RUN_ID_RULE, code=IssueCode.INVALID_RUN_ID)
        return value


class DecisionInput(StrictSerializer):
    decision = NamedChoiceField(choices=Decision.values)
    note = StrictCharField(required=False, allow_blank=True, default="", trim_whitespace=False)
    id = StrictCharField(required=False, allow_null=True, max_length=200,
                               help_text="The message id: resending one id decides once.")


class MessageInput(StrictSerializer):
    topic = StrictCharField(max_length=200, trim_whitespace=False,
                                  help_text="The topic the run waits on with `ctx.wait_message(topic)`.")
    payload = serializers.JSONField(help_text="The message: a JSON object, returned by `ctx.wait_message`.")
    id = StrictCharField(required=False, allow_null=True, max_length=200, trim_whitespace=False,
                               help_text="The message id: resending one id sends once.")


class MessageSerializer(serializers.Serializer):
    id = serializers.CharField(source="message_id")
    run_id = serializers.CharField()
    topic = serializers.CharField()
    payload = serializers.JSONField()
    sent_by = serializers.CharField()
    sent_at = serializers.DateTimeField()
    read = serializers.SerializerMethodField(help_text="Whether the run has read it.")

    def get_read(self, message: Any) -> bool:
        return message.read_seq is not None


class WithdrawInput(StrictSerializer):
    reason = StrictCharField(required=False, allow_blank=True, default="")


class RunListQuery(StrictSerializer):
    """The runs list's filters (`limit` and `offset` are the paginator's). Every one given must match."""

    status = NamedChoiceField(choices=RunStatus.values, required=False)
    workflow = StrictCharField(required=False, max_length=200)
    started_by = StrictCharField(required=False, max_length=150, help_text="who started it (a username)")
    error_code = StrictCharField(required=False, max_length=100, help_text="runs that failed with this code")
    tag = serializers.ListField(child=StrictCharField(max_length=500), required=False,
                                help_text="key=value (ctx.tag); repeat the parameter to narrow")
    since = StrictCharField(required=False, help_text="started at or after (ISO 8601 date or date-time)")
    until = StrictCharField(required=False, help_text="started before (ISO 8601 date or date-time)")
    waiting_for = NamedChoiceField(choices=WAITING_FOR, required=False, help_text=(
        "what the run waits for: approval, message, sleep, run (a child run), in_doubt (an operator's word on a "
        "call), paused (the unpause of what holds it), retry (the next try of a failed call), limit (its turn under a "
        "connector's or an operation's rate or concurrency limit)"))
    sandbox = serializers.BooleanField(required=False, allow_null=True, default=None, help_text=(
        "true: only sandbox runs (on fakes, seeded from a scenario); false: none of them. Both kinds by default"))

    def validate_since(self, value: str) -> str:
        return _iso_moment("since", value)

    def validate_until(self, value: str) -> str:
        return _iso_moment("until", value)

    also_known = ("limit", "offset")

    def unknown_message(self, known: list[str]) -> str:
        return f"unknown parameter; the runs list takes {', '.join(sorted(known))}"


def _iso_moment(name: str, value: str) -> str:
    try:
        datetime.fromisoformat(value)
    except ValueError:
        raise serializers.ValidationError(
            f"{name} must be an ISO 8601 date or date-time (e.g. 2026-12-01 or 2026-12-01T09:00+02:00)",
            code=IssueCode.INVALID) from None
    return value


class RunFilterInput(StrictSerializer):
    """Which runs a bulk rerun or cancel acts on; `expect` is the count the caller was shown."""

    workflow = StrictCharField(required=False)
    status = NamedChoiceField(choices=RunStatus.choices, required=False)
    error_code = StrictCharField(required=False)
    tag = serializers.ListField(child=StrictCharField(), required=False)
    since = StrictCharField(required=False)
    until = StrictCharField(required=False)
    expect = serializers.IntegerField(required=False, min_value=0, help_text=(
        "The count you confirm. Without it nothing is done: the answer says how many runs match."))
    reason = StrictCharField(required=False, max_length=2000, allow_blank=True, trim_whitespace=False, help_text=(
        "A bulk cancel's why (required with `expect`): kept in each cancelled run's `run.cancelled` record."))


class ResolveInput(StrictSerializer):
    happened = serializers.BooleanField(help_text="Whether the call in doubt took effect at the vendor.")
    output = serializers.JSONField(required=False, allow_null=True,
                                   help_text="The vendor's reply, when it happened (checked by the output schema).")
    note = StrictCharField(required=False, allow_blank=True, default="")


class CancelInput(StrictSerializer):
    reason = StrictCharField(max_length=2000, allow_blank=True, trim_whitespace=False,
                                   help_text="Why (non-blank): kept in the run's `run.cancelled` record.")


class ForkInput(StrictSerializer):
    from_step = serializers.IntegerField(min_value=1, help_text="The step to go on live from.")
    dry_run = serializers.BooleanField(required=False, default=False, help_text=(
        "true: only answer what the fork would do (the steps it reuses and those it makes live, with their "
        "effects), writing nothing."))


class RerunInput(StrictSerializer):
    dry_run = serializers.BooleanField(required=False, default=False, help_text=(
        "true: only answer what the rerun would do (every step made live again, with its effect), writing "
        "nothing."))


class PlannedStepSerializer(serializers.Serializer):
    seq = serializers.IntegerField()
    kind = serializers.CharField(help_text="call, approval, sleep, wait, message, run_wait, run_end, tag or now.")
    name = serializers.CharField(help_text="The operation, the approval's title, the topic, the child run, ...")
    effect = serializers.CharField(allow_null=True, help_text=(
        "A call's effect: read, write, publish, send, money or access; null for the rest."))
    outcome = serializers.CharField(help_text="What the source run's step came to: ok, an error code, denied, or "
                                              "an approval's status.")
    what = serializers.CharField(help_text="What the new run does with it: again (live), or what it reuses.")


class RecoveryPlanSerializer(serializers.Serializer):
    run_id = serializers.CharField(help_text="The source run.")
    act = NamedChoiceField(choices=["rerun", "fork"])
    from_step = serializers.IntegerField(allow_null=True, help_text="A fork's step; null for a rerun.")
    workflow = serializers.CharField()
    status = serializers.CharField(help_text="The source run's status.")
    reused = PlannedStepSerializer(many=True, help_text="The steps taken from the source: not done again.")
    live = PlannedStepSerializer(many=True, help_text="The source's steps the new run makes live: done again.")
    effects = serializers.ListField(child=serializers.CharField(), help_text=(
        "The side effects the live steps had (money, send, publish, write, access), each once."))


class PauseInput(StrictSerializer):
    kind = NamedChoiceField(choices=["connector", "operation", "workflow"])
    target = StrictCharField(help_text="A vendor, an operation id or a workflow name.")
    reason = StrictCharField()


class UnpauseInput(StrictSerializer):
    reason = StrictCharField(required=False, allow_blank=True, default="")


class PauseSerializer(serializers.Serializer):
    kind = serializers.CharField()
    target = serializers.CharField()
    reason = serializers.CharField()
    paused_by = serializers.CharField()
    paused_at = serializers.DateTimeField()
    unpaused_by = serializers.CharField()
    unpaused_at = serializers.DateTimeField(allow_null=True)
    active = serializers.BooleanField()
    held_runs = serializers.ListField(child=serializers.CharField(), read_only=True,
                                      help_text="The runs it holds now (none once lifted).")


class BulkResultSerializer(serializers.Serializer):
    matched = serializers.IntegerField()
    done = serializers.ListField(child=serializers.CharField(), help_text="The new runs, or the cancelled runs.")
    refused = serializers.ListField(child=serializers.DictField(), help_text="{run_id, why} for each not done.")
    acted = serializers.BooleanField(help_text="false: only counted (no expect given)")


class ResultQuery(StrictSerializer):
    timeout = serializers.FloatField(required=False, default=0.0, min_value=0.0, max_value=60.0,
                                     help_text="Seconds to wait for the run to end (0 to 60; default 0).")

    def validate_timeout(self, value: float) -> float:
        if not math.isfinite(value):
            raise serializers.ValidationError("must be a number from 0 to 60", code=IssueCode.INVALID)
        return value


# ---- output -------------------------------------------------------------------------------------


class SandboxCheckSerializer(serializers.Serializer):
    step = serializers.CharField(help_text="the scenario's Then step, as written")
    line = serializers.IntegerField(help_text="its line in the feature file")
    ok = serializers.BooleanField()
    detail = serializers.CharField(help_text="why it failed (empty when it passed)")


class SandboxSerializer(serializers.Serializer):
    scenario = serializers.CharField(help_text="the scenario the run was seeded from")
    file = serializers.CharField(help_text="its feature file, from the config root")
    checks = SandboxCheckSerializer(many=True, allow_null=True, help_text="null until the run ends")
    passed = serializers.IntegerField(allow_null=True)
    failed = serializers.IntegerField(allow_null=True)


class RunSerializer(serializers.ModelSerializer):
    run_id = serializers.CharField(source="id")
    pending_approvals = serializers.SerializerMethodField()
    sandbox = serializers.SerializerMethodField(help_text=(
        "null for a run on real drivers; for a sandbox run (on fakes, seeded from a scenario): its `scenario`, "
        "`file`, and its `checks` once it has ended (`[{step, line, ok, detail}]`, null before) with `passed` "
        "and `failed`"))
    parent_run = serializers.CharField(source="parent_id", allow_null=True,
                                   help_text="The run that started this one with ctx.start_run, if any.")

    class Meta:
        model = Run
        fields = [
            "run_id", "workflow", "status", "started_by", "groups", "app_version", "input", "result", "error",
            "waiting_for", "wake_at", "created_at", "updated_at", "ended_at", "pending_approvals", "parent_run",
            "sandbox",
        ]
        read_only_fields = fields

    @extend_schema_field(SandboxSerializer(allow_null=True))
    def get_sandbox(self, run: Run) -> dict[str, Any] | None:
        rows = self.context.get("sandboxes")
        return sandbox_data(rows.get(run.id) if rows is not None else sandbox_of(run))

    @extend_schema_field(OpenApiTypes.INT)
    def get_pending_approvals(self, run: Run) -> int:
        counts = self.context.get("pending_counts")
        if counts is not None:
            return int(counts.get(run.id, 0))
        return pending_counts([run.id]).get(run.id, 0)


class ChildRunSerializer(serializers.Serializer):
    id = serializers.CharField()
    workflow = serializers.CharField()
    status = serializers.CharField()


class RunInFullSerializer(RunSerializer):
    """One run in full: what it waits for, in detail, and the runs it started."""

    waiting = serializers.SerializerMethodField(
        help_text="kind (message, run, approval, sleep), until, and the topic, the child's run_id or the approvals")
    children = serializers.SerializerMethodField()

    class Meta(RunSerializer.Meta):
        fields = [*RunSerializer.Meta.fields, "waiting", "children"]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_waiting(self, run: Run) -> dict[str, Any] | None:
        return waiting_on(run)

    @extend_schema_field(ChildRunSerializer(many=True))
    def get_children(self, run: Run) -> list[dict[str, Any]]:
        return children_of(run)


class ApprovalSerializer(serializers.Serializer):
    """An approval as the run publishes it (`runs.approvals.services.approval_state`)."""

    id = serializers.CharField()
    run_id = serializers.CharField()
    title = serializers.CharField()
    approver = serializers.CharField(help_text="A username, or `group:<name>`.")
    requested_by = NamedChoiceField(choices=["workflow", "policy"])
    covers = serializers.ListField(child=serializers.CharField(), help_text="The operations it lets through.")
    rules = serializers.ListField(child=serializers.CharField(), help_text=(
        "The policy rules it was asked for and lifts (a Cedar `@approve` forbid's `@id`, a Python policy's "
        "name); empty for a workflow's own approval, which lifts every hold for its approver."))
    links = serializers.JSONField()
    status = serializers.CharField(help_text="pending, approved, rejected or withdrawn")
    requested_at = serializers.CharField()
    refused = serializers.JSONField()
    details = serializers.JSONField(required=False)
    op = serializers.CharField(required=False, help_text="For a policy hold: the held operation.")
    input = serializers.JSONField(required=False, help_text="For a policy hold: the held call's input.")
    op_seq = serializers.IntegerField(required=False, allow_null=True)
    decided_by = serializers.CharField(required=False)
    decided_at = serializers.CharField(required=False, allow_null=True)
    note = serializers.CharField(required=False)
    decided_with = serializers.CharField(required=False)


class RunSummarySerializer(serializers.Serializer):
    run_id = serializers.CharField(source="id")
    workflow = serializers.CharField()
    status = serializers.CharField()
    started_by = serializers.CharField()


class MoneySerializer(serializers.Serializer):
    cents = serializers.IntegerField(help_text="The amount in minor units (cents).")
    currency = serializers.CharField(allow_null=True, help_text="An ISO 4217 code, when the operation knows it.")
    shown = serializers.CharField(help_text="As people read it: `1,234.56 EUR`.")


class InboxItemSerializer(ApprovalSerializer):
    """An inbox row: the approval, what the held call does in its operation's words, and its run."""

    summary = serializers.CharField(
        allow_blank=True, help_text="What the held call does, from its operation's `summary` "
                                    "(\"Refund 1,234.56 EUR on order 1001\"); empty when it declares none.")
    amount = MoneySerializer(allow_null=True, help_text="The money the held call moves, when its operation "
                                                        "declares which input field holds it.")
    started_by = serializers.CharField(help_text="Who started the run.")
    workflow = serializers.CharField()
    run = RunSummarySerializer()
    sandbox = serializers.BooleanField(default=False, help_text=(
        "true when a sandbox run asks it (its calls go to fakes, never a real vendor); decided like any other"))


class LedgerRecordSerializer(serializers.Serializer):
    """A ledger record: the common fields below, plus those of its type (`op`, `decision`, `output`, ...)."""

    v = serializers.IntegerField()
    app = serializers.CharField()
    id = serializers.CharField()
    run_id = serializers.CharField()
    seq = serializers.IntegerField()
    at = serializers.IntegerField(help_text="Epoch milliseconds.")
    actor = serializers.CharField()
    workflow = serializers.CharField()
    type = serializers.CharField()
    group = serializers.JSONField(required=False)

    def to_representation(self, instance: Any) -> dict[str, Any]:
        return dict(instance)  # every field of its type, not only the common ones


class RunDetailSerializer(serializers.Serializer):
    run = RunInFullSerializer()
    approvals = ApprovalSerializer(many=True)
    ledger = LedgerRecordSerializer(many=True)


class RunResultSerializer(serializers.Serializer):
    run_id = serializers.CharField()
    status = serializers.CharField()
    output = serializers.JSONField(allow_null=True)


class DecisionResultSerializer(ApprovalSerializer):
    pass


class WorkflowSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    app = serializers.CharField(allow_null=True)
    builtin = serializers.BooleanField()
    trigger = serializers.SerializerMethodField(help_text='"manual", or `{"schedule": cron, "timezone": tz}`.')
    input = serializers.SerializerMethodField(help_text="The input's JSON Schema.")
    ops = serializers.ListField(child=serializers.CharField())
    builtins = serializers.ListField(child=serializers.CharField())
    approval_sla_seconds = serializers.SerializerMethodField(
        help_text="How long one of its approvals may stay pending before it is overdue; null: no limit.")
    keep_seconds = serializers.SerializerMethodField(
        help_text="How long its ended runs are kept before retention removes them; null: the site's default.")

    def get_approval_sla_seconds(self, definition: WorkflowDefinition) -> int | None:
        return None if definition.approval_sla is None else int(definition.approval_sla.total_seconds())

    def get_keep_seconds(self, definition: WorkflowDefinition) -> int | None:
        return None if definition.keep is None else int(definition.keep.total_seconds())

    @extend_schema_field(OpenApiTypes.ANY)
    def get_trigger(self, definition: WorkflowDefinition) -> Any:
        trigger = definition.trigger
        if isinstance(trigger, str):
            return trigger
        if dataclasses.is_dataclass(trigger):
            fields = dataclasses.asdict(trigger)
            if "cron" in fields:
                fields["schedule"] = fields.pop("cron")
            return fields
        return str(trigger)

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_input(self, definition: WorkflowDefinition) -> dict[str, Any]:
        return input_schema(definition)


class OperationSerializer(serializers.Serializer):
    id = serializers.CharField()
    resource = serializers.CharField()
    name = serializers.CharField()
    effect = serializers.CharField()
    idempotent = serializers.BooleanField()
    description = serializers.CharField()
    input = serializers.SerializerMethodField(help_text="The operation's input JSON Schema.")
    output = serializers.SerializerMethodField(help_text="The operation's output JSON Schema.")

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_input(self, operation: Any) -> dict[str, Any]:
        return operation.input.model_json_schema(mode="validation")

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_output(self, operation: Any) -> dict[str, Any]:
        return operation.output.model_json_schema(mode="serialization")


class ConnectorSerializer(serializers.Serializer):
    vendor = serializers.CharField()
    title = serializers.CharField(source="info.title", allow_null=True)
    homepage = serializers.CharField(source="info.homepage", allow_null=True)
    operations = serializers.SerializerMethodField()

    @extend_schema_field(OperationSerializer(many=True))
    def get_operations(self, connector: Any) -> list[dict[str, Any]]:
        # many=True makes a ListSerializer whose .data is a ReturnList; drf-stubs types it ReturnDict.
        return OperationSerializer(list(connector.operations.values()), many=True).data  # type: ignore[return-value]


class ErrorSerializer(serializers.Serializer):
    error = serializers.CharField()
    code = serializers.CharField(required=False)
    issues = serializers.JSONField(required=False, help_text="`[{path, message, code}]` for `invalid_input`.")
    approver = serializers.CharField(required=False, help_text="Who may decide, for `not_approver`.")


class RunFailedSerializer(ErrorSerializer):
    status = serializers.CharField(help_text="`failed` or `cancelled`.")
    run_id = serializers.CharField()
    run_error = serializers.JSONField(help_text="The run's error as recorded: `{code?, name, message, data?}`.")
