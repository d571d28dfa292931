"""The API of recovery: rerun, fork, bulk rerun and cancel, pauses. Thin: each view checks its
input, calls one service in `runs.recovery` or `runs.pausing`, and answers."""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from runs import pausing, recovery, selectors
from runs.api import serializers as s
from runs.api.base import SanomaAPIView, errors, me
from runs.api.pagination import Page
from runs.api.views import run_data
from runs.models import Pause


def _where(body: dict[str, Any], *, status_: str | None = None) -> selectors.RunFilter:
    return selectors.RunFilter.parse(
        status=status_ or body.get("status"), workflow=body.get("workflow"), error_code=body.get("error_code"),
        tags=body.get("tag") or (), started_after=body.get("since"), started_before=body.get("until"))


def _bulk(result: recovery.BulkResult | None, matched: int) -> Response:
    if result is None:
        return Response({"matched": matched, "done": [], "refused": [], "acted": False})
    return Response({"matched": result.matched, "done": result.done, "acted": True,
                     "refused": [{"run_id": run_id, "why": why} for run_id, why in result.refused]})


class RunRerunView(SanomaAPIView):
    @extend_schema(operation_id="run_rerun", summary="Rerun a failed run (operators: runs.rerun_runs)",
                   description="A new run `<run>~<n>` with the same input and starter, from the top: every step "
                               "is made live again. With `dry_run: true`, 200 with what it would do (the steps "
                               "made live, with their effects) and nothing written.",
                   request=s.RerunInput,
                   responses={200: s.RecoveryPlanSerializer, 201: s.RunSerializer, **errors(400, 403, 404, 415)})
    def post(self, request: Request, run_id: str) -> Response:
        body = self.checked(s.RerunInput, self.body(request, required=False))
        if body["dry_run"]:
            return Response(recovery.check_rerun(run_id=run_id, by=me(request)).as_dict())
        run = recovery.rerun(run_id=run_id, by=me(request))
        return Response(run_data(run), status=status.HTTP_201_CREATED)


class RunForkView(SanomaAPIView):
    @extend_schema(operation_id="run_fork", summary="Fork a run from a step onto the current code",
                   description="Reuses the steps before `from_step`; refused (400) naming the first step that "
                               "differs when the current code replays differently. With `dry_run: true`, 200 with "
                               "what it would do (the steps reused, and those made live with their effects) and "
                               "nothing written.",
                   request=s.ForkInput,
                   responses={200: s.RecoveryPlanSerializer, 201: s.RunSerializer, **errors(400, 403, 404, 415)})
    def post(self, request: Request, run_id: str) -> Response:
        body = self.checked(s.ForkInput, self.body(request))
        if body["dry_run"]:
            plan = recovery.check_fork(run_id=run_id, from_step=body["from_step"], by=me(request))
            return Response(plan.as_dict())
        run = recovery.fork(run_id=run_id, from_step=body["from_step"], by=me(request))
        return Response(run_data(run), status=status.HTTP_201_CREATED)


class BulkRerunView(SanomaAPIView):
    @extend_schema(operation_id="runs_rerun", summary="Rerun every failed run matching a filter",
                   description="Without `expect`, only counts. With it, reruns when the count still matches.",
                   request=s.RunFilterInput, responses={200: s.BulkResultSerializer, **errors(400, 403, 415)})
    def post(self, request: Request) -> Response:
        body = self.checked(s.RunFilterInput, self.body(request))
        where = _where(body, status_="failed")
        if "expect" not in body:
            return _bulk(None, recovery.count_matching(where=where, by=me(request)))
        return _bulk(recovery.rerun_matching(where=where, expect=body["expect"], by=me(request)), 0)


class BulkCancelView(SanomaAPIView):
    @extend_schema(operation_id="runs_cancel", summary="Cancel every unended run matching a filter",
                   description="Without `expect`, only counts. With it and a `reason` (required: why, kept in each "
                               "run's `run.cancelled` record), cancels when the count still matches.",
                   request=s.RunFilterInput, responses={200: s.BulkResultSerializer, **errors(400, 403, 415)})
    def post(self, request: Request) -> Response:
        body = self.checked(s.RunFilterInput, self.body(request))
        where = _where(body)
        if "expect" not in body:
            return _bulk(None, recovery.count_matching(where=where, by=me(request)))
        return _bulk(recovery.cancel_matching(where=where, expect=body["expect"], by=me(request),
                                              reason=body.get("reason", "")), 0)


def _pause_data(pause: Pause, request: Request) -> dict[str, Any]:
    """The pause, with the runs it holds that the caller may see (the rest are not named)."""
    data: dict[str, Any] = s.PauseSerializer(pause).data
    data["held_runs"] = [run.id for run in pausing.held_runs(pause, viewer=me(request))] if pause.active else []
    return data


class PausesView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(operation_id="pauses_list", summary="The active pauses, with the runs each holds",
                   responses={200: s.PauseSerializer(many=True), **errors(400)})
    def get(self, request: Request) -> Response:
        return self.paged(request, list(pausing.active_pauses()), lambda page: [_pause_data(p, request) for p in page])

    @extend_schema(operation_id="pauses_create", summary="Pause a connector, an operation or a workflow "
                   "(operators: runs.pause)", request=s.PauseInput,
                   responses={201: s.PauseSerializer, **errors(400, 403, 415)})
    def post(self, request: Request) -> Response:
        body = self.checked(s.PauseInput, self.body(request))
        pause = pausing.pause(kind=body["kind"], target=body["target"], reason=body["reason"], by=me(request))
        return Response(_pause_data(pause, request), status=status.HTTP_201_CREATED)


class PauseView(SanomaAPIView):
    @extend_schema(operation_id="pauses_delete", summary="Unpause: the runs it held go on",
                   request=s.UnpauseInput, responses={200: s.PauseSerializer, **errors(400, 403, 404, 415)})
    def delete(self, request: Request, kind: str, target: str) -> Response:
        body = self.checked(s.UnpauseInput, self.body(request, required=False))
        pause = pausing.unpause(kind=kind, target=target, by=me(request), reason=body.get("reason", ""))
        return Response(_pause_data(pause, request))


class RunInDoubtView(SanomaAPIView):
    @extend_schema(operation_id="run_resolve_in_doubt", summary="Settle the call a run is in doubt about "
                   "(operators)", description="happened: true with the vendor's output (the run goes on with it), "
                   "or false (the run calls again). Recorded as op.resolved with who said it.",
                   request=s.ResolveInput, responses={200: s.RunSerializer, **errors(400, 403, 404, 415)})
    def post(self, request: Request, run_id: str) -> Response:
        body = self.checked(s.ResolveInput, self.body(request))
        run = recovery.resolve_in_doubt(run_id=run_id, happened=body["happened"], output=body.get("output"),
                                        note=body.get("note", ""), by=me(request))
        return Response(run_data(run))
