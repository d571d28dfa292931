"""`POST /api/sandbox-runs`: start a sandbox run seeded from one of the company's scenarios.

201 with the run (its `sandbox` says the scenario; `GET /api/runs/<id>` shows the scenario's checks
once it has ended); 400 `invalid_input` naming `scenario` (no such scenario, or one of another
workflow, with those there are) or `workflow`; 403 `permission_denied` for a caller who may not
start the scenario's workflow. Nothing is written by a refused start.
"""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api import serializers as s
from runs.api.base import SanomaAPIView, errors, me
from runs.approvals.selectors import pending_counts
from runs.sandbox.selectors import sandboxes_of
from runs.sandbox.services import start_sandbox


class SandboxStartInput(s.StrictSerializer):
    scenario = s.StrictCharField(max_length=300, help_text=(
        "The scenario's name (`GET /api/scenarios?workflow=<name>` lists them): its Given steps seed the fakes, "
        "its When gives the input"))
    workflow = s.StrictCharField(required=False, max_length=200, help_text=(
        "Optional: the workflow the scenario must run (a scenario of another workflow is refused)"))


class SandboxRunView(SanomaAPIView):
    @extend_schema(
        operation_id="sandbox_runs_start", summary="Start a sandbox run, seeded from a scenario",
        description="The run is the scenario's workflow started by you with the scenario's input, against fresh "
                    "fakes its Given steps seeded; it never reaches a real driver. Its approvals are decided like "
                    "any others. 201 with the run; its `sandbox.checks` are filled once it has ended.",
        request=SandboxStartInput,
        responses={201: s.RunSerializer, **errors(400, 403, 415)},
    )
    def post(self, request: Request) -> Response:
        body = self.checked(SandboxStartInput, self.body(request))
        run = start_sandbox(scenario=body["scenario"], workflow=body.get("workflow"), started_by=me(request))
        data = s.RunSerializer(run, context={"pending_counts": pending_counts([run.id]),
                                             "sandboxes": sandboxes_of([run.id])}).data
        return Response(data, status=status.HTTP_201_CREATED)
