"""The API against its own OpenAPI schema: schemathesis reads `/api/schema/`, generates requests for
every operation (valid and invalid ones, a bounded number each) and sends them to the live Django
app through WSGI, signed in with a superuser's token, with runs to find (one waiting on an approval,
one finished). Each answer must not be a server error, and its status code, content type and body
must be ones the schema documents for that operation."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core import signals
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from runs.api import views
from runs.testing import make_user
from runs.tests.test_api import ask_flow, money_needs_bob, nap_flow, refund_flow

CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
# Per operation; about 40 operations: the whole file stays well under a minute on SQLite.
MAX_EXAMPLES = 12


@pytest.fixture
def live_app(engine_for, monkeypatch, tmp_path) -> Iterator[Any]:
    """Django's own WSGI app, in this test's transaction: the request signals that would close the
    test's database connection after each request are off, as Django's test client has them."""
    engine = engine_for(refund_flow, ask_flow, nap_flow, policy=money_needs_bob, root=tmp_path)
    engine.run("refund", {"order_id": "1", "amount": 10}, run_id="refund-1")  # held for bob
    engine.run("nap", run_id="nap.1:x@y~2")
    monkeypatch.setattr(views, "DECIDE_WAIT_SECONDS", 0.05)
    signals.request_started.disconnect(close_old_connections)
    signals.request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        signals.request_started.connect(close_old_connections)
        signals.request_finished.connect(close_old_connections)


@pytest.fixture
def token(db) -> str:
    root = make_user("root", superuser=True)
    return Token.objects.get_or_create(user=root)[0].key


def failures_of(operation: Any, mode: GenerationMode, headers: dict[str, str]) -> list[str]:
    """Up to MAX_EXAMPLES generated requests of one kind for one operation: what went wrong, one line each."""
    found: list[str] = []

    @given(operation.as_strategy(generation_mode=mode))
    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck), phases=[Phase.explicit, Phase.generate])
    def send(case: Any) -> None:
        try:
            case.call_and_validate(headers=headers, checks=CHECKS)
        except (Exception, BaseExceptionGroup) as err:  # failed checks come as a FailureGroup
            request = f"{case.method} {case.formatted_path} query={case.query!r} body={case.body!r}"[:300]
            for failure in getattr(err, "exceptions", [err]):
                said = " ".join(str(failure).split())[:300]
                found.append(f"{operation.label} ({mode}): {type(failure).__name__}: {said} <- {request}")

    try:
        send()
    except Unsatisfiable:
        # Nothing in the operation can be made invalid (no parameter, no body): no negative case exists.
        assert mode == GenerationMode.NEGATIVE, f"{operation.label}: no valid request could be generated"
    return found


def test_every_answer_is_documented_and_none_is_a_server_error(live_app: Any, token: str) -> None:
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", live_app)
    headers = {"Authorization": f"Token {token}"}
    operations = [result.ok() for result in schema.get_all_operations()]  # type: ignore[union-attr]
    assert len(operations) >= 30, [op.label for op in operations]
    failures: list[str] = []
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            failures += failures_of(operation, mode, headers)
    assert failures == [], "\n".join(sorted(set(failures)))
