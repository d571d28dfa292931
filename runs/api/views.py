"""The JSON API's views: each reads its input through a serializer, calls one service, and answers
through a serializer. Permissions are the services' (`runs.approvals.permissions` underneath): a run the
caller may not see is `404 run_not_found`, as if it did not exist."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, error_code
from runs import selectors, services
from runs.api import serializers as s
from runs.api.base import ApiError, SanomaAPIView, error_body, errors, invalid_input, me
from runs.api.pagination import LedgerCursor, Page, RunsPage
from runs.approvals import selectors as approval_selectors
from runs.approvals import services as approvals
from runs.approvals.selectors import pending_counts
from runs.config.registry import get_config
from runs.errors import RunCode
from runs.models import ApprovalStatus, Run, RunStatus
from runs.sandbox.selectors import sandbox_run_ids, sandboxes_of
from runs.sandbox.services import checks_of

# How long a decision waits for the run to apply it before answering 202.
DECIDE_WAIT_SECONDS = 5.0


def run_data(run: Run) -> dict[str, Any]:
    return s.RunSerializer(run, context={"pending_counts": pending_counts([run.id])}).data


# ---- workflows and connectors -------------------------------------------------------------------


class WorkflowListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="workflows_list",
        summary="The workflows, described, by name",
        responses={200: s.WorkflowSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        config = get_config()
        definitions = [config.workflows[name] for name in sorted(config.workflows)]
        return self.paged(request, definitions, lambda page: s.WorkflowSerializer(page, many=True).data)


class WorkflowDetailView(SanomaAPIView):
    @extend_schema(
        operation_id="workflow_get",
        summary="One workflow, described",
        responses={200: s.WorkflowSerializer, **errors(404)},
    )
    def get(self, request: Request, name: str) -> Response:
        definition = get_config().workflows.get(name)
        if definition is None:
            raise SanomaError(f"No workflow {name}", code=RunCode.WORKFLOW_NOT_FOUND, data={"workflow": name})
        return Response(s.WorkflowSerializer(definition).data)


class ConnectorListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="connectors_list",
        summary="The vendors and their operations, by vendor",
        responses={200: s.ConnectorSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        connectors = sorted(get_config().connectors, key=lambda c: c.vendor)
        return self.paged(request, connectors, lambda page: s.ConnectorSerializer(page, many=True).data)


# ---- runs ---------------------------------------------------------------------------------------


class RunListView(SanomaAPIView):
    pagination_class = RunsPage

    @extend_schema(
        operation_id="runs_list", summary="The runs you may see, newest first",
        description="Filters combine (all must match); `tag` repeats. A bad value is 400 naming the parameter.",
        parameters=[s.RunListQuery],
        responses={200: s.RunSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        params: dict[str, Any] = {k: v for k, v in request.query_params.items() if k not in ("limit", "offset")}
        if "tag" in request.query_params:
            params["tag"] = request.query_params.getlist("tag")
        query = self.checked(s.RunListQuery, params)
        where = selectors.RunFilter.parse(
            status=query.get("status"), workflow=query.get("workflow"), started_by=query.get("started_by"),
            error_code=query.get("error_code"), tags=query.get("tag") or (), started_after=query.get("since"),
            started_before=query.get("until"), waiting_for=query.get("waiting_for"), sandbox=query.get("sandbox"))
        paginator = RunsPage()
        limit, offset = paginator.get_limit(request), paginator.get_offset(request)
        page = selectors.list_runs(viewer=me(request), where=where, limit=limit, offset=offset)
        counts = pending_counts([run.id for run in page.runs])
        sandboxes = sandboxes_of(run.id for run in page.runs)
        runs = s.RunSerializer(page.runs, many=True, context={"pending_counts": counts, "sandboxes": sandboxes}).data
        return paginator.answer(request, runs, count=page.total, limit=limit, offset=offset, exact=page.total_exact)

    @extend_schema(
        operation_id="runs_start", summary="Start a run",
        description="201 with the new run; 200 when `run_id` names a run started the same way before. "
                    "An unknown workflow is 404 `invalid_input` with an issue at `workflow`. A scenario is not "
                    "started over the API (`scenario` is refused: 400, and with `workflow` too, 400 \"Send a "
                    "workflow or a scenario, not both\"); run scenarios with `manage.py behave`.",
        request=s.StartRunInput,
        responses={201: s.RunSerializer, 200: s.RunSerializer, **errors(400, 403, 404, 409, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        body = self.checked(s.StartRunInput, refuse_scenario(self.body(request)))
        run_id = body.get("run_id")
        try:
            run, created = services.start_or_get(workflow=body["workflow"], input=body.get("input"),
                                                 started_by=me(request), run_id=run_id)
        except InvalidInput as err:
            issues = err.data.get("issues") or []
            if any(i.get("path") == ["workflow"] and i.get("code") == "not_found" for i in issues):
                raise ApiError(err.message, code=ErrorCode.INVALID_INPUT, http_status=status.HTTP_404_NOT_FOUND,
                               data=err.data) from None
            raise
        return Response(run_data(run), status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)


def refuse_scenario(body: dict[str, Any]) -> dict[str, Any]:
    """A start names a workflow; a body naming a scenario is refused, saying why, before anything else."""
    if "scenario" not in body:
        return body
    if "workflow" in body:
        raise invalid_input("Send a workflow or a scenario, not both", path=["scenario"],
                            issue="send either workflow or scenario", issue_code=IssueCode.CONFLICT)
    raise invalid_input("A run cannot be started from a scenario over the API: send "
                        "{\"workflow\": ..., \"input\": ...} (GET /api/scenarios lists the workflow each "
                        "scenario runs), start a sandbox run seeded from it (POST /api/sandbox-runs), or run the "
                        "scenario with manage.py behave", path=["scenario"],
                        issue="not offered over the API",
                        issue_code=IssueCode.UNSUPPORTED)


class RunDetailView(SanomaAPIView):
    @extend_schema(
        operation_id="run_get",
        summary="A run with its approvals and ledger",
        responses={200: s.RunDetailSerializer, **errors(404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = self.visible_run(request, run_id)
        sandbox = checks_of(run, viewer=me(request))  # a sandbox run that ended: its scenario's checks
        states = approval_selectors.approvals_of(run_id=run.id, viewer=me(request))
        records = selectors.ledger_of(run_id=run.id, viewer=me(request))
        return Response({
            "run": s.RunInFullSerializer(run, context={"pending_counts": pending_counts([run.id]),
                                                      "sandboxes": {run.id: sandbox} if sandbox else {}}).data,
            "approvals": s.ApprovalSerializer(states, many=True).data,
            "ledger": s.LedgerRecordSerializer(records, many=True).data,
        })


class RunLedgerView(SanomaAPIView):
    pagination_class = LedgerCursor

    @extend_schema(
        operation_id="run_ledger",
        summary="A run's ledger records, in order, a page at a time",
        description="Cursor-paged: follow `next` (null on the last page; a running run's ledger grows there).",
        responses={200: s.LedgerRecordSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        run = self.visible_run(request, run_id)
        records = selectors.ledger_records(run_id=run.id)
        return self.paged(request, records, lambda page: s.LedgerRecordSerializer(
            [record.as_dict() for record in page], many=True).data)


class RunResultView(SanomaAPIView):
    @extend_schema(
        operation_id="run_result",
        summary="A run's output, waiting up to `timeout` seconds for it to end",
        description="200 with the output when it finished; 409 with the run's error (its code kept) when it "
                    "failed or was cancelled; 409 `run_running` when it is still going after `timeout`.",
        parameters=[s.ResultQuery],
        responses={200: s.RunResultSerializer, 409: s.RunFailedSerializer, **errors(400, 404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        query = self.checked(s.ResultQuery, request.query_params.dict())
        try:
            output = selectors.result(run_id=run_id, timeout=query["timeout"], viewer=me(request))
        except SanomaError as err:
            run = selectors.get_run(run_id=run_id, viewer=me(request))
            if run is None or run.status not in (RunStatus.FAILED, RunStatus.CANCELLED):
                raise  # run_not_found, run_running
            body = error_body(err.message, code=error_code(err))
            body.update(status=run.status, run_id=run.id, run_error=run.error or {"message": err.message})
            return Response(body, status=status.HTTP_409_CONFLICT)
        return Response(s.RunResultSerializer({"run_id": run_id, "status": "finished", "output": output}).data)


class RunCancelView(SanomaAPIView):
    @extend_schema(
        operation_id="run_cancel",
        summary="Cancel a run that has not ended (its starter or an operator)",
        description="Cancelling asks why: `reason` (required, non-blank) goes to the run's `run.cancelled` record, "
                    "whose actor is the caller. The run's pending approvals are withdrawn with it.",
        request=s.CancelInput,
        responses={200: s.RunSerializer, **errors(400, 403, 404, 409, 415)},
    )
    def post(self, request: Request, run_id: str) -> Response:
        body = self.body(request, required=False)
        self.visible_run(request, run_id)
        body = self.checked(s.CancelInput, body)
        run = services.cancel(run_id=run_id, by=me(request), reason=body["reason"])
        return Response(run_data(run))


class RunMessagesView(SanomaAPIView):
    @extend_schema(
        operation_id="run_send_message",
        summary="Send a message to a run (its starter, an operator, or a holder of runs.send_message on it)",
        description="The run reads it with `ctx.wait_message(topic)`, in arrival order per topic; resending an "
                    "`id` returns the message first sent with it.",
        request=s.MessageInput,
        responses={200: s.MessageSerializer, **errors(400, 403, 404, 409, 415)},
    )
    def post(self, request: Request, run_id: str) -> Response:
        body = self.checked(s.MessageInput, self.body(request))
        message = services.send_message(run_id=run_id, topic=body["topic"], payload=body["payload"],
                                        message_id=body.get("id"), by=me(request))
        return Response(s.MessageSerializer(message).data)


# ---- approvals ----------------------------------------------------------------------------------


class InboxView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="inbox_list",
        summary="Your inbox: the pending approvals you may decide, newest first",
        responses={200: s.InboxItemSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        pending = approval_selectors.inbox(principal=me(request))
        ops = approval_selectors.operations()

        def items(page: Any) -> Any:
            rows = list(page)
            sandboxes = sandbox_run_ids({a.run_id for a in rows})  # marked, in one read
            return s.InboxItemSerializer([{**approval_selectors.inbox_item(a, ops), "sandbox": a.run_id in sandboxes}
                                          for a in rows], many=True).data

        return self.paged(request, pending, items)


class DecideMixin:
    def decide(self, request: Request, run_id: str, approval_id: str | None) -> Response:
        body = self.checked(s.DecisionInput, self.body(request))  # type: ignore[attr-defined]
        state = approvals.decide(
            run_id=run_id, approval_id=approval_id, decision=body["decision"], note=body.get("note") or "",
            message_id=body.get("id"), by=me(request), timeout=DECIDE_WAIT_SECONDS,
        )
        pending = state["status"] == ApprovalStatus.PENDING
        return Response(s.ApprovalSerializer(state).data,
                        status=status.HTTP_202_ACCEPTED if pending else status.HTTP_200_OK)


DECIDE_DESCRIPTION = (
    "Approve or reject, then wait up to 5 s for the run to apply it: 200 with the decided approval, or 202 "
    "with it still pending (the decision stays queued and applies when a worker runs)."
)
DECIDE_RESPONSES = {200: s.ApprovalSerializer, 202: s.ApprovalSerializer, **errors(400, 403, 404, 409, 415)}


class RunApprovalsView(DecideMixin, SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="run_approvals_list",
        summary="A run's approvals, in the order it asked for them",
        responses={200: s.ApprovalSerializer(many=True), **errors(400, 404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        states = approval_selectors.approvals_of(run_id=run_id, viewer=me(request))
        return self.paged(request, states, lambda page: s.ApprovalSerializer(page, many=True).data)

    @extend_schema(
        operation_id="run_decide_first_pending",
        summary="Decide the run's first pending approval",
        description=DECIDE_DESCRIPTION,
        request=s.DecisionInput,
        responses=DECIDE_RESPONSES,
    )
    def post(self, request: Request, run_id: str) -> Response:
        return self.decide(request, run_id, None)


class ApprovalView(DecideMixin, SanomaAPIView):
    @extend_schema(
        operation_id="run_approval_get",
        summary="One approval of a run",
        responses={200: s.ApprovalSerializer, **errors(404)},
    )
    def get(self, request: Request, run_id: str, approval_id: str) -> Response:
        for state in approval_selectors.approvals_of(run_id=run_id, viewer=me(request)):
            if state["id"] == approval_id:
                return Response(s.ApprovalSerializer(state).data)
        raise SanomaError(f"Run {run_id} has no approval {approval_id}", code=RunCode.NO_PENDING_APPROVAL,
                          data={"run_id": run_id, "approval_id": approval_id})

    @extend_schema(
        operation_id="run_approval_decide",
        summary="Decide this approval",
        description=DECIDE_DESCRIPTION,
        request=s.DecisionInput,
        responses=DECIDE_RESPONSES,
    )
    def post(self, request: Request, run_id: str, approval_id: str) -> Response:
        return self.decide(request, run_id, approval_id)


class ApprovalWithdrawView(SanomaAPIView):
    @extend_schema(
        operation_id="run_approval_withdraw",
        summary="Withdraw a pending approval (the run's starter or an operator)",
        description="The run waiting on it fails `approval_withdrawn` unless it catches that.",
        request=s.WithdrawInput,
        responses={200: s.ApprovalSerializer, **errors(400, 403, 404, 409, 415)},
    )
    def post(self, request: Request, run_id: str, approval_id: str) -> Response:
        body = self.checked(s.WithdrawInput, self.body(request, required=False))
        self.visible_run(request, run_id)
        state = approvals.withdraw(run_id=run_id, approval_id=approval_id, by=me(request),
                                   reason=body.get("reason") or "")
        return Response(s.ApprovalSerializer(state).data)


class NotFoundView(SanomaAPIView):
    """Anything under /api/ that names no endpoint: a JSON 404, not Django's HTML page."""

    permission_classes: list[Any] = []
    authentication_classes: list[Any] = []

    @extend_schema(exclude=True)
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(error_body(f"No endpoint {request.path}", code=ErrorCode.NOT_FOUND),
                        status=status.HTTP_404_NOT_FOUND)

    post = put = patch = delete = get
