"""The run page's read-only tables: its steps (checkpoints) and its approvals."""
from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html, format_html_join

from runs.admin.base import ReadOnlyMixin, me
from runs.admin.common import pretty_json
from runs.approvals.permissions import check_can_view
from runs.approvals.rules import POLICY_ACTOR
from runs.approvals.selectors import covered_ops, decided_said
from runs.display import dotted, moment, moment_column
from runs.engine.transitions import RUNTIME_ACTOR
from runs.models import Approval, ApprovalStatus, Step, StepKind


class StepInline(ReadOnlyMixin, admin.TabularInline):
    model = Step
    extra = 0
    can_delete = False
    ordering = ("seq",)
    fields = ("seq", "kind", "name", "attempt", "output_json", "error_json", "decision_json", "recorded")
    readonly_fields = fields
    verbose_name = "step (checkpoint)"
    verbose_name_plural = "steps (checkpoints)"

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    recorded = moment_column("created_at", "recorded", sortable=False, ago=False)

    @admin.display(description="output")
    def output_json(self, step: Step) -> str:
        until = step.output.get("until") if step.kind == StepKind.SLEEP and isinstance(step.output, dict) else None
        if isinstance(until, int | float):  # epoch milliseconds, as the ledger keeps them: the moment beside
            return format_html('{}<div class="sanoma-until">until {}</div>', pretty_json(step.output),
                               moment(until, ago=False))
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
    fields = ("approval", "title", "approver", "status", "requested_by", "op_said", "lets_through", "decided_by_said",
              "decided", "note")
    readonly_fields = fields

    decided = moment_column("decided_at", "decided at", sortable=False)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is None or check_can_view(me(request), obj, raise_error=False)

    @admin.display(description="approval")
    def approval(self, approval: Approval) -> str:
        url = reverse("admin:runs_approval_change", args=[approval.pk])
        if approval.status == ApprovalStatus.PENDING:
            return format_html('<a href="{}">{}</a> (decide)', url, approval.approval_id)
        return format_html('<a href="{}">{}</a>', url, approval.approval_id)

    @admin.display(description="decided by")
    def decided_by_said(self, approval: Approval) -> str:
        """Who, or why the runtime withdrew it, as the approval's own page says it."""
        if approval.decided_by in (RUNTIME_ACTOR, POLICY_ACTOR):
            return decided_said(approval)
        return approval.decided_by or "-"

    @admin.display(description="op")
    def op_said(self, approval: Approval) -> str:
        """The held operation's name, which a narrow column breaks after its dots."""
        return dotted(approval.op) if approval.op else "-"

    @admin.display(description="covers")
    def lets_through(self, approval: Approval) -> str:
        """The operations the approval lets through, named and joined in words."""
        return format_html_join(", ", "{}", ((dotted(op),) for op in covered_ops(approval))) or "-"
