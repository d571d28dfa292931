"""Who may make a direct call, and what each actor gets of another's, walked as a matrix: every
surface (the API with a token, the command, the Python function) x every action x every actor.

Alice made two direct calls: `held` (a refund the policy holds for finance-lead) and `made` (a
read). The rules: who may start the `call` workflow may call (others are `permission_denied`, and
no one signed out gets anything); a key names its caller's call, so asking again with alice's key
is her answer, a refusal naming what differs for someone who may see her run (its approver, an
operator), and only "taken" for anyone else; the call's run is seen by its starter, its approver
and operators. After every refusal nothing in the database changed and the vendor was not called.
"""
from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django_q.models import OrmQ
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import SanomaError
from runs.direct_calls import call
from runs.direct_calls.tests.test_direct_calls import hold_money
from runs.models import Approval, LedgerRecord, Run
from runs.policies import define_policy
from runs.testing import make_user

STARTER, APPROVER, OPERATOR, STAFF, VIEWER, NOBODY, ANONYMOUS = (
    "alice", "finance-lead", "olga", "sam", "vera", "nobody", "anonymous")
ACTORS = (STARTER, APPROVER, OPERATOR, STAFF, VIEWER, NOBODY, ANONYMOUS)
CALLS = {"held": ("acme.order.refund", {"order_id": "2", "amount": 700}),
         "made": ("acme.order.get", {"order_id": "1"})}
OK, HELD, DENIED, DIFFERS, EXISTS, NOT_FOUND, UNAUTHENTICATED = (
    "ok", "held", "denied", "differs", "exists", "not_found", "unauthenticated")
MAY_CALL = (STARTER, APPROVER, OPERATOR, STAFF)


def sees(actor: str, which: str) -> bool:
    return actor in (STARTER, OPERATOR, VIEWER) or (actor == APPROVER and which == "held")


def expected(action: str, actor: str, which: str) -> str:
    if actor == ANONYMOUS:
        return UNAUTHENTICATED
    if action == "see":
        return OK if sees(actor, which) else NOT_FOUND
    if actor not in MAY_CALL:
        return DENIED
    if action == "call":  # a call of one's own, no key
        return OK if which == "made" else HELD
    # "repeat": alice's call again, with her key
    if actor == STARTER:
        return OK if which == "made" else HELD
    return DIFFERS if sees(actor, which) else EXISTS


@pytest.fixture
def world(engine_for):
    engine = engine_for(policy=define_policy(hold_money, version="v1"))
    make_user(APPROVER, perms=["runs.start_workflow"])
    make_user(OPERATOR, perms=["runs.start_workflow", "runs.view_any_run", "runs.operate_runs"])
    make_user(STAFF, groups=["staff"], perms=["runs.start_workflow"])
    make_user(VIEWER, perms=["runs.view_any_run"])
    make_user(NOBODY)
    for which, (op, payload) in CALLS.items():
        call(op=op, input=payload, by=STARTER, key=which)
    assert Run.objects.get(pk="call-held").status == "waiting"
    assert Run.objects.get(pk="call-made").status == "finished"
    return engine


def snapshot(engine: Any) -> dict[str, Any]:
    return {
        "runs": sorted(Run.objects.values_list("id", "status", "updated_at")),
        "records": LedgerRecord.objects.count(),
        "approvals": sorted(Approval.objects.values_list("approval_id", "run_id", "status")),
        "tasks": OrmQ.objects.count(),
        "vendor": len(engine.fake.calls),
    }


def _key(action: str, actor: str, which: str) -> str | None:
    return which if action == "repeat" else None


def api_answer(action: str, actor: str, which: str) -> str:
    client = APIClient()
    if actor != ANONYMOUS:
        token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username=actor))
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    if action == "see":
        response = client.get(f"/api/runs/call-{which}")
    else:
        op, payload = CALLS[which]
        body = {"op": op, "input": payload, "key": _key(action, actor, which)}
        response = client.post("/api/calls", data=json.dumps(body), content_type="application/json")
    code = str(response.json().get("code")) if response.status_code >= 400 else ""
    if response.status_code == 200:
        return OK
    if response.status_code == 202 and response.json()["outcome"] == "held":
        return HELD
    return {(401, "not_authenticated"): UNAUTHENTICATED, (403, "permission_denied"): DENIED,
            (400, "invalid_input"): DIFFERS, (409, "run_exists"): EXISTS,
            (404, "run_not_found"): NOT_FOUND}.get((response.status_code, code), f"{response.status_code} {code}")


def command_answer(action: str, actor: str, which: str) -> str:
    op, payload = CALLS[which]
    key = _key(action, actor, which)
    args = [op, "--json", json.dumps(payload), "--as", actor, *(["--key", key] if key else [])]
    try:
        call_command("call", *args, stdout=io.StringIO(), stderr=io.StringIO())
    except SystemExit as exit_:
        return HELD if exit_.code == 3 else f"exit {exit_.code}"
    except CommandError as err:
        text = str(err)
        for needle, answer in (("[permission_denied]", DENIED), ("[run_exists]", EXISTS),
                               ("[invalid_input]", DIFFERS)):
            if needle in text:
                return answer
        return text
    return OK


def python_answer(action: str, actor: str, which: str) -> str:
    op, payload = CALLS[which]
    try:
        answer = call(op=op, input=payload, by=actor, key=_key(action, actor, which))
    except SanomaError as err:
        return {"permission_denied": DENIED, "run_exists": EXISTS, "invalid_input": DIFFERS}.get(err.code or "",
                                                                                                  str(err))
    return OK if answer.outcome == "made" else HELD


ANSWER = {"api": api_answer, "command": command_answer, "python": python_answer}
ACTIONS = {"api": ("call", "repeat", "see"), "command": ("call", "repeat"), "python": ("call", "repeat")}
CASES = [(surface, action, actor, which) for surface, actions in ACTIONS.items() for action in actions
         for actor in ACTORS if surface == "api" or actor != ANONYMOUS for which in CALLS]


@pytest.mark.parametrize("surface, action, actor, which", CASES)
def test_who_may_call_and_what_they_get(world, surface, action, actor, which):
    before = snapshot(world)
    got = ANSWER[surface](action, actor, which)
    assert got == expected(action, actor, which), (surface, action, actor, which)
    if got not in (OK, HELD) or action in ("repeat", "see"):
        assert snapshot(world) == before  # a refusal, a repeat and a look change nothing


def test_the_matrix_covers_every_surface_action_and_actor():
    assert len(CASES) == 2 * len(ACTORS) * 3 + 2 * (len(ACTORS) - 1) * 2 * 2
    assert {expected(a, actor, w) for _, a, actor, w in CASES} == {OK, HELD, DENIED, DIFFERS, EXISTS, NOT_FOUND,
                                                                  UNAUTHENTICATED}
