"""The credentials' API: `GET /api/credentials` (statuses, never values), `PUT /api/credentials/<NAME>`
(`{"value": "..."}`) and `DELETE /api/credentials/<NAME>`.

Reading takes an operator, `credentials.view_credential` or `credentials.manage_credentials`; setting and
clearing take `credentials.manage_credentials` (superusers hold both). A value is never answered,
logged or repeated in an error. Errors have the API's one shape, with these codes:
`unknown_credential` (404: no connector declares the name; the declared names are listed),
`invalid_input` (400: no value, an empty one, or one the connector's check refuses),
`permission_denied` (403), `secrets_key_missing` (503: SANOMA_SECRETS_KEY is not set).
"""
from __future__ import annotations

from dataclasses import asdict
from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from changes.credentials import selectors, services
from changes.credentials.declared import VariableStatus
from changes.credentials.errors import CredentialCode
from connectors.errors import IssueCode, SanomaError
from runs.api.base import ApiError, SanomaAPIView, errors, invalid_input, me
from runs.api.pagination import Page
from runs.api.serializers import ErrorSerializer, StrictCharField, StrictSerializer

# What the credentials' refusals mean over HTTP, beside the API's own codes (runs.api.base).
STATUS_OF_CODE: dict[str, int] = {
    CredentialCode.UNKNOWN_CREDENTIAL: status.HTTP_404_NOT_FOUND,
    CredentialCode.SECRETS_KEY_MISSING: status.HTTP_503_SERVICE_UNAVAILABLE,
}


class CredentialStatusSerializer(serializers.Serializer):
    connector = serializers.CharField()
    name = serializers.CharField()
    description = serializers.CharField()
    # Plain text, not choices: drf-spectacular would name its enum after runs' `status` choices.
    status = serializers.CharField(
        help_text="`set` (the environment or the store gives it a value), `missing` (required, or named by a data "
                  "file's secret(...), and nothing gives it a value), `not_set` (optional and unset: the driver gets "
                  "its default, if any) or `invalid` (its value fails the connector's check, or its stored value "
                  "cannot be decrypted).")
    problem = serializers.CharField(
        allow_null=True, help_text="Why it is invalid (never the value), or which data files need a missing one.")
    # `source` is also a DRF field's own attribute; here it is the response's key (where the value comes from).
    source = serializers.CharField(  # type: ignore[assignment]
        help_text="Where the value comes from: `environment`, `stored`, `default` or `none`.")
    needed_by = serializers.ListField(
        child=serializers.CharField(),
        help_text="The data files naming it with secret(...): `resources/webhooks.py:5 (orders_hook)`.")
    used_by = serializers.ListField(
        child=serializers.CharField(),
        help_text="Every connector reading it (`connector` names them all, `github, sanoma`): one value serves them.")
    descriptions = serializers.ListField(
        child=serializers.CharField(),
        help_text="Each connector's description (`github: ...`) when more than one reads it; else empty.")


class CredentialChangedSerializer(serializers.Serializer):
    name = serializers.CharField()
    action = serializers.CharField(help_text="`set` or `cleared`.")
    by = serializers.CharField()
    was_stored = serializers.BooleanField(help_text="A value was stored before.")
    environment_wins = serializers.BooleanField(
        help_text="The site's environment sets the name: where it is set, it wins over the stored value.")
    credentials = CredentialStatusSerializer(many=True)


class CredentialValueSerializer(StrictSerializer):
    """The body's shape, for the schema; the view checks it itself (its messages show the body to send)."""

    value = StrictCharField(help_text="The value, stored encrypted; never answered.")


CREDENTIAL_ERRORS = {
    404: OpenApiResponse(ErrorSerializer, description="unknown_credential: no connector declares the name"),
    503: OpenApiResponse(ErrorSerializer, description="secrets_key_missing: SANOMA_SECRETS_KEY is not set"),
}


def _statuses(statuses: list[VariableStatus]) -> list[dict[str, Any]]:
    return [asdict(s) for s in statuses]


def _refusal(err: SanomaError) -> SanomaError:
    """A credentials refusal with its HTTP status; the API's own codes go through as they are."""
    if err.code in STATUS_OF_CODE:
        return ApiError(err.message, code=err.code, http_status=STATUS_OF_CODE[err.code], data=err.data)
    return err


def _changed(changed: services.Changed) -> dict[str, Any]:
    return {"name": changed.name, "action": changed.action, "by": changed.by, "was_stored": changed.was_stored,
            "environment_wins": changed.environment_wins, "credentials": _statuses(changed.statuses)}


class CredentialListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="credentials_list",
        summary="Every variable connectors' drivers need: status and source, never a value",
        responses={200: CredentialStatusSerializer(many=True), **errors(400, 403), 503: CREDENTIAL_ERRORS[503]},
    )
    def get(self, request: Request) -> Response:
        try:
            selectors.check_can_view(me(request))
            statuses = _statuses(selectors.credential_statuses())
        except SanomaError as err:
            raise _refusal(err) from None
        return self.paged(request, statuses, lambda page: page)


class CredentialDetailView(SanomaAPIView):
    @extend_schema(
        operation_id="credential_set",
        summary="Store a variable's value, encrypted (the environment, where set, still wins)",
        request=CredentialValueSerializer,
        responses={200: CredentialChangedSerializer, **errors(400, 403, 413, 415), **CREDENTIAL_ERRORS},
    )
    def put(self, request: Request, name: str) -> Response:
        body = self.body(request)
        extra = sorted(set(body) - {"value"})
        if extra:
            raise invalid_input(f"Unexpected field {extra[0]}: send {{\"value\": \"...\"}}", path=[extra[0]],
                                issue="unexpected field", issue_code=IssueCode.UNEXPECTED)
        value = body.get("value")
        if not isinstance(value, str):
            raise invalid_input("value must be text: send {\"value\": \"...\"}", path=["value"],
                                issue="required text",
                                issue_code=IssueCode.REQUIRED if value is None else IssueCode.INVALID_TYPE)
        try:
            changed = services.set_credential(name=name, value=value, by=me(request))
        except SanomaError as err:
            raise _refusal(err) from None
        return Response(_changed(changed))

    @extend_schema(
        operation_id="credential_clear",
        summary="Remove a variable's stored value",
        responses={200: CredentialChangedSerializer, **errors(403), **CREDENTIAL_ERRORS},
    )
    def delete(self, request: Request, name: str) -> Response:
        try:
            changed = services.clear_credential(name=name, by=me(request))
        except SanomaError as err:
            raise _refusal(err) from None
        return Response(_changed(changed))
