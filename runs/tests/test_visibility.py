"""Visibility first, everywhere: a caller who may not see a run learns nothing about it.

Every service and selector taking a run id asks `runs.selectors.visible_run` before any other
check, so a run that is hidden from the caller and a run that does not exist are answered alike:
`run_not_found`, "No run X, or you may not see it" (not `not_approver` naming its approver, not
`run_ended` for a finished one). Starting with a run id someone else holds is `run_exists`, with
nothing about what differs. Every refusal writes nothing.
"""
from __future__ import annotations

import json

import pytest
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import SanomaError, error_code
from runs import selectors, services
from runs.approvals import selectors as approval_selectors
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.models import Approval, DecisionMessage, LedgerRecord, Run
from runs.testing import make_user
from runs.tests.fixtures import REFUND


class AskInput(BaseModel):
    approver: str = "bob"


def ask_then_refund(ctx, input):
    ok = ctx.approval("Refund order 1", approver=input.approver)
    ctx.acme.order.refund({"order_id": "1", "amount": 10})
    return {"by": ok.approved_by}


asking = define_workflow(name="asking", input=AskInput, uses=[REFUND, "approval"], run=ask_then_refund)
plain = define_workflow(name="plain", run=lambda ctx, input: {"ok": True})


@pytest.fixture
def people(alice):
    class People:
        bob = make_user("bob")  # the approver
        stranger = make_user("stranger")  # in no group, no permission
        mallory = make_user("mallory", perms=["runs.start_workflow"])  # starts runs of her own
        olga = make_user("olga", perms=["runs.view_any_run", "runs.operate_runs", "runs.start_workflow"])

    return People


def snapshot() -> tuple:
    """Everything a refusal must leave as it was."""
    return (
        list(Run.objects.order_by("id").values_list("id", "status", "updated_at")),
        list(Approval.objects.order_by("id").values_list("id", "status", "decided_by", "refused")),
        DecisionMessage.objects.count(),
        LedgerRecord.objects.count(),
    )


def not_found(call) -> SanomaError:
    with pytest.raises(SanomaError) as caught:
        call()
    return caught.value


def hidden(run_id: str, who: str) -> dict:
    """Each service and selector taking a run id, called by `who`: its refusal as (code, message)."""
    calls = {
        "decide": lambda: approvals.decide(run_id=run_id, decision="approve", by=who, timeout=0),
        "decide a named approval": lambda: approvals.decide(run_id=run_id, approval_id="approval-1",
                                                            decision="approve", by=who, timeout=0),
        "decide, not a decision": lambda: approvals.decide(run_id=run_id, decision="maybe", by=who, timeout=0),
        "withdraw": lambda: approvals.withdraw(run_id=run_id, by=who),
        "cancel": lambda: services.cancel(run_id=run_id, by=who, reason="no longer needed"),
        "result": lambda: selectors.result(run_id=run_id, viewer=who, timeout=0),
        "ledger": lambda: selectors.ledger_of(run_id=run_id, viewer=who),
        "approvals": lambda: approval_selectors.approvals_of(run_id=run_id, viewer=who),
        "get": lambda: selectors.visible_run(run_id=run_id, viewer=who),
    }
    out = {}
    for name, call in calls.items():
        err = not_found(call)
        out[name] = (error_code(err), str(err), err.data)
    return out


def expected(run_id: str) -> tuple:
    return ("run_not_found", f"No run {run_id}, or you may not see it", {"run_id": run_id})


def test_a_run_hidden_from_the_caller_is_run_not_found_on_every_service(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    assert run.status == "waiting"
    before = snapshot()

    for who in ("stranger", "mallory", "nobody-at-all"):
        answers = hidden(run.id, who)
        assert answers == {name: expected(run.id) for name in answers}, who
        assert selectors.get_run(run_id=run.id, viewer=who) is None
    assert snapshot() == before
    # Before: decide answered `not_approver` with data {"approver": "bob"}, telling the run exists.


def test_a_hidden_run_reads_exactly_like_a_missing_one(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    hidden_answers = hidden(run.id, "stranger")
    missing_answers = hidden("no-such-run", "stranger")
    for name, (code, message, data) in hidden_answers.items():
        assert (code, message.replace(run.id, "X"), {**data, "run_id": "X"}) == (
            missing_answers[name][0], missing_answers[name][1].replace("no-such-run", "X"),
            {**missing_answers[name][2], "run_id": "X"},
        ), name


def test_a_finished_hidden_run_is_run_not_found_not_run_ended(engine_for, people):
    engine = engine_for(plain)
    run = engine.run("plain")
    assert run.status == "finished"
    before = snapshot()
    answers = hidden(run.id, "stranger")
    assert answers == {name: expected(run.id) for name in answers}
    assert snapshot() == before
    # Its starter still hears that it ended.
    with pytest.raises(SanomaError) as caught:
        services.cancel(run_id=run.id, by="alice", reason="no longer needed")
    assert error_code(caught.value) == "run_ended"
    with pytest.raises(SanomaError) as caught:
        approvals.withdraw(run_id=run.id, by="alice")
    assert error_code(caught.value) == "run_ended"


def test_visibility_is_checked_before_the_input(engine_for, people):
    """An invalid decision or note on a hidden run is still run_not_found: nothing else is checked first."""
    engine = engine_for(asking)
    run = engine.run("asking")
    bad = ({"decision": "maybe"}, {"decision": "approve", "note": 12}, {"decision": "approve", "message_id": ""})
    for kwargs in bad:
        err = not_found(lambda kwargs=kwargs: approvals.decide(run_id=run.id, by="stranger", timeout=0, **kwargs))
        assert (error_code(err), str(err)) == expected(run.id)[:2], kwargs
    # Someone who may see the run hears what is wrong with the input.
    err = not_found(lambda: approvals.decide(run_id=run.id, decision="maybe", by="bob", timeout=0))
    assert error_code(err) == "invalid_input"


def test_those_who_may_see_a_run_still_see_and_act(engine_for, people):
    engine = engine_for(asking)
    run = engine.run("asking")
    for who in ("alice", "bob", "olga"):
        assert selectors.visible_run(run_id=run.id, viewer=who).id == run.id
        assert [a["id"] for a in approval_selectors.approvals_of(run_id=run.id, viewer=who)] == ["approval-1"]
        assert selectors.ledger_of(run_id=run.id, viewer=who)
    # An operator who is not the approver is refused as such: they may see the run.
    err = not_found(lambda: approvals.decide(run_id=run.id, decision="approve", by="olga", timeout=0))
    assert error_code(err) == "not_approver" and err.data["approver"] == "bob"
    # The approver decides.
    approvals.decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished" and run.result == {"by": "bob"}


def test_an_operator_cancels_and_withdraws_runs_they_did_not_start(engine_for, people):
    engine = engine_for(asking)
    first = engine.run("asking")
    second = engine.run("asking")
    state = approvals.withdraw(run_id=first.id, by="olga")
    assert state["status"] == "withdrawn" and state["decided_by"] == "olga"
    assert services.cancel(run_id=second.id, by="olga", reason="no longer needed").status == "cancelled"


# -- starting with a run id that is taken ---------------------------------------------------------------


def test_starting_with_someone_elses_run_id_says_only_that_it_exists(engine_for, people):
    engine = engine_for(asking, plain)
    run = engine.start("asking", {"approver": "bob"}, by="alice", run_id="R-1")
    before = snapshot()
    for workflow, input in (("asking", {"approver": "bob"}), ("asking", {"approver": "carol"}), ("plain", {})):
        with pytest.raises(SanomaError) as caught:
            engine.start(workflow, input, by="mallory", run_id=run.id)
        err = caught.value
        assert error_code(err) == "run_exists"
        assert str(err) == "Run R-1 already exists; use another run id"
        assert err.data == {"run_id": "R-1"}  # no `differs`: nothing about alice's input
    assert snapshot() == before
    # Before: invalid_input "Run R-1 already exists with a different startedBy" (or input, workflow), an
    # oracle for alice's input.


def test_starting_again_with_a_run_id_one_may_see_stays_idempotent(engine_for, people):
    engine = engine_for(asking, plain)
    run = engine.start("asking", {"approver": "bob"}, by="alice", run_id="R-2")
    again, created = services.start_or_get(workflow="asking", input={"approver": "bob"}, started_by="alice",
                                           run_id="R-2")
    assert (again.id, created) == (run.id, False)
    with pytest.raises(SanomaError) as caught:
        engine.start("asking", {"approver": "carol"}, by="alice", run_id="R-2")
    assert error_code(caught.value) == "invalid_input" and caught.value.data["differs"] == ["input"]
    with pytest.raises(SanomaError) as caught:
        engine.start("asking", {"approver": "bob"}, by="olga", run_id="R-2")  # an operator may see it
    assert error_code(caught.value) == "invalid_input" and caught.value.data["differs"] == ["startedBy"]
    assert Run.objects.count() == 1


# -- the API answers the same ---------------------------------------------------------------------------


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_the_api_answers_404_run_not_found_for_a_hidden_run(engine_for, people):
    engine = engine_for(asking, plain)
    waiting = engine.run("asking")
    finished = engine.run("plain")
    stranger = client_for(people.stranger)
    before = snapshot()
    for run in (waiting, finished):
        body = {"error": f"No run {run.id}, or you may not see it", "code": "run_not_found"}
        for method, url, data in (
            ("post", f"/api/runs/{run.id}/approvals", {"decision": "approve"}),
            ("post", f"/api/runs/{run.id}/approvals/approval-1", {"decision": "approve"}),
            ("post", f"/api/runs/{run.id}/approvals/approval-1/withdraw", {}),
            ("post", f"/api/runs/{run.id}/cancel", {}),
            ("get", f"/api/runs/{run.id}", None),
            ("get", f"/api/runs/{run.id}/ledger", None),
            ("get", f"/api/runs/{run.id}/result?timeout=0", None),
            ("get", f"/api/runs/{run.id}/approvals", None),
        ):
            if method == "post":
                response = stranger.post(url, data=json.dumps(data), content_type="application/json")
            else:
                response = stranger.get(url)
            assert (response.status_code, response.json()) == (404, body), (method, url)
    assert snapshot() == before


def test_the_api_answers_409_run_exists_for_someone_elses_run_id(engine_for, people):
    engine = engine_for(asking)
    engine.start("asking", {"approver": "bob"}, by="alice", run_id="R-3")
    before = snapshot()
    response = client_for(people.mallory).post(
        "/api/runs", data=json.dumps({"workflow": "asking", "input": {"approver": "carol"}, "run_id": "R-3"}),
        content_type="application/json",
    )
    assert (response.status_code, response.json()) == (
        409, {"error": "Run R-3 already exists; use another run id", "code": "run_exists"})
    assert snapshot() == before
