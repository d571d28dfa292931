"""Who may do what, walked as a matrix: every surface x every action x every actor.

Two runs wait for an approval, both started by alice (who is in the finance group herself):
`named` waits for finance-lead, `group` waits for anyone in finance. The actors are the starter,
the named approver, a member of the approver group, an operator, another staff member, a user in
no group, and no one. Each case asks one surface (the REST API with a token, the admin with a
session, the management commands) for one action on one run, checks the answer against the
rules, and, after every refusal, checks that nothing in the database changed.

The rules: a run is seen by its starter, its approvers and operators, and by no one else, who is
told only that there is no such run; an approver who is not the starter decides; the starter and
operators cancel, withdraw and send messages (`send`); a start reusing a run id the caller cannot
see learns only that it is taken; no one changes a ledger record. For `paused`, a run of the same
workflow started while an operator has the workflow paused is held before its start (so before it
asks for its approval): the pauses list names it to its starter and operators only.

Sandbox runs: a third run, `sandbox`, is a sandbox run alice started from a scenario of the workflow
(on fakes, seeded by the scenario's Given steps), waiting for finance-lead: every action above is
asked of it too, under the same rules as `named` (a sandbox run is seen, decided, cancelled like any
other). `sandbox_start` starts a sandbox run from the scenario asking the run's approver, on each
surface (`POST /api/sandbox-runs`, the desk's "Try in sandbox" page, `manage.py sandbox`): allowed to
whoever may start the workflow, refused to no one here but the signed-out (and, on the desk, to
anyone who is not staff).

Direct calls (`POST /api/calls`, `manage.py call`, the Python `runs.direct_calls.call`) have a world
of their own below (the second half of this module): who may make one, and what each actor gets of
another's.
"""
from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import transaction
from django.test import Client, override_settings
from django_q.models import OrmQ
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import SanomaError
from runs import pausing
from runs.admin import approvals as approvals_admin
from runs.api import views
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.direct_calls import call
from runs.direct_calls.tests.test_direct_calls import hold_money
from runs.engine import pauses as engine_pauses
from runs.models import Approval, DecisionMessage, LedgerRecord, Run, RunMessage
from runs.policies import define_policy
from runs.sandbox.models import SandboxRun
from runs.sandbox.services import start_sandbox
from runs.testing import make_user, resolve_on_fakes
from runs.tests.conftest import Engine
from runs.tests.fixtures import acme

STARTER, APPROVER, GROUP_MEMBER, OPERATOR, STAFF, NOBODY, ANONYMOUS = (
    "alice", "finance-lead", "fiona", "olga", "sam", "nobody", "anonymous")
ACTORS = (STARTER, APPROVER, GROUP_MEMBER, OPERATOR, STAFF, NOBODY, ANONYMOUS)
# The sandbox run's id is made when it starts (`sandbox-matrix-<hex>`): filled in by the world.
RUNS = {"named": "matrix-named", "group": "matrix-group", "sandbox": ""}
APPROVERS = {"named": "finance-lead", "group": "group:finance", "sandbox": "finance-lead"}
# The scenarios a sandbox run is seeded from, by the approver they ask.
SCENARIOS = {"named": "the matrix asks finance-lead", "group": "the matrix asks finance",
             "sandbox": "the matrix asks finance-lead"}
FEATURE = """Feature: The matrix
  Scenario: the matrix asks finance-lead
    When matrix runs with
      | approver | finance-lead |
    And "Pay the invoice" is approved by finance-lead
    Then the run succeeds

  Scenario: the matrix asks finance
    When matrix runs with
      | approver | group:finance |
    And "Pay the invoice" is approved by fiona
    Then the run succeeds
"""

OK, NOT_FOUND, NOT_APPROVER, DENIED, DIFFERS, EXISTS, REFUSED, UNAUTHENTICATED = (
    "ok", "not_found", "not_approver", "denied", "differs", "exists", "refused", "unauthenticated")


class Ask(BaseModel):
    approver: str


def ask(ctx: Any, input: Ask) -> dict[str, str]:
    ok = ctx.approval("Pay the invoice", approver=input.approver)
    return {"by": ok.approved_by}


matrix = define_workflow(name="matrix", input=Ask, uses=["approval"], run=ask)


def sees(actor: str, run: str) -> bool:
    approver = APPROVER if APPROVERS[run] == APPROVER else GROUP_MEMBER
    return actor in (STARTER, OPERATOR, approver)


def expected(action: str, actor: str, run: str) -> str:
    """What the rules say `actor` gets for `action` on the run."""
    if actor == ANONYMOUS:
        return UNAUTHENTICATED
    if action == "change_ledger":
        return REFUSED
    if action == "paused":  # held before its start: no approver has been asked yet
        return OK if actor in (STARTER, OPERATOR) else NOT_FOUND
    if action == "sandbox_start":  # whoever may start the workflow may try it in the sandbox
        return OK
    if action == "start":  # the same workflow and input, with the run's id
        if not sees(actor, run):
            return EXISTS
        return OK if actor == STARTER else DIFFERS
    if not sees(actor, run):
        return NOT_FOUND
    if action == "decide":
        is_approver = actor == (APPROVER if APPROVERS[run] == APPROVER else GROUP_MEMBER)
        return OK if is_approver else NOT_APPROVER  # the starter, though in finance, may not approve
    if action in ("cancel", "withdraw", "send"):
        return OK if actor in (STARTER, OPERATOR) else DENIED
    return OK  # see, list, ledger, result


@pytest.fixture(scope="module")
def shared_world(django_db_setup, django_db_blocker, tmp_path_factory):
    """The two waiting runs and the actors, made once for the module inside a transaction of its own
    that is rolled back when the module ends; each case runs in a savepoint within it (the `world`
    fixture), so what a case writes is gone before the next, as if the world were made afresh."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        with django_db_blocker.unblock(), override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
            root = tmp_path_factory.mktemp("matrix-root")
            (root / "scenarios").mkdir()
            (root / "scenarios" / "matrix.feature").write_text(FEATURE, encoding="utf-8")
            engine = Engine(resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[matrix], root=root)))
            set_config(engine.config)
            engine_pauses.forget()
            make_user(STARTER, perms=["runs.start_workflow"])  # as the engine_for fixture makes her
            make_user(STARTER, groups=["finance", "staff"], perms=["runs.start_workflow"])
            make_user(APPROVER, perms=["runs.start_workflow"])
            make_user(GROUP_MEMBER, groups=["finance"], perms=["runs.start_workflow"])
            make_user(OPERATOR, perms=["runs.start_workflow", "runs.view_any_run", "runs.operate_runs", "runs.pause"])
            make_user(STAFF, groups=["staff"], perms=["runs.start_workflow"])
            make_user(NOBODY, perms=["runs.start_workflow"])
            get_user_model().objects.filter(username__in=[STARTER, APPROVER, GROUP_MEMBER, OPERATOR, STAFF]).update(
                is_staff=True)
            for run, run_id in RUNS.items():
                if run != "sandbox":
                    engine.start("matrix", {"approver": APPROVERS[run]}, by=STARTER, run_id=run_id)
            RUNS["sandbox"] = start_sandbox(scenario=SCENARIOS["sandbox"], started_by=STARTER).id
            engine.drain()
            assert Run.objects.filter(status="waiting").count() == 3
        yield engine
    finally:
        set_config(None)
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def world(shared_world, db, monkeypatch):
    # No worker runs here: an allowed decision stays pending (202, or the admin's message sent), so
    # waiting the usual 5 s for a worker to apply it would only wait.
    monkeypatch.setattr(views, "DECIDE_WAIT_SECONDS", 0.05)
    monkeypatch.setattr(approvals_admin, "DECIDE_WAIT_SECONDS", 0.05)
    set_config(shared_world.config)
    engine_pauses.forget()  # a pause cached by an earlier case (hold_a_run) went with its savepoint
    assert Run.objects.filter(status="waiting").count() == 3
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield shared_world
    set_config(None)


def held(run: str) -> str:
    return f"{RUNS[run]}-held"


def hold_a_run(engine: Any, run: str) -> None:
    """The operator pauses the workflow; alice starts one more run of it, which the pause holds."""
    pausing.pause(kind="workflow", target="matrix", reason="the matrix", by=OPERATOR)
    engine.start("matrix", {"approver": APPROVERS[run]}, by=STARTER, run_id=held(run))
    engine.drain()
    assert Run.objects.get(pk=held(run)).status == "queued"


def snapshot() -> dict[str, Any]:
    return {
        "runs": sorted(Run.objects.values_list("id", "status", "updated_at")),
        "records": sorted(LedgerRecord.objects.values_list("record_id", "actor", "body")),
        "approvals": sorted(Approval.objects.values_list("approval_id", "run_id", "status", "decided_by")),
        "messages": DecisionMessage.objects.count(),
        "run_messages": RunMessage.objects.count(),
        "tasks": OrmQ.objects.count(),
        "sandboxes": sorted(SandboxRun.objects.values_list("run_id", "scenario")),
    }


# ---- the REST API -------------------------------------------------------------------------------


def api_client(actor: str) -> APIClient:
    client = APIClient()
    if actor != ANONYMOUS:
        token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username=actor))
        client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def api_answer(action: str, actor: str, run: str) -> str:
    client, run_id = api_client(actor), RUNS[run]
    base = f"/api/runs/{run_id}"
    if action == "see":
        response = client.get(base)
    elif action == "list":
        response = client.get("/api/runs?limit=500")
        if response.status_code == 200:
            listed = {item["run_id"] for item in response.json()["results"]}
            return OK if run_id in listed else NOT_FOUND
    elif action == "ledger":
        response = client.get(f"{base}/ledger")
    elif action == "result":
        response = client.get(f"{base}/result?timeout=0")
        if response.status_code == 409 and response.json().get("code") == "run_running":
            return OK  # seen, and still waiting
    elif action == "decide":
        response = client.post(f"{base}/approvals", {"decision": "approve"}, format="json")
        if response.status_code == 202:
            return OK
    elif action == "withdraw":
        response = client.post(f"{base}/approvals/approval-1/withdraw", {}, format="json")
    elif action == "cancel":
        response = client.post(f"{base}/cancel", {"reason": "matrix"}, format="json")
    elif action == "send":
        response = client.post(f"{base}/messages", {"topic": "note", "payload": {"from": actor}}, format="json")
    elif action == "start":
        response = client.post("/api/runs", {"workflow": "matrix", "input": {"approver": APPROVERS[run]},
                                             "run_id": run_id}, format="json")
        if response.status_code in (200, 201):
            return OK if response.json()["run_id"] == run_id else "other"
    elif action == "sandbox_start":
        response = client.post("/api/sandbox-runs", {"scenario": SCENARIOS[run], "workflow": "matrix"}, format="json")
        if response.status_code == 201:
            return OK if SandboxRun.objects.filter(pk=response.json()["run_id"], run__started_by=actor).exists() \
                else "not a sandbox run of theirs"
    elif action == "paused":
        response = client.get("/api/pauses?limit=500")
        if response.status_code == 200:
            named = {run_id for pause in response.json()["results"] for run_id in pause["held_runs"]}
            return OK if held(run) in named else NOT_FOUND
    elif action == "change_ledger":
        answers = [client.put(f"{base}/ledger", {}, format="json").status_code,
                   client.delete(f"{base}/ledger").status_code,
                   client.patch(f"{base}/ledger", {}, format="json").status_code]
        if all(status in (401, 403) for status in answers):
            return UNAUTHENTICATED
        return REFUSED if all(status >= 400 for status in answers) else "allowed"
    else:
        raise AssertionError(action)
    return _api_status(response)


def _api_status(response: Any) -> str:
    code = response.json().get("code") if response.status_code >= 400 else None
    if response.status_code in (200, 201):
        return OK
    if response.status_code in (401, 403) and code == "not_authenticated":
        return UNAUTHENTICATED
    if response.status_code == 404 and code == "run_not_found":
        return NOT_FOUND
    if response.status_code == 403 and code == "not_approver":
        return NOT_APPROVER
    if response.status_code == 403 and code == "permission_denied":
        return DENIED
    if response.status_code == 400 and code == "invalid_input":
        return DIFFERS
    if response.status_code == 409 and code == "run_exists":
        return EXISTS
    return f"{response.status_code} {code}"


# ---- the admin ----------------------------------------------------------------------------------

ADMIN_ACTIONS = ("see", "list", "ledger", "decide", "withdraw", "cancel", "change_ledger", "paused", "sandbox_start")


def admin_client(actor: str) -> Client:
    client = Client()
    if actor != ANONYMOUS:
        client.force_login(get_user_model().objects.get(username=actor))
    return client


def admin_answer(action: str, actor: str, run: str) -> str:
    client, run_id = admin_client(actor), RUNS[run]
    page = f"/admin/runs/run/{quote(run_id)}/change/"
    if actor in (ANONYMOUS, NOBODY):  # not staff: the admin asks them to log in, whatever they ask
        response = client.get(page)
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        return UNAUTHENTICATED
    if action == "sandbox_start":
        before = set(SandboxRun.objects.values_list("run_id", flat=True))
        response = client.post("/admin/runs/run/sandbox/?workflow=matrix", {"_workflow": "matrix",
                                                                           "_scenario": SCENARIOS[run]})
        new = set(SandboxRun.objects.filter(run__started_by=actor).values_list("run_id", flat=True)) - before
        if response.status_code == 302 and len(new) == 1:
            return OK
        return DENIED if response.status_code == 400 and "permission_denied" in response.content.decode() \
            else f"{response.status_code}"
    approval = Approval.objects.get(run_id=run_id)
    if action == "see":
        response = client.get(page)
        if response.status_code == 200 and run_id in response.content.decode():
            return OK
        assert response.status_code in (302, 404), response.status_code
        return NOT_FOUND
    if action == "list":
        listed = client.get("/admin/runs/run/").content.decode()
        return OK if run_id in listed else NOT_FOUND
    if action == "ledger":
        listed = client.get("/admin/runs/ledgerrecord/").content.decode()
        return OK if run_id in listed else NOT_FOUND
    if action == "paused":
        response = client.get("/admin/runs/pause/")
        assert response.status_code == 200, response.status_code
        return OK if held(run) in response.content.decode() else NOT_FOUND
    if action in ("decide", "withdraw"):
        url = f"/admin/runs/approval/{approval.pk}/change/"
        shown = client.get(url)
        if shown.status_code != 200:
            return NOT_FOUND
        button = "_approve" if action == "decide" else "_withdraw"
        client.post(url, {button: "1", "note": ""})
        approval.refresh_from_db()
        sent = DecisionMessage.objects.filter(approval=approval, by=actor).exists()
        if action == "decide":
            return OK if sent else NOT_APPROVER
        return OK if approval.status == "withdrawn" else DENIED
    if action == "cancel":
        if client.get(page).status_code != 200:
            return NOT_FOUND
        client.post(f"/admin/runs/run/{quote(run_id)}/cancel/", {"confirmed": "yes", "reason": "matrix"})
        return OK if Run.objects.get(pk=run_id).status == "cancelled" else DENIED
    if action == "change_ledger":
        record = LedgerRecord.objects.filter(run_id=run_id).order_by("seq").first()
        assert record is not None
        change = client.post(f"/admin/runs/ledgerrecord/{record.pk}/change/", {"actor": "mallory"})
        delete = client.post(f"/admin/runs/ledgerrecord/{record.pk}/delete/", {"post": "yes"})
        return REFUSED if change.status_code in (302, 403, 404) and delete.status_code in (302, 403, 404) else "allowed"
    raise AssertionError(action)


def admin_expected(action: str, actor: str, run: str) -> str:
    if actor in (ANONYMOUS, NOBODY):
        return UNAUTHENTICATED
    return expected(action, actor, run)


# ---- the commands -------------------------------------------------------------------------------

COMMAND_ACTIONS = ("see", "list", "decide", "cancel", "start", "send", "sandbox_start")


def command_answer(action: str, actor: str, run: str) -> str:
    run_id, out = RUNS[run], io.StringIO()
    try:
        if action == "see":
            call_command("show", run_id, "--as", actor, stdout=out)
        elif action == "list":
            call_command("runs", "--as", actor, "--limit", "500", stdout=out)
            return OK if run_id in out.getvalue() else NOT_FOUND
        elif action == "decide":
            call_command("decide", run_id, "approve", "--as", actor, "--timeout", "0", stdout=out)
        elif action == "cancel":
            call_command("cancel", run_id, "--reason", "matrix", "--as", actor, stdout=out)
        elif action == "send":
            call_command("send", run_id, "note", "--json", "{}", "--as", actor, stdout=out)
        elif action == "start":
            call_command("start", "matrix", "--as", actor, "--run-id", run_id, "--set",
                         f"approver={APPROVERS[run]}", stdout=out)
        elif action == "sandbox_start":
            call_command("sandbox", SCENARIOS[run], "--workflow", "matrix", "--as", actor, stdout=out)
            started = out.getvalue().split(" as run ")[1].split(",")[0]
            return OK if SandboxRun.objects.filter(pk=started, run__started_by=actor).exists() else out.getvalue()
        else:
            raise AssertionError(action)
    except CommandError as err:
        text = str(err)
        for needle, answer in (("or you may not see it", NOT_FOUND), ("cannot approve", NOT_APPROVER),
                               ("not the approver", NOT_APPROVER), ("not in group", NOT_APPROVER),
                               ("may not cancel", DENIED), ("may not send messages", DENIED),
                               ("already exists; use another run id", EXISTS),
                               ("already exists with a different", DIFFERS)):
            if needle in text:
                return answer
        return f"error: {text}"
    return OK


def command_expected(action: str, actor: str, run: str) -> str:
    return expected(action, actor, run)


# ---- the matrix ---------------------------------------------------------------------------------

API_ACTIONS = ("see", "list", "ledger", "result", "decide", "withdraw", "cancel", "send", "start", "change_ledger",
               "paused", "sandbox_start")
CASES = (
    [pytest.param("api", a, who, run, id=f"api-{a}-{who}-{run}")
     for a in API_ACTIONS for who in ACTORS for run in RUNS]
    + [pytest.param("admin", a, who, run, id=f"admin-{a}-{who}-{run}")
       for a in ADMIN_ACTIONS for who in ACTORS for run in RUNS]
    + [pytest.param("command", a, who, run, id=f"command-{a}-{who}-{run}")
       for a in COMMAND_ACTIONS for who in ACTORS if who != ANONYMOUS for run in RUNS]
)
ANSWER = {"api": api_answer, "admin": admin_answer, "command": command_answer}
EXPECTED = {"api": expected, "admin": admin_expected, "command": command_expected}
# Actions that change the database when they are allowed: everything else must leave it as it was.
WRITES = {"decide", "withdraw", "cancel", "send", "sandbox_start"}


@pytest.mark.parametrize("surface, action, actor, run", CASES)
def test_who_may_do_what(world, surface, action, actor, run):
    if action == "paused":
        hold_a_run(world, run)
    before = snapshot()
    want = EXPECTED[surface](action, actor, run)
    got = ANSWER[surface](action, actor, run)
    assert got == want, f"{actor} asking the {surface} to {action} the {run} run: got {got}, want {want}"
    if not (want == OK and action in WRITES):
        after = snapshot()
        assert after == before, f"{actor}'s {action} on the {surface} changed the database"


def test_the_matrix_covers_every_surface_action_and_actor():
    assert len(CASES) == 3 * (len(API_ACTIONS) * 7 + len(ADMIN_ACTIONS) * 7 + len(COMMAND_ACTIONS) * 6)
    assert {run for _, _, _, run in (c.values for c in CASES)} == {"named", "group", "sandbox"}


# ==== direct calls ================================================================================
#
# Who may make a direct call, and what each actor gets of another's: every surface (the API with a
# token, `manage.py call`, the Python `runs.direct_calls.call`) x every action x every actor, in a
# world of its own. Alice made two direct calls: `held` (a refund the policy holds for finance-lead)
# and `made` (a read). The rules: who may start the `call` workflow may call (others are
# `permission_denied`, and no one signed out gets anything); a key names its caller's call, so asking
# again with alice's key is her answer, and "taken by another caller's call" (409 `run_exists`) for
# anyone else, even one who may see her run (its approver, an operator); the call's run is seen by its
# starter, its approver and operators. After every refusal nothing in the database changed and the
# vendor was not called. Here `nobody-at-all` has no permission at all, and `vera` sees every run but may
# start none.

VIEWER = "vera"  # sees every run (runs.view_any_run) and may start none
# Someone with no permission at all (the run matrix's `nobody` may start workflows; its world lives
# as long as this module, so this one has a name of its own).
CALL_NOBODY = "nobody-at-all"
CALL_ACTORS = (STARTER, APPROVER, OPERATOR, STAFF, VIEWER, CALL_NOBODY, ANONYMOUS)
CALLS = {"held": ("acme.order.refund", {"order_id": "2", "amount": 700}),
         "made": ("acme.order.get", {"order_id": "1"})}
HELD = "held"
MAY_CALL = (STARTER, APPROVER, OPERATOR, STAFF)


def sees_call(actor: str, which: str) -> bool:
    return actor in (STARTER, OPERATOR, VIEWER) or (actor == APPROVER and which == "held")


def call_expected(action: str, actor: str, which: str) -> str:
    if actor == ANONYMOUS:
        return UNAUTHENTICATED
    if action == "see":
        return OK if sees_call(actor, which) else NOT_FOUND
    if actor not in MAY_CALL:
        return DENIED
    if action == "call":  # a call of one's own, no key
        return OK if which == "made" else HELD
    # "repeat": alice's call again, with her key
    if actor == STARTER:
        return OK if which == "made" else HELD
    return EXISTS


@pytest.fixture(scope="module")
def shared_call_world(django_db_setup, django_db_blocker):
    """The call matrix's actors and alice's two calls (one made, one held), made once for the module
    inside a transaction of its own rolled back when the module ends; each case runs in a savepoint
    within it (the `call_world` fixture), as `shared_world` does for the runs' matrix."""
    with django_db_blocker.unblock():
        outer = transaction.atomic()
        outer.__enter__()
    try:
        with django_db_blocker.unblock(), override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
            engine = Engine(resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[],
                                                          policy=define_policy(hold_money, version="v1"))))
            set_config(engine.config)
            make_user(STARTER, perms=["runs.start_workflow"])  # as the engine_for fixture makes her
            make_user(APPROVER, perms=["runs.start_workflow"])
            make_user(OPERATOR, perms=["runs.start_workflow", "runs.view_any_run", "runs.operate_runs"])
            make_user(STAFF, groups=["staff"], perms=["runs.start_workflow"])
            make_user(VIEWER, perms=["runs.view_any_run"])
            make_user(CALL_NOBODY)
            for which, (op, payload) in CALLS.items():
                call(op=op, input=payload, by=STARTER, key=which)
            assert Run.objects.get(pk="call-held").status == "waiting"
            assert Run.objects.get(pk="call-made").status == "finished"
        yield engine
    finally:
        set_config(None)
        with django_db_blocker.unblock():
            transaction.set_rollback(True)
            outer.__exit__(None, None, None)


@pytest.fixture
def call_world(shared_call_world, db):
    set_config(shared_call_world.config)
    engine_pauses.forget()
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield shared_call_world
    set_config(None)


def call_snapshot(engine: Any) -> dict[str, Any]:
    return {
        "runs": sorted(Run.objects.values_list("id", "status", "updated_at")),
        "records": LedgerRecord.objects.count(),
        "approvals": sorted(Approval.objects.values_list("approval_id", "run_id", "status")),
        "tasks": OrmQ.objects.count(),
        "vendor": len(engine.fake.calls),
    }


def _key(action: str, actor: str, which: str) -> str | None:
    return which if action == "repeat" else None


def call_api_answer(action: str, actor: str, which: str) -> str:
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


def call_command_answer(action: str, actor: str, which: str) -> str:
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


def call_python_answer(action: str, actor: str, which: str) -> str:
    op, payload = CALLS[which]
    try:
        answer = call(op=op, input=payload, by=actor, key=_key(action, actor, which))
    except SanomaError as err:
        return {"permission_denied": DENIED, "run_exists": EXISTS, "invalid_input": DIFFERS}.get(err.code or "",
                                                                                                  str(err))
    return OK if answer.outcome == "made" else HELD


CALL_ANSWER = {"api": call_api_answer, "command": call_command_answer, "python": call_python_answer}
CALL_ACTIONS = {"api": ("call", "repeat", "see"), "command": ("call", "repeat"), "python": ("call", "repeat")}
CALL_CASES = [pytest.param(surface, action, actor, which, id=f"call-{surface}-{action}-{actor}-{which}")
              for surface, actions in CALL_ACTIONS.items() for action in actions
              for actor in CALL_ACTORS if surface == "api" or actor != ANONYMOUS for which in CALLS]


@pytest.mark.parametrize("surface, action, actor, which", CALL_CASES)
def test_who_may_call_and_what_they_get(call_world, surface, action, actor, which):
    before = call_snapshot(call_world)
    got = CALL_ANSWER[surface](action, actor, which)
    assert got == call_expected(action, actor, which), (surface, action, actor, which)
    if got not in (OK, HELD) or action in ("repeat", "see"):
        assert call_snapshot(call_world) == before  # a refusal, a repeat and a look change nothing


def test_the_call_matrix_covers_every_surface_action_and_actor():
    assert len(CALL_CASES) == 2 * len(CALL_ACTORS) * 3 + 2 * (len(CALL_ACTORS) - 1) * 2 * 2
    assert {call_expected(str(a), str(actor), str(w)) for _, a, actor, w in (c.values for c in CALL_CASES)} == {
        OK, HELD, DENIED, EXISTS, NOT_FOUND, UNAUTHENTICATED}
