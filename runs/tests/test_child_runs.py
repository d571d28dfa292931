"""Child runs: `ctx.start_run(workflow, input)` and `ctx.wait_run(run_id, timeout=)`.

Runs advance through the in-process drain (the worker's engine without a cluster); deadlines move
with the runtime's clock. The real-worker crash test lives with the worker's tests in `wakeups`.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import ConfigError, SanomaError, error_code
from runs import services
from runs.approvals.services import decide
from runs.authoring import SanomaConfig, define_workflow
from runs.config.resolution import resolve_config
from runs.engine import clock
from runs.models import Run, RunStatus, Step
from runs.policies.python_policies import allow, approve, define_policy, deny
from runs.tests.fixtures import GET, REFUND

# -- workflows --------------------------------------------------------------------------------------


class Order(BaseModel):
    order_id: str


def look_up(ctx, input: Order):
    order = ctx.acme.order.get({"order_id": input.order_id})
    return {"total": order.total}


lookup = define_workflow(name="lookup", input=Order, uses=[GET], run=look_up)


def refund_it(ctx, input: Order):
    refunded = ctx.acme.order.refund({"order_id": input.order_id, "amount": 1})
    return {"refund": refunded.refund_id}


refund = define_workflow(name="refund", input=Order, uses=[REFUND], run=refund_it)


def wait_for_word(ctx, input):
    return ctx.wait_message("go")


waiter = define_workflow(name="waiter", uses=["wait_message"], run=wait_for_word)


def one_child(ctx, input: Order):
    child = ctx.start_run("lookup", {"order_id": input.order_id})
    return {"child": child, "got": ctx.wait_run(child)}


parent = define_workflow(name="parent", input=Order, uses=["start_run", "wait_run"], run=one_child)


def refund_child(ctx, input: Order):
    return ctx.wait_run(ctx.start_run("refund", {"order_id": input.order_id}))


refund_parent = define_workflow(name="refund-parent", input=Order, uses=["start_run", "wait_run"], run=refund_child)


def waiting_child(ctx, input):
    return ctx.wait_run(ctx.start_run("waiter"))


wait_parent = define_workflow(name="wait-parent", uses=["start_run", "wait_run"], run=waiting_child)


def five_children(ctx, input):
    ids = [ctx.start_run("lookup", {"order_id": order}) for order in ("1", "2", "1", "2", "1")]
    return ctx.all([lambda child=child: ctx.wait_run(child) for child in ids])


fan_out = define_workflow(name="fan-out", uses=["start_run", "wait_run", "all"], run=five_children)


class Timeout(BaseModel):
    minutes: int = 5


def timed_child(ctx, input: Timeout):
    return ctx.wait_run(ctx.start_run("waiter"), timeout=timedelta(minutes=input.minutes))


timed_parent = define_workflow(name="timed-parent", input=Timeout, uses=["start_run", "wait_run"], run=timed_child)


def named_child(ctx, input: Order):
    return ctx.wait_run(ctx.start_run("lookup", {"order_id": input.order_id}, run_id=f"lookup-of-{input.order_id}"))


named_parent = define_workflow(name="named-parent", input=Order, uses=["start_run", "wait_run"], run=named_child)


def caught_denial(ctx, input):
    try:
        ctx.start_run("lookup", {"order_id": "1"})
    except SanomaError as err:
        return {"refused": error_code(err)}
    return {"refused": None}


caught_parent = define_workflow(name="caught-parent", uses=["start_run"], run=caught_denial)

EVERYTHING = (lookup, refund, waiter, parent, refund_parent, wait_parent, fan_out, timed_parent, named_parent,
              caught_parent)


@pytest.fixture
def engine(engine_for):
    return engine_for(*EVERYTHING)


def refused(fn, *args, **kwargs) -> SanomaError:
    with pytest.raises(SanomaError) as caught:
        fn(*args, **kwargs)
    return caught.value


# -- starting and waiting -------------------------------------------------------------------------


def test_a_parent_starts_a_child_as_its_starter_and_gets_its_output(engine):
    run = engine.run("parent", {"order_id": "2"}, by="alice")
    assert (run.status, run.result) == (RunStatus.FINISHED, {"child": f"{run.id}.1", "got": {"total": 5000}})
    child = Run.objects.get(pk=f"{run.id}.1")
    assert (child.parent_id, child.started_by, child.workflow, child.input, child.status) == (
        run.id, "alice", "lookup", {"order_id": "2"}, RunStatus.FINISHED)
    assert list(run.children.values_list("id", flat=True)) == [child.id]
    [started] = engine.records(run, "run.child_started")
    assert (started["op"], started["child"], started["workflow"], started["input"], started["decision"]["kind"]) == (
        "sanoma.run.start", child.id, "lookup", {"order_id": "2"}, "allow")
    [ended] = engine.records(run, "run.child_ended")
    assert (ended["child"], ended["status"], ended["output"]) == (child.id, "finished", {"total": 5000})
    assert engine.records(child, "run.started")[0]["parent"] == run.id


def test_a_parent_waits_durably_and_the_childs_end_wakes_it(engine):
    run = engine.run("wait-parent")
    child = Run.objects.get(parent=run)
    run.refresh_from_db()
    assert (run.status, run.waiting_for, run.wake_at, run.lease_owner) == (RunStatus.WAITING, "run", None, "")
    services.send_message(run_id=child.id, topic="go", payload={"ok": 1}, by="alice")
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"ok": 1})


def test_a_childs_failure_reaches_the_parent_with_its_code(engine_for):
    money_denied = define_policy(
        lambda call: deny("no refunds today") if call.effect == "money" else allow(), version="d1")
    engine = engine_for(*EVERYTHING, policy=money_denied)
    run = engine.run("refund-parent", {"order_id": "1"})
    child = Run.objects.get(parent=run)
    assert child.error is not None and (child.status, child.error["code"]) == (RunStatus.FAILED, "policy_denied")
    assert run.status == RunStatus.FAILED
    assert run.error["code"] == "policy_denied"
    assert run.error["data"]["child"] == child.id and "no refunds today" in run.error["message"]
    [ended] = engine.records(run, "run.child_ended")
    assert (ended["status"], ended["error"]["code"]) == ("failed", "policy_denied")


def test_ctx_all_waits_for_five_children(engine):
    run = engine.run("fan-out")
    assert run.status == RunStatus.FINISHED
    assert run.result == [{"total": 100}, {"total": 5000}, {"total": 100}, {"total": 5000}, {"total": 100}]
    assert run.children.count() == 5
    groups = [r["group"]["index"] for r in engine.records(run, "run.child_ended")]
    assert groups == [0, 1, 2, 3, 4]


def test_a_replayed_parent_starts_no_second_child(engine):
    run = engine.start("wait-parent")
    for _ in range(4):  # every advance replays the body from the top
        engine.drain()
        services.send_message(run_id=run.id, topic="poke", payload={}, by="alice")  # wakes it: another replay
    assert Run.objects.filter(parent=run).count() == 1
    assert len(engine.records(run, "run.child_started")) == 1


def test_a_given_run_id_names_the_child_and_a_taken_one_is_run_exists(engine):
    run = engine.run("named-parent", {"order_id": "1"})
    assert run.result == {"total": 100} and Run.objects.get(pk="lookup-of-1").parent_id == run.id
    again = engine.run("named-parent", {"order_id": "1"})
    assert (again.status, again.error["code"]) == (RunStatus.FAILED, "run_exists")
    assert Run.objects.filter(pk="lookup-of-1").count() == 1 and not again.children.exists()


# -- deadlines ---------------------------------------------------------------------------------------


def test_a_wait_for_a_child_times_out_with_wait_timed_out(engine):
    run = engine.run("timed-parent", {"minutes": 5})
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "run") and run.wake_at is not None
    clock.advance(timedelta(minutes=6))
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "wait_timed_out")
    assert run.error["data"]["child"] == f"{run.id}.1"
    assert Run.objects.get(pk=f"{run.id}.1").status == RunStatus.WAITING  # the child goes on: it was not cancelled


# -- cancelling ----------------------------------------------------------------------------------------


def test_cancelling_the_parent_cancels_its_unfinished_children(engine):
    run = engine.run("wait-parent")
    child = Run.objects.get(parent=run)
    services.cancel(run_id=run.id, by="alice", reason="no longer needed")
    child.refresh_from_db()
    run.refresh_from_db()
    assert (run.status, child.status) == (RunStatus.CANCELLED, RunStatus.CANCELLED)
    [record] = engine.records(child, "run.cancelled")
    assert (record["by"], record["because"]) == ("alice", f"its parent run {run.id} was cancelled")
    assert error_code(refused(services.send_message, run_id=child.id, topic="go", payload={}, by="alice")) == (
        "run_ended")


def test_cancelling_a_child_fails_the_waiting_parent_with_run_cancelled(engine):
    run = engine.run("wait-parent")
    child = Run.objects.get(parent=run)
    services.cancel(run_id=child.id, by="alice", reason="no longer needed")
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED  # woken in the cancel's transaction
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.error["code"], run.error["data"]["child"]) == (RunStatus.FAILED, "run_cancelled", child.id)


# -- the policy ----------------------------------------------------------------------------------------


def test_the_policy_sees_starting_a_child_and_a_denial_starts_nothing(engine_for):
    seen = []

    def no_children(call):
        seen.append((call.op["id"], call.effect, call.target, call.input))
        return deny("no child runs") if call.op["id"] == "sanoma.run.start" else allow()

    engine = engine_for(*EVERYTHING, policy=define_policy(no_children, version="c1"))
    run = engine.run("caught-parent")
    assert (run.status, run.result) == (RunStatus.FINISHED, {"refused": "policy_denied"})
    assert seen == [("sanoma.run.start", "write", f"{run.id}.1",
                     {"workflow": "lookup", "input": {"order_id": "1"}, "run_id": f"{run.id}.1"})]
    assert not Run.objects.filter(parent=run).exists()
    [record] = engine.records(run, "run.child_started")
    assert (record["decision"]["kind"], record["error"]["code"]) == ("deny", "policy_denied")


def test_a_held_child_start_waits_for_its_approval(engine_for, django_user_model):
    django_user_model.objects.create_user("bob")
    held = define_policy(lambda call: approve("bob") if call.op["id"] == "sanoma.run.start" else allow(), version="h1")
    engine = engine_for(*EVERYTHING, policy=held)
    run = engine.run("parent", {"order_id": "1"})
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval")
    assert not Run.objects.filter(parent=run).exists()
    decide(run_id=run.id, decision="approve", by="bob", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result["got"]) == (RunStatus.FINISHED, {"total": 100})
    assert engine.kinds(run) == ["run.started", "run.child_started", "approval.requested", "approval.decided",
                                 "run.child_ended", "run.finished"]  # in step order: the call holds seq 1


# -- refusals ------------------------------------------------------------------------------------------


def bad_start(ctx, input):
    ctx.start_run("lookup", {"order": 1})


def unknown_start(ctx, input):
    ctx.start_run("no-such-flow", {})


def foreign_wait(ctx, input):
    return ctx.wait_run("someone-elses-run")


def unlisted(ctx, input):
    ctx.start_run("lookup", {"order_id": "1"})


@pytest.mark.parametrize(("body", "uses", "says"), [
    (bad_start, ["start_run"], "order_id"),
    (unknown_start, ["start_run"], "no workflow 'no-such-flow'"),
    (foreign_wait, ["wait_run"], "not a run this run started"),
])
def test_a_bad_start_or_wait_fails_the_run_naming_what_is_wrong_and_starts_nothing(engine_for, body, uses, says):
    engine = engine_for(lookup, define_workflow(name="bad", uses=uses, run=body))
    run = engine.run("bad")
    assert run.status == RunStatus.FAILED and run.error["code"] == "invalid_input"
    assert says in run.error["message"]
    assert Run.objects.count() == 1 and not Step.objects.filter(run=run).exists()


def test_a_start_its_uses_do_not_list_is_refused_with_the_config_naming_the_line():
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[], workflows=[lookup, define_workflow(name="bad", uses=[],
                                                                                       run=unlisted)]))
    line = unlisted.__code__.co_firstlineno + 1
    assert (f'Workflow "bad" calls ctx.start_run at {__file__}:{line}:5, which its `uses` does not list: add '
            "Ctx.start_run to uses, or leave uses out (it is then derived from the calls)") in str(refused.value)


# -- the run's picture -----------------------------------------------------------------------------------


def test_the_api_and_the_admin_show_what_a_parent_waits_for_and_link_parent_and_children(engine, alice, client):
    run = engine.run("wait-parent")
    child = Run.objects.get(parent=run)
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=alice)[0].key}")
    shown = api.get(f"/api/runs/{run.id}").json()["run"]
    assert shown["waiting"] == {"kind": "run", "until": None, "run_id": child.id}
    assert shown["children"] == [{"id": child.id, "workflow": "waiter", "status": "waiting"}]
    assert shown["parent_run"] is None
    shown_child = api.get(f"/api/runs/{child.id}").json()["run"]
    assert shown_child["parent_run"] == run.id
    assert shown_child["waiting"] == {"kind": "message", "until": None, "topic": "go"}
    assert api.get("/api/runs").json()["results"][0]["parent_run"] in (run.id, None)

    alice.is_staff = True
    alice.save()
    client.force_login(alice)
    page = client.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    assert f"/admin/runs/run/{child.id}/change/" in page and "its child run" in page
    child_page = client.get(f"/admin/runs/run/{child.id}/change/").content.decode()
    assert f"/admin/runs/run/{run.id}/change/" in child_page and "a message on &quot;go&quot;" in child_page
