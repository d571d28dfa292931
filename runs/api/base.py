"""What every view of the JSON API stands on: `SanomaAPIView`, its strict JSON parser, and the error
table (the one shape every refusal and failure is answered in, with the status a code means).

Errors as the API answers them: `{error, code?, issues?, approver?}`. Every view of the API uses
`exception_handler` below (through `SanomaAPIView`), so a refusal from a service, a request DRF
could not parse and an unexpected failure all come back in one shape. An unexpected failure is
logged with its traceback and answered `500 {"error": "Something went wrong"}`: its message never
reaches the client.
"""
from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import OpenApiResponse
from rest_framework import exceptions, status
from rest_framework.parsers import JSONParser
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView, set_rollback

from connectors.errors import ErrorCode, IssueCode, SanomaError, describe_issues, error_code
from runs import selectors
from runs.api import serializers as s
from runs.approvals.permissions import request_principal
from runs.errors import RunCode
from runs.models import Run
from runs.validation import check_run_id, parse_json

if TYPE_CHECKING:
    from runs.api.pagination import LedgerCursor, Page

log = logging.getLogger("sanoma.api")

SOMETHING_WENT_WRONG = "Something went wrong"

# The HTTP status each refusal code means. A code not listed here escaping a view is unexpected: 500.
# Keyed by the members of the codes' registry (`connectors.errors.all_codes()`): the API's own and the
# runs'; an app above adds its own codes' statuses where it answers them (the credentials' API).
STATUS_OF_CODE: dict[str, int] = {
    ErrorCode.INVALID_INPUT: status.HTTP_400_BAD_REQUEST,
    ErrorCode.PERMISSION_DENIED: status.HTTP_403_FORBIDDEN,
    RunCode.NOT_APPROVER: status.HTTP_403_FORBIDDEN,
    RunCode.RUN_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RunCode.NO_PENDING_APPROVAL: status.HTTP_404_NOT_FOUND,
    RunCode.WORKFLOW_NOT_FOUND: status.HTTP_404_NOT_FOUND,
    RunCode.ALREADY_DECIDED: status.HTTP_409_CONFLICT,
    RunCode.RUN_ENDED: status.HTTP_409_CONFLICT,
    RunCode.RUN_RUNNING: status.HTTP_409_CONFLICT,
    RunCode.RUN_EXISTS: status.HTTP_409_CONFLICT,
    ErrorCode.TOO_LARGE: status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    # The site's config cannot be read (say, no root folder for the data files): not the caller's fault.
    ErrorCode.CONFIG_INVALID: status.HTTP_503_SERVICE_UNAVAILABLE,
}


class ApiError(SanomaError):
    """A refusal the API itself makes, with the HTTP status to answer it with."""

    def __init__(self, message: str, *, code: str, http_status: int, data: dict[str, Any] | None = None) -> None:
        super().__init__(message, code=code, data=data)
        self.http_status = http_status


def invalid_input(message: str, *, path: list[Any] | None = None, issue: str | None = None,
                  issue_code: str = IssueCode.INVALID, http_status: int = status.HTTP_400_BAD_REQUEST) -> ApiError:
    data = {}
    if path is not None:
        data["issues"] = [{"path": path, "message": issue or message, "code": issue_code}]
    return ApiError(message, code=ErrorCode.INVALID_INPUT, http_status=http_status, data=data)


def error_body(message: str, *, code: str | None = None, data: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"error": message}
    if code:
        body["code"] = code
    data = data or {}
    if isinstance(data.get("issues"), list):
        body["issues"] = data["issues"]
    if isinstance(data.get("approver"), str):
        body["approver"] = data["approver"]
    if isinstance(data.get("differs"), list):
        body["differs"] = data["differs"]
    return body


def issues_from_drf(detail: Any, path: tuple[Any, ...] = ()) -> list[dict[str, Any]]:
    """A serializer's errors (`{field: [ErrorDetail]}`, nested) as `{path, message, code}` issues."""
    if isinstance(detail, dict):
        issues = []
        for key, value in detail.items():
            where = path if key == "non_field_errors" else (*path, key)
            issues += issues_from_drf(value, where)
        return issues
    if isinstance(detail, list):
        if all(isinstance(item, (str, exceptions.ErrorDetail)) for item in detail):
            return [{"path": list(path), "message": str(item), "code": getattr(item, "code", IssueCode.INVALID)}
                    for item in detail]
        issues = []
        for index, item in enumerate(detail):
            issues += issues_from_drf(item, (*path, index))
        return issues
    return [{"path": list(path), "message": str(detail), "code": getattr(detail, "code", IssueCode.INVALID)}]


def _describe(issues: list[dict[str, Any]]) -> str:
    return describe_issues(issues, whole="(body)")


def response_for(exc: BaseException) -> Response:
    """The response an exception raised by an API view gets."""
    if isinstance(exc, ApiError):
        return Response(error_body(exc.message, code=exc.code, data=exc.data), status=exc.http_status)
    if isinstance(exc, SanomaError):
        code = error_code(exc)
        if code in STATUS_OF_CODE:
            return Response(error_body(exc.message, code=code, data=exc.data), status=STATUS_OF_CODE[code])
        log.error("API: a refusal with no HTTP meaning escaped (code %r): %s", exc.code, exc, exc_info=exc)
        return Response({"error": SOMETHING_WENT_WRONG}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)
    if isinstance(exc, exceptions.ValidationError):
        issues = issues_from_drf(exc.detail)
        body = error_body(f"Invalid request: {_describe(issues)}", code=ErrorCode.INVALID_INPUT,
                          data={"issues": issues})
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ParseError):
        return Response(error_body(f"The body is not valid JSON: {exc.detail}", code=ErrorCode.INVALID_INPUT,
                                   data={"issues": [{"path": [], "message": str(exc.detail),
                                                     "code": IssueCode.PARSE_ERROR}]}),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return Response(error_body("Send the body as JSON, with Content-Type: application/json",
                                   code=ErrorCode.UNSUPPORTED_MEDIA_TYPE),
                        status=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE)
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return Response(error_body(str(exc.detail), code=ErrorCode.NOT_AUTHENTICATED), status=exc.status_code)
    if isinstance(exc, (exceptions.PermissionDenied, DjangoPermissionDenied)):
        message = str(exc.detail) if isinstance(exc, exceptions.APIException) else "You may not do that"
        return Response(error_body(message, code=ErrorCode.PERMISSION_DENIED), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, (exceptions.NotFound, Http404)):
        return Response(error_body("Not found", code=ErrorCode.NOT_FOUND), status=status.HTTP_404_NOT_FOUND)
    if isinstance(exc, exceptions.APIException):  # method not allowed, not acceptable, throttled, ...
        return Response(error_body(str(exc.detail), code=exc.default_code), status=exc.status_code)
    log.error("API: unexpected error", exc_info=exc)
    return Response({"error": SOMETHING_WENT_WRONG}, status=status.HTTP_500_INTERNAL_SERVER_ERROR)


def exception_handler(exc: BaseException, context: dict[str, Any]) -> Response:
    """DRF's hook: every exception a view raises becomes a response; none is left uncaught."""
    response = response_for(exc)
    set_rollback()
    auth_header = getattr(exc, "auth_header", None)  # set by DRF on 401s: says which scheme to use
    if auth_header:
        response["WWW-Authenticate"] = auth_header
    return response


# ---- the one parser: JSON read strictly, within the body limit, judged before any view sees it --


def body_limit() -> int:
    return int(settings.SANOMA_MAX_BODY_BYTES)


def too_large(limit: int) -> ApiError:
    return ApiError(f"The body is larger than {limit} bytes (SANOMA_MAX_BODY_BYTES)", code=ErrorCode.TOO_LARGE,
                    http_status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)


class StrictJSONParser(JSONParser):
    """UTF-8 JSON, no NaN or Infinity, at most 64 levels deep, no NUL or lone surrogate in any key or
    value; a refusal is `400 invalid_input` naming the path (413 `too_large` over the limit)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = body_limit()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise too_large(limit)
        return parse_json(raw, what="The body")


# ---- the base view and its documented error responses --------------------------------------------

ERRORS = {
    400: OpenApiResponse(s.ErrorSerializer, description="invalid_input: the body or query is wrong (see issues)"),
    401: OpenApiResponse(s.ErrorSerializer, description="not authenticated"),
    403: OpenApiResponse(s.ErrorSerializer, description="permission_denied or not_approver"),
    404: OpenApiResponse(s.ErrorSerializer, description="run_not_found, no_pending_approval or workflow_not_found"),
    409: OpenApiResponse(s.ErrorSerializer, description="already_decided, run_ended, run_running or run_exists"),
    413: OpenApiResponse(s.ErrorSerializer, description="too_large: the body is over SANOMA_MAX_BODY_BYTES"),
    415: OpenApiResponse(s.ErrorSerializer, description="the body is not JSON"),
}


def errors(*codes: int) -> dict[int, OpenApiResponse]:
    return {code: ERRORS[code] for code in (401, *codes)}


class SanomaAPIView(APIView):
    """JSON in, JSON out, one error shape, nothing cached, nothing sniffed."""

    renderer_classes = [JSONRenderer]
    parser_classes = [StrictJSONParser]
    # A list endpoint names its paginator here (the schema reads it from there too) and answers
    # through `paged`.
    pagination_class: type[Page] | type[LedgerCursor] | None = None

    def paged(self, request: Request, items: Sequence[Any] | QuerySet[Any],
              serialize: Callable[[list[Any]], Any]) -> Response:
        """One page of `items` in DRF's paginated shape, each item as `serialize` makes the page."""
        assert self.pagination_class is not None, f"{type(self).__name__} names no pagination_class"
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(items, request, view=self)
        return paginator.get_paginated_response(serialize(list(page or [])))

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        """After authentication: a run id in the path that breaks the run-id rule is 400, stating it."""
        super().initial(request, *args, **kwargs)
        if "run_id" in kwargs:
            check_run_id(kwargs["run_id"], path=["run_id"])

    def get_exception_handler(self) -> Callable[[BaseException, dict[str, Any]], Response]:
        return exception_handler

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        response = super().finalize_response(request, response, *args, **kwargs)
        response["Cache-Control"] = "no-store"
        response["X-Content-Type-Options"] = "nosniff"
        return response

    def body(self, request: Request, *, required: bool = True) -> dict[str, Any]:
        """The JSON object sent. A body must be JSON (else 415); a required one must be there.

        No body at all is no body whatever its Content-Type says (`curl -X POST` sends text/plain)."""
        try:
            length = int(request.META.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        media_type = (request.content_type or "").split(";")[0].strip().lower()
        if required or length:
            if media_type != "application/json" and not media_type.endswith("+json"):
                raise exceptions.UnsupportedMediaType(media_type or "(none)")
        if not length:
            if required:
                raise invalid_input("The body is empty: send a JSON object", path=[], issue="empty body",
                                    issue_code=IssueCode.REQUIRED)
            return {}
        data = request.data
        if not isinstance(data, dict):
            raise invalid_input("The body must be a JSON object", path=[], issue="not an object",
                                issue_code=IssueCode.INVALID_TYPE)
        return data

    @staticmethod
    def checked(serializer_class: type[s.StrictSerializer], data: Any) -> dict[str, Any]:
        serializer = serializer_class(data=data)
        serializer.is_valid(raise_exception=True)
        return dict(serializer.validated_data)

    @staticmethod
    def visible_run(request: Request, run_id: str) -> Run:
        run = selectors.get_run(run_id=run_id, viewer=me(request))
        if run is None:
            raise selectors.run_not_found(run_id)
        return run


me = request_principal
