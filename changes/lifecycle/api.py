"""Changes over the API: `GET /api/changes` (the changes you may see), `POST /api/changes` (open
one, as the signed-in user), `GET /api/changes/<run_id>` (one change's picture), and
`POST /api/changes/webhooks/github`, where GitHub tells the changes what happened to their
branches.

The webhook has no user: a delivery is believed only when its `X-Hub-Signature-256` is the HMAC of
its raw body with `SANOMA_GITHUB_WEBHOOK_SECRET` (the environment's, else the stored credential).
No secret configured, or a signature that does not match, is `403` and nothing is done. Each event
the delivery means (`changes.lifecycle.remotes.github_webhooks.events_of`) is sent to the unfinished changes of its
branch through `changes.lifecycle.services.notify`, in the name of each change's opener.
"""
from __future__ import annotations

import re
from typing import Any

from django.core.exceptions import RequestDataTooBig
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from changes.lifecycle import selectors, services
from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.remotes import variable
from changes.lifecycle.remotes.github_webhooks import events_of, verify_signature
from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, error_code
from runs.api.base import ERRORS, ApiError, SanomaAPIView, body_limit, errors, invalid_input, me, too_large
from runs.api.pagination import Page
from runs.api.serializers import ErrorSerializer, StrictCharField, StrictSerializer
from runs.models import Run
from runs.validation import parse_json

SECRET = "SANOMA_GITHUB_WEBHOOK_SECRET"
GIT_NAME = re.compile(r"^[A-Za-z0-9._/-]+$")  # what a branch or base may be (the `change` workflow's rule)
MAX_WAIT_FOR_PUSH = 30 * 24 * 3600


# ---- what is read -------------------------------------------------------------------------------


class OpenChangeInput(StrictSerializer):
    """`{branch, title, description?, base?, wait_for_push?}` or `{pull_request, title?, ...}`."""

    branch = StrictCharField(required=False, allow_blank=True, default="", max_length=200,
                                   trim_whitespace=False,
                                   help_text="The branch to check, merge and deploy: letters, digits, `.`, `_`, "
                                             "`/` and `-`.")
    pull_request = StrictCharField(required=False, allow_blank=True, default="", max_length=500,
                                         trim_whitespace=False,
                                         help_text="Instead of a branch: a pull request's URL (GitHub).")
    title = StrictCharField(required=False, allow_blank=True, default="", max_length=200,
                                  help_text="Required with a branch.")
    description = StrictCharField(required=False, allow_blank=True, default="", max_length=5000,
                                        trim_whitespace=False)
    base = StrictCharField(required=False, default="main", max_length=200, trim_whitespace=False,
                                 help_text="The branch it merges into (default `main`).")
    wait_for_push = serializers.FloatField(
        required=False, default=0, min_value=0, max_value=MAX_WAIT_FOR_PUSH,
        help_text="Seconds a change whose checks failed waits for a new push before it ends `checks_failed` "
                  "(0, the default: it ends at once).")

    def validate_branch(self, value: str) -> str:
        if value and not GIT_NAME.match(value):
            raise serializers.ValidationError("a branch name is letters, digits, '.', '_', '/' and '-'",
                                              code=IssueCode.INVALID_BRANCH)
        return value

    def validate_base(self, value: str) -> str:
        if not GIT_NAME.match(value):
            raise serializers.ValidationError("a branch name is letters, digits, '.', '_', '/' and '-'",
                                              code=IssueCode.INVALID_BRANCH)
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        attrs = super().validate(attrs)
        if bool(attrs["branch"]) == bool(attrs["pull_request"]):
            raise serializers.ValidationError({"branch": [serializers.ErrorDetail(
                "give the branch to merge, or a pull request's URL (pull_request): one of them",
                code=IssueCode.ONE_OF)]})
        if attrs["branch"] and not attrs["title"].strip():
            raise serializers.ValidationError({"title": [serializers.ErrorDetail(
                "a change from a branch needs a title", code=IssueCode.REQUIRED)]})
        if attrs["branch"] and attrs["branch"] == attrs["base"]:
            raise serializers.ValidationError({"branch": [serializers.ErrorDetail(
                f"the branch is the base ({attrs['base']}): a change merges another branch into it",
                code=IssueCode.IS_BASE)]})
        return attrs


# ---- what is answered ---------------------------------------------------------------------------


class WaitingApprovalSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The approval's key on the desk (/admin/runs/approval/<id>/change/).")
    title = serializers.CharField()
    approver = serializers.CharField(help_text="Who may decide: a user, or `group:<name>`.")
    op = serializers.CharField(allow_blank=True, help_text="The operation held (`sanoma.change.merge` for a merge).")


class DeployedSerializer(serializers.Serializer):
    revision = serializers.CharField(help_text="The commit the live root was moved to.")
    version = serializers.CharField(help_text="The app version the change run finished on.")


class ChangeSerializer(serializers.Serializer):
    """A change as every surface shows it (`changes.lifecycle.selectors.picture`)."""

    run = serializers.CharField(help_text="The change run's id: its steps and ledger at /api/runs/<id>.")
    status = serializers.CharField(help_text="The run's status: queued, running, waiting, finished, failed, cancelled.")
    waiting_for = serializers.CharField(allow_blank=True, help_text="What the run waits for, when it waits.")
    state = serializers.CharField(help_text="How far the change got: opened, checking, checks_failed, "
                                            "checks_passed, merged, deployed.")
    branch = serializers.CharField()
    base = serializers.CharField()
    title = serializers.CharField(allow_blank=True)
    description = serializers.CharField(allow_blank=True)
    pull_request = serializers.CharField(allow_null=True)
    repository = serializers.CharField(allow_blank=True)
    opened_by = serializers.CharField()
    opened_at = serializers.DateTimeField()
    head = serializers.CharField(allow_null=True, help_text="The commit checked, once resolved.")
    checks = serializers.JSONField(allow_null=True, help_text="The checks report: `{ok, failed, checks: [{name, "
                                                              "ok, skipped, summary, problems: [{file, line, "
                                                              "message}]}]}`.")
    diff = serializers.JSONField(allow_null=True, help_text="What the checked commit brings into the base: `{base, "
                                                            "base_sha, merge_base, sha, files: [{path, status, added, "
                                                            "removed}], files_count, added, removed, patch, "
                                                            "truncated}`, or `{problem}` when the remote cannot say.")
    plan = serializers.JSONField(allow_null=True, help_text="What apply would do with the change's tree, each "
                                                            "call with the policy's verdict (allow, held, deny).")
    in_flight = serializers.JSONField(
        allow_null=True, help_text="What the merge would do to the live work in flight, proven on the checked head: "
                                   "`{said, migrates, pins, unchanged, releases, reassigns, refuses, pinned: [{run, "
                                   "workflow, from, to, step, reason}], migrated: [{run, workflow, from, to, steps}], "
                                   "released|reassigned|refused: [{approval, run, operation, from, to, reason}], "
                                   "tree_version, policy_version, truncated}`; null until the checks proved it.")
    approvals = WaitingApprovalSerializer(many=True, help_text="The approvals the run waits for.")
    merged = serializers.CharField(allow_null=True, help_text="The commit the merge made.")
    deployed = DeployedSerializer(allow_null=True)
    version = serializers.CharField(allow_blank=True, help_text="The app version the run is on.")
    result = serializers.JSONField(allow_null=True)
    error = serializers.JSONField(allow_null=True)


class ToldSerializer(serializers.Serializer):
    topic = serializers.CharField()
    branch = serializers.CharField()
    sha = serializers.CharField(allow_blank=True)
    runs = serializers.ListField(child=serializers.CharField(), help_text="The change runs sent the message.")


class IgnoredSerializer(serializers.Serializer):
    topic = serializers.CharField()
    branch = serializers.CharField(allow_blank=True)
    sha = serializers.CharField(allow_blank=True)
    reason = serializers.CharField()


class DeliverySerializer(serializers.Serializer):
    event = serializers.CharField(help_text="The delivery's X-GitHub-Event.")
    told = ToldSerializer(many=True)
    ignored = IgnoredSerializer(many=True, help_text="Events the changes do not take (say, checks_failed).")


def _pictures(rows: list[ChangeRun]) -> list[dict[str, Any]]:
    runs = Run.objects.in_bulk([row.run_id for row in rows])
    return [selectors.picture(row, runs[row.run_id]) for row in rows if row.run_id in runs]


# ---- the views ----------------------------------------------------------------------------------


class ChangeListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="changes_list", summary="The changes you may see, newest first",
        description="A change is seen by whoever may see its run: its opener, its approvers, operators.",
        responses={200: ChangeSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        return self.paged(request, selectors.visible_changes(me(request)), lambda page: ChangeSerializer(
            _pictures(page), many=True).data)

    @extend_schema(
        operation_id="changes_open", summary="Open a change",
        description="Starts the built-in `change` workflow for a branch (or a pull request), you its opener: it "
                    "checks the branch's tree, waits for the approval the policy asks for before it merges, "
                    "merges and deploys. A worker runs it. 201 with the change; bad input is 400 naming the "
                    "field, and nothing is started. A site with no repository (no SANOMA_REPO_URL, no remote "
                    "`origin` at the live root) is 400 saying so.",
        request=OpenChangeInput,
        responses={201: ChangeSerializer, **errors(400, 403, 413, 415)},
    )
    def post(self, request: Request) -> Response:
        body = self.checked(OpenChangeInput, self.body(request))
        run = services.open_change(branch=body["branch"], pull_request=body["pull_request"], title=body["title"],
                                   description=body["description"], base=body["base"],
                                   wait_for_push=body["wait_for_push"], by=me(request))
        row, run = selectors.change_of(run.id, None)
        return Response(ChangeSerializer(selectors.picture(row, run)).data, status=status.HTTP_201_CREATED)


class ChangeDetailView(SanomaAPIView):
    @extend_schema(
        operation_id="change_get", summary="One change: its checks, plan, approval, merge and deploy",
        description="A change whose run you may not see is 404 `run_not_found`, as one that does not exist.",
        responses={200: ChangeSerializer, **errors(404)},
    )
    def get(self, request: Request, run_id: str) -> Response:
        row, run = selectors.change_of(run_id, me(request))
        return Response(ChangeSerializer(selectors.picture(row, run)).data)


class GitHubWebhookView(SanomaAPIView):
    """GitHub's deliveries: believed by their signature, not by a user."""

    authentication_classes: list[Any] = []
    permission_classes: list[Any] = []

    @extend_schema(
        operation_id="changes_github_webhook", summary="GitHub tells the changes what happened to their branches",
        description="No user: the delivery's `X-Hub-Signature-256` must be the HMAC-SHA256 of the raw body with "
                    "SANOMA_GITHUB_WEBHOOK_SECRET, else 403 (`webhook_not_configured` when no secret is set, "
                    "`bad_signature` otherwise) and nothing is done. A push is `pushed`, a successful check "
                    "`checks_passed`, a merged pull request `merged`, a successful deployment `deployed`: each is "
                    "sent to the unfinished changes of its branch. 202 when some change was told, 200 when none "
                    "was (a `ping`, an event that means nothing to a change, a branch with no change).",
        request=OpenApiTypes.OBJECT,
        parameters=[
            OpenApiParameter("X-Hub-Signature-256", str, OpenApiParameter.HEADER, required=True,
                             description="`sha256=<hex HMAC of the body>`"),
            OpenApiParameter("X-GitHub-Event", str, OpenApiParameter.HEADER, required=True,
                             description="`push`, `check_suite`, `check_run`, `pull_request`, "
                                         "`deployment_status`, `ping`, ..."),
        ],
        responses={
            200: DeliverySerializer, 202: DeliverySerializer,
            400: OpenApiResponse(ErrorSerializer, description="invalid_input: the body is not a JSON object, or "
                                                              "X-GitHub-Event is missing"),
            403: OpenApiResponse(ErrorSerializer, description="webhook_not_configured or bad_signature"),
            413: ERRORS[413], 415: ERRORS[415],
        },
    )
    def post(self, request: Request) -> Response:
        raw = self._raw_body(request)
        secret = variable(SECRET)
        if not secret:
            raise ApiError(f"This site takes no GitHub webhook: {SECRET} is not set (set it in the environment or "
                           "with `manage.py credentials set`)", code=RemoteCode.WEBHOOK_NOT_CONFIGURED,
                           http_status=status.HTTP_403_FORBIDDEN)
        if not verify_signature(secret, raw, request.headers.get("X-Hub-Signature-256")):
            raise ApiError("The delivery's X-Hub-Signature-256 is missing or is not the body's HMAC with this "
                           f"site's {SECRET}", code=RemoteCode.BAD_SIGNATURE, http_status=status.HTTP_403_FORBIDDEN)
        event = request.headers.get("X-GitHub-Event", "").strip()
        if not event:
            raise invalid_input("X-GitHub-Event is missing: GitHub names every delivery's event",
                                path=["X-GitHub-Event"], issue="missing", issue_code=IssueCode.REQUIRED)
        payload = self._payload(request, raw)
        told: list[dict[str, Any]] = []
        ignored: list[dict[str, Any]] = []
        for topic, facts in ([] if event == "ping" else events_of(event, payload)):
            where = {"topic": topic, "branch": str(facts.get("branch") or ""), "sha": str(facts.get("sha") or "")}
            if topic not in services.TOPICS:
                ignored.append({**where, "reason": f"a change takes {', '.join(services.TOPICS)}, not {topic}"})
                continue
            try:
                runs = services.notify(topic=topic, branch=where["branch"], sha=where["sha"], via="github")
            except SanomaError as err:  # a bad event, or a change that ended meanwhile
                ignored.append({**where, "reason": f"{err.message} ({error_code(err)})"})
                continue
            if runs:
                told.append({**where, "runs": runs})
        answer = DeliverySerializer({"event": event, "told": told, "ignored": ignored}).data
        return Response(answer, status=status.HTTP_202_ACCEPTED if told else status.HTTP_200_OK)

    @staticmethod
    def _raw_body(request: Request) -> bytes:
        """The body as GitHub signed it, within the body limit."""
        limit = body_limit()
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        if length > limit:
            raise too_large(limit)
        try:
            raw: bytes = request.body
        except RequestDataTooBig:
            raise too_large(limit) from None
        if len(raw) > limit:
            raise too_large(limit)
        return raw

    @staticmethod
    def _payload(request: Request, raw: bytes) -> dict[str, Any]:
        media_type = (request.content_type or "").split(";")[0].strip().lower()
        if media_type != "application/json":
            raise ApiError("Set the webhook's content type to application/json: this endpoint reads JSON deliveries",
                           code=ErrorCode.UNSUPPORTED_MEDIA_TYPE, http_status=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE)
        try:
            payload = parse_json(raw, what="The delivery")
        except InvalidInput as err:
            raise ApiError(err.message, code=ErrorCode.INVALID_INPUT, http_status=status.HTTP_400_BAD_REQUEST,
                           data=err.data) from None
        if not isinstance(payload, dict):
            raise invalid_input("The delivery must be a JSON object", path=[], issue="not an object",
                                issue_code=IssueCode.INVALID_TYPE)
        return payload


__all__ = ["ChangeDetailView", "ChangeListView", "GitHubWebhookView", "OpenChangeInput"]
