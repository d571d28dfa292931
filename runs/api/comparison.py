"""`GET /api/runs/{run_id}/compare/{other_id}`: two runs compared step by step (`runs.comparison`),
answered through the serializers below."""
from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.base import SanomaAPIView, errors, me
from runs.comparison import compare_runs
from runs.display import as_datetime
from runs.timing import StepTime
from runs.validation import check_run_id


class ComparedStepSerializer(serializers.Serializer):
    kind = serializers.CharField(help_text="call, approval, sleep, message, child, doubt or tag.")
    name = serializers.CharField(help_text="The operation, the approval's title, the topic, the child's workflow.")
    seq = serializers.IntegerField(help_text="The step's number in its run's ledger.")
    effect = serializers.CharField(help_text="A call's effect (read, write, money, send, ...); else empty.")
    outcome = serializers.CharField()
    input = serializers.JSONField(allow_null=True)
    output = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)
    verdict = serializers.CharField(help_text="The policy's decision on a call: allow, deny, approve (approver).")
    approvers = serializers.ListField(child=serializers.CharField(), help_text="\"asked of bob\", \"approved by bob\".")
    attempts = serializers.IntegerField()
    group = serializers.CharField(help_text="\"ctx.all member 2 of 3\", or empty.")
    started_at = serializers.DateTimeField()
    ended_at = serializers.DateTimeField(allow_null=True, help_text="null while the step is not over.")
    duration_ms = serializers.IntegerField(allow_null=True)

    def to_representation(self, instance: StepTime) -> dict[str, Any]:
        data = {name: getattr(instance, name) for name in (
            "kind", "name", "seq", "effect", "outcome", "input", "output", "error", "verdict", "approvers", "attempts",
            "group", "duration_ms")}
        data["started_at"] = as_datetime(instance.start_ms)
        data["ended_at"] = as_datetime(instance.end_ms)
        return super().to_representation(data)


class StepPairSerializer(serializers.Serializer):
    number = serializers.IntegerField(help_text="The row, counting from 1.")
    differs = serializers.ListField(
        child=serializers.CharField(),
        help_text="What differs: outcome, input, output, error, verdict, approvers, attempts; `step` (different "
                  "steps at one point), `only in a` or `only in b`. Empty when the two are the same.")
    a = ComparedStepSerializer(allow_null=True)
    b = ComparedStepSerializer(allow_null=True)


class FactSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="workflow, version, status, started by, input, result, error, steps.")
    a = serializers.JSONField(allow_null=True)
    b = serializers.JSONField(allow_null=True)
    differs = serializers.BooleanField()


class ComparisonSerializer(serializers.Serializer):
    a = serializers.CharField(source="a.id", help_text="The first run's id.")
    b = serializers.CharField(source="b.id", help_text="The second run's id.")
    differences = serializers.IntegerField(help_text="How many facts and steps differ.")
    facts = FactSerializer(many=True)
    steps = StepPairSerializer(many=True)
    took_ms = serializers.SerializerMethodField()

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_took_ms(self, comparison: Any) -> dict[str, int | None]:
        """Each run's start to end in ms (null while it goes on): shown, never counted as a difference."""
        return {"a": comparison.took[0], "b": comparison.took[1]}


class RunCompareView(SanomaAPIView):
    @extend_schema(
        operation_id="runs_compare",
        summary="Two runs compared step by step",
        description="The runs' facts (workflow, version, status, starter, input, result, error) and their steps "
                    "aligned by kind and operation, each pair naming what differs (input, output, error, the "
                    "policy's verdict, approvers, outcome). Timing is given, never counted as a difference. A run "
                    "you may not see is 404 `run_not_found`; a bad id, or a run compared with itself, is 400.",
        responses={200: ComparisonSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, run_id: str, other_id: str) -> Response:
        check_run_id(other_id, path=["other_id"])
        comparison = compare_runs(a_id=run_id, b_id=other_id, viewer=me(request))
        return Response(ComparisonSerializer(comparison).data)
