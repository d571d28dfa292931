"""Every input the API reads is strict: walked from the URLconf, as the OpenAPI schema is made.

drf-spectacular's generator lists every endpoint and method; for each, the serializer of its body
and those of its query parameters are the inputs (a view checks its input with
`SanomaAPIView.checked`, which takes only a `StrictSerializer`). Each must refuse a field it does
not know, naming it, and each text field (a list's items too) must refuse a JSON number or
boolean instead of turning it into text.
"""
from __future__ import annotations

from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.settings import spectacular_settings
from rest_framework import serializers
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.testing import make_user

UNKNOWN = "zz_not_a_field"


def api_inputs() -> dict[type[serializers.Serializer], list[str]]:
    """Every input serializer class of the API, with the endpoints that read it."""
    generator = SchemaGenerator()
    generator._initialise_endpoints()
    found: dict[type[serializers.Serializer], list[str]] = {}
    for path, _regex, method, view in generator._get_paths_and_endpoints():
        view.request = spectacular_settings.GET_MOCK_REQUEST(method, path, view, None)
        schema = view.schema
        schema.method, schema.path = method.upper(), path
        for declared in [schema.get_request_serializer(), *schema.get_override_parameters()]:
            cls = type(declared) if isinstance(declared, serializers.BaseSerializer) else declared
            if isinstance(cls, type) and issubclass(cls, serializers.Serializer):
                found.setdefault(cls, []).append(f"{method} {path}")
    return found


INPUTS = api_inputs()


def text_fields(serializer: serializers.Serializer) -> list[tuple[str, Any]]:
    """(field name, a number where the field wants text) for each text field, lists of text too."""
    out: list[tuple[str, Any]] = []
    for name, field in serializer.fields.items():
        if field.read_only:
            continue
        if isinstance(field, (serializers.CharField, serializers.ChoiceField)):
            out += [(name, 1001), (name, 12.5), (name, True)]
        elif isinstance(field, serializers.ListField) and isinstance(
                field.child, (serializers.CharField, serializers.ChoiceField)):
            out += [(name, [1001]), (name, [False])]
    return out


def test_the_walk_finds_the_inputs_of_every_surface():
    names = {cls.__name__ for cls in INPUTS}
    assert {"StartRunInput", "MessageInput", "DecisionInput", "PauseInput", "UnpauseInput", "ForkInput",
            "RerunInput", "ResolveInput", "CancelInput", "RunFilterInput", "RunListQuery", "ResultQuery",
            "RecordQuery", "OpenChangeInput", "ScenarioQuery", "CredentialValueSerializer"} <= names, names


@pytest.mark.parametrize("cls", sorted(INPUTS, key=lambda c: c.__name__), ids=lambda c: c.__name__)  # type: ignore[attr-defined]
def test_every_api_input_refuses_unknown_fields_and_numbers_for_text(cls: type[serializers.Serializer]):
    where = ", ".join(INPUTS[cls])
    unknown = cls(data={UNKNOWN: "x"})
    assert not unknown.is_valid(), f"{cls.__name__} ({where}) accepts an unknown field"
    assert UNKNOWN in unknown.errors, f"{cls.__name__} ({where}) does not name the unknown field: {unknown.errors}"
    assert unknown.errors[UNKNOWN][0].code == "unknown_field"
    for name, value in text_fields(cls()):
        loose = cls(data={name: value})
        assert not loose.is_valid() and name in loose.errors, \
            f"{cls.__name__}.{name} ({where}) accepts {value!r} for text: {loose.errors}"


@pytest.fixture
def client(db: Any) -> APIClient:
    user = make_user("alice", perms=["runs.start_workflow"])
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return api


@pytest.mark.parametrize("path, body, field, says", [
    ("/api/runs/r-1/messages", {"topic": 42, "payload": {}}, "topic", "must be text (a JSON string), not a number"),
    ("/api/runs/r-1/messages", {"topic": "t", "payload": {}, "id": 7}, "id",
     "must be text (a JSON string), not a number"),
    ("/api/pauses", {"kind": "connector", "target": "shop", "reason": "down", "until": "noon"}, "until",
     "unknown field"),
    ("/api/runs/r-1/fork", {"from_step": 1, "dry": True}, "dry", "unknown field"),
    ("/api/runs/r-1/in-doubt", {"happened": False, "why": "x"}, "why", "unknown field"),
])
def test_the_api_refuses_a_loose_body_naming_the_field(client: APIClient, path: str, body: dict[str, Any],
                                                      field: str, says: str):
    response = client.post(path, body, format="json")
    assert response.status_code == 400, response.content
    answer = response.json()
    assert answer["code"] == "invalid_input"
    assert field in answer["error"] and says in answer["error"], answer
    assert [issue["path"] for issue in answer["issues"]] == [[field]], answer
