"""The declared state over the API: `GET /api/resources` (what the data files declare),
`POST /api/resources/drift` and `POST /api/resources/apply` (start those runs), and
`GET /api/resources/plan` (the changes after a drift run, with the policy's verdicts)."""
from __future__ import annotations

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from changes import services as resource_services
from changes.errors import StateCode
from changes.plan_policy import plan_policy_version, policy_changed
from changes.selectors import declared_resources
from connectors.errors import InvalidInput, IssueCode, SanomaError
from runs.api.base import ApiError, SanomaAPIView, errors, me
from runs.api.serializers import ErrorSerializer, StrictCharField, StrictSerializer
from runs.config.registry import get_config
from runs.errors import RunCode
from runs.models import Run
from runs.selectors import visible_run
from runs.validation import check_run_id


class DeclaredResourceSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="<file path from the config root>#<name>")
    type = serializers.CharField(help_text="<vendor>.<type>")
    name = serializers.CharField()
    values = serializers.DictField(help_text='declared fields; a reference is {"ref": id}, a secret {"secret": name}')
    references = serializers.ListField(child=serializers.CharField())
    file = serializers.CharField()
    line = serializers.IntegerField()
    column = serializers.IntegerField()


class FileProblemSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField()
    column = serializers.IntegerField()
    message = serializers.CharField()
    resource = serializers.CharField(allow_null=True)


class DeclaredStateSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.CharField())
    resources = DeclaredResourceSerializer(many=True)
    problems = FileProblemSerializer(many=True)


class ResourceListView(SanomaAPIView):
    @extend_schema(
        operation_id="resources_list",
        summary="The resources the data files declare, and their problems",
        description="Resources in file order; a resource with a problem, and every resource referring to one, "
                    "is left out and its problem listed (file, line, column from 1).",
        responses={200: DeclaredStateSerializer, **errors(),
                   503: OpenApiResponse(ErrorSerializer, description="config_invalid: the config has no data files "
                                                                     "to read (no root folder)")},
    )
    def get(self, request: Request) -> Response:
        return Response(DeclaredStateSerializer(declared_resources().plain()).data)


class StartedSerializer(serializers.Serializer):
    run = serializers.CharField(help_text="the run's id: follow it at /api/runs/<id>")
    workflow = serializers.CharField()
    status = serializers.CharField()


def _started(run: Run) -> Response:
    return Response({"run": run.id, "workflow": run.workflow, "status": run.status}, status=202)


class DriftView(SanomaAPIView):
    @extend_schema(
        operation_id="resources_drift", request=None, summary="Start a drift run",
        description="Compares what the vendors hold with the data files, as the signed-in user: a run of the "
                    "built-in workflow `drift` (input {}), its report the run's output. Answers 202 with its id.",
        responses={202: StartedSerializer, **errors(400, 403)},
    )
    def post(self, request: Request) -> Response:
        if request.data not in ({}, None):
            raise InvalidInput("POST /api/resources/drift takes no body (or {})",
                               data={"issues": [{"path": [], "message": "takes no input", "code": IssueCode.EXTRA}]})
        return _started(resource_services.start("drift", by=me(request)))


class ApplyRequestSerializer(StrictSerializer):
    policy_version = StrictCharField(
        required=False, allow_blank=True,
        help_text="the `policy_version` of the plan you apply (GET /api/resources/plan): refused with "
                  "`plan_policy_changed` when the workers hold another; default the policy of this server's code")


class ApplyView(SanomaAPIView):
    @extend_schema(
        operation_id="resources_apply", request=ApplyRequestSerializer, summary="Start an apply run",
        description="Makes the vendors hold what the data files declare, as the signed-in user: a run of the "
                    "built-in workflow `apply` (input {}). Each change goes through the policy; held changes wait "
                    "for their approvers. Answers 202 with its id. The run finishes when every change of its plan "
                    "was made; otherwise it fails with `apply_incomplete`, its error's data counting the changes "
                    "`applied`, `denied`, `rejected`, `failed` and `skipped` (of `planned`), with the `report`. "
                    "Refused with 409 `plan_policy_changed` (nothing started) when the workers up hold another "
                    "policy version than the plan's (`policy_version`, default the one this server's plan is "
                    "judged with): the apply would be decided by other rules than the plan shows.",
        responses={202: StartedSerializer, **errors(400, 403),
                   409: OpenApiResponse(ErrorSerializer, description="plan_policy_changed: the workers hold another "
                                                                     "policy version than the plan's")},
    )
    def post(self, request: Request) -> Response:
        body = request.data if request.data is not None else {}
        if not isinstance(body, dict) or set(body) - {"policy_version"}:
            raise InvalidInput("POST /api/resources/apply takes no body, {} or {\"policy_version\": <the plan's>}",
                               data={"issues": [{"path": [], "message": "takes only policy_version",
                                                 "code": IssueCode.EXTRA}]})
        given = body.get("policy_version")
        if given is not None and not isinstance(given, str):
            raise InvalidInput("policy_version must be text: the plan's policy_version",
                               data={"issues": [{"path": ["policy_version"], "message": "must be a string",
                                                 "code": IssueCode.TYPE}]})
        changed = policy_changed(plan_policy_version(get_config()) if given is None else given)
        if changed is not None:
            raise ApiError(changed.message, code=StateCode.PLAN_POLICY_CHANGED, http_status=409, data=changed.data)
        return _started(resource_services.start("apply", by=me(request)))


class PlanView(SanomaAPIView):
    @extend_schema(
        operation_id="resources_plan", summary="The plan after a drift run, with the policy's verdicts",
        description="The changes apply would make after the drift run `run` (default: the latest finished drift "
                    "run the signed-in user can see), each call with what the policy would decide were the "
                    "signed-in user to apply it: allow, deny (reason) or held (approver). Each change says whether "
                    "the policy will refuse it (`refused`: one of its calls is denied); `refused` counts them and "
                    "`all_refused` says an apply by this user would make none of them. A held call nobody could "
                    "decide (the user is the approving group's only member, or the approver) says why in its "
                    "verdict's `nobody`; such a change is `stuck`, and `stuck` counts them. `policy_version` names the "
                    "policy the verdicts were judged with (pass it to POST /api/resources/apply).",
        parameters=[OpenApiParameter("run", str, required=False, description="a finished drift run's id")],
        responses={200: dict, **errors(400, 404)},
    )
    def get(self, request: Request) -> Response:
        viewer = me(request)
        run_id = request.query_params.get("run")
        if run_id is not None:
            run = visible_run(run_id=check_run_id(run_id), viewer=viewer)
            if run.workflow != "drift":
                raise InvalidInput(f"Run {run.id} is a run of {run.workflow}, not of drift",
                                   data={"issues": [{"path": ["run"], "message": "not a drift run",
                                                     "code": IssueCode.TYPE}]})
        else:
            latest = resource_services.latest_drift(viewer)
            if latest is None:
                raise SanomaError("No finished drift run: start one (POST /api/resources/drift)",
                                  code=RunCode.RUN_NOT_FOUND, data={})
            run = latest
        drift = resource_services.report(run)
        return Response({"drift_run": run.id, **resource_services.plan(drift, by=viewer.id)})
