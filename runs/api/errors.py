"""Errors as the API answers them: `{error, code?, issues?, approver?}` with the status a code means.

Every view of the API uses `exception_handler` below (through `SanomaAPIView`), so a refusal from a
service, a request DRF could not parse and an unexpected failure all come back in one shape. An
unexpected failure is logged with its traceback and answered `500 {"error": "Something went wrong"}`:
its message never reaches the client.
"""
from __future__ import annotations

import logging
from typing import Any

from django.core.exceptions import PermissionDenied as DjangoPermissionDenied
from django.http import Http404
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import set_rollback

from connectors.errors import SanomaError, describe_issues, error_code

log = logging.getLogger("sanoma.api")

SOMETHING_WENT_WRONG = "Something went wrong"

# The HTTP status each refusal code means. A code not listed here escaping a view is unexpected: 500.
STATUS_OF_CODE: dict[str, int] = {
    "invalid_input": status.HTTP_400_BAD_REQUEST,
    "permission_denied": status.HTTP_403_FORBIDDEN,
    "not_approver": status.HTTP_403_FORBIDDEN,
    "run_not_found": status.HTTP_404_NOT_FOUND,
    "no_pending_approval": status.HTTP_404_NOT_FOUND,
    "workflow_not_found": status.HTTP_404_NOT_FOUND,
    "already_decided": status.HTTP_409_CONFLICT,
    "run_ended": status.HTTP_409_CONFLICT,
    "run_running": status.HTTP_409_CONFLICT,
    "run_exists": status.HTTP_409_CONFLICT,
    "too_large": status.HTTP_413_REQUEST_ENTITY_TOO_LARGE,
    # The site's config cannot be read (say, no root folder for the data files): not the caller's fault.
    "config_invalid": status.HTTP_503_SERVICE_UNAVAILABLE,
}


class ApiError(SanomaError):
    """A refusal the API itself makes, with the HTTP status to answer it with."""

    def __init__(self, message: str, *, code: str, http_status: int, data: dict[str, Any] | None = None) -> None:
        super().__init__(message, code=code, data=data)
        self.http_status = http_status


def invalid_input(message: str, *, path: list[Any] | None = None, issue: str | None = None,
                  issue_code: str = "invalid", http_status: int = status.HTTP_400_BAD_REQUEST) -> ApiError:
    data = {}
    if path is not None:
        data["issues"] = [{"path": path, "message": issue or message, "code": issue_code}]
    return ApiError(message, code="invalid_input", http_status=http_status, data=data)


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
            return [{"path": list(path), "message": str(item), "code": getattr(item, "code", "invalid")}
                    for item in detail]
        issues = []
        for index, item in enumerate(detail):
            issues += issues_from_drf(item, (*path, index))
        return issues
    return [{"path": list(path), "message": str(detail), "code": getattr(detail, "code", "invalid")}]


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
        body = error_body(f"Invalid request: {_describe(issues)}", code="invalid_input", data={"issues": issues})
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.ParseError):
        return Response(error_body(f"The body is not valid JSON: {exc.detail}", code="invalid_input",
                                   data={"issues": [{"path": [], "message": str(exc.detail), "code": "parse_error"}]}),
                        status=status.HTTP_400_BAD_REQUEST)
    if isinstance(exc, exceptions.UnsupportedMediaType):
        return Response(error_body("Send the body as JSON, with Content-Type: application/json",
                                   code="unsupported_media_type"), status=status.HTTP_415_UNSUPPORTED_MEDIA_TYPE)
    if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
        return Response(error_body(str(exc.detail), code="not_authenticated"), status=exc.status_code)
    if isinstance(exc, (exceptions.PermissionDenied, DjangoPermissionDenied)):
        message = str(exc.detail) if isinstance(exc, exceptions.APIException) else "You may not do that"
        return Response(error_body(message, code="permission_denied"), status=status.HTTP_403_FORBIDDEN)
    if isinstance(exc, (exceptions.NotFound, Http404)):
        return Response(error_body("Not found", code="not_found"), status=status.HTTP_404_NOT_FOUND)
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
