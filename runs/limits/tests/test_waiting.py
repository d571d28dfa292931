"""A call over its limit: a short wait is slept in place, a longer one suspends the run, which shows
what it waits for and goes on at its time; a vendor's Retry-After holds the limit for every call."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import override_settings
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from connectors.limits import Limit
from runs import selectors, services
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.engine import clock
from runs.limits import gate
from runs.limits import services as limit_services
from runs.limits.models import LimitCursor, LimitHold, LimitSlot
from runs.models import RunStatus
from runs.testing import drain, make_user, resolve_on_fakes


class Ping(BaseModel):
    account: str = "a"


class Acct(BaseModel):
    account: str


class Pong(BaseModel):
    n: int


vendor = define_connector("meter", {
    "ping": {
        "send": op(effect="read", input=Ping, output=Pong, idempotent=True),
        # A slow rate of its own: a call may start up to 40 % of its period late (seconds here), so a
        # busy machine's slow database does not make the first call give its start time up.
        "own": op(effect="read", input=Ping, output=Pong, idempotent=True, limit=Limit(rate="10/min", key="account")),
    },
}, limit=Limit(rate="30/min"))
gauge_vendor = define_connector("gauge", {
    "ping": {
        "keyed": op(effect="read", input=Ping, output=Pong, idempotent=True,
                    limit=Limit(rate="6/min", key="account")),
        "single": op(effect="read", input=Ping, output=Pong, idempotent=True, limit=Limit(concurrency=1)),
    },
})


def _count(state, i, c):
    state["calls"].append({"account": i.account, "at": clock.now_ms()})
    return {"n": len(state["calls"])}


def _meter_fake(file=None):
    return define_fake(vendor, initial=lambda: {"calls": []}, ops={"ping": {"send": _count, "own": _count}},
                       file=file)


def _gauge_fake(file=None):
    return define_fake(gauge_vendor, initial=lambda: {"calls": []},
                       ops={"ping": {"keyed": _count, "single": _count}}, file=file)


meter = with_setup(vendor, fake=_meter_fake)
gauge = with_setup(gauge_vendor, fake=_gauge_fake)
SEND, OWN = (meter.op(f"meter.ping.{n}") for n in ("send", "own"))
KEYED, SINGLE = (gauge.op(f"gauge.ping.{n}") for n in ("keyed", "single"))
WORKFLOWS = [
    define_workflow(name="ping", uses=[SEND], run=lambda ctx, input: {"n": ctx.meter.ping.send({}).n}),
    define_workflow(name="own", uses=[OWN], input=Acct,
                    run=lambda ctx, input: {"n": ctx.meter.ping.own({"account": input.account}).n}),
    define_workflow(name="keyed", uses=[KEYED], input=Acct,
                    run=lambda ctx, input: {"n": ctx.gauge.ping.keyed({"account": input.account}).n}),
    define_workflow(name="single", uses=[SINGLE], run=lambda ctx, input: {"n": ctx.gauge.ping.single({}).n}),
]


class Engine:
    def __init__(self) -> None:
        self.config = resolve_on_fakes(SanomaConfig(connectors=[meter, gauge], workflows=WORKFLOWS))
        set_config(self.config)
        self.slept: list[float] = []

    @property
    def calls(self) -> list[dict]:
        return self.config.fakes["meter"].state["calls"]

    @property
    def gauge_calls(self) -> list[dict]:
        return self.config.fakes["gauge"].state["calls"]

    def start(self, workflow: str, input: dict | None = None):
        return services.start(workflow=workflow, input=input or {}, started_by="alice", config=self.config)

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        clock.advance(timedelta(seconds=seconds))  # the time passes, without the wait

    def drain(self) -> None:
        with clock.sleeping_with(self.sleep):
            drain(self.config)

    def until_done(self, runs: list) -> None:
        """Move the clock to each waiting run's wake time in turn, and drain, until all have ended."""
        for _ in range(20):
            self.drain()
            waiting = [run.__class__.objects.get(pk=run.pk) for run in runs]
            wakes = [r.wake_at for r in waiting if r.status == RunStatus.WAITING and r.wake_at is not None]
            if not wakes:
                return
            ahead = min(wakes) - clock.now()
            if ahead > timedelta(0):
                clock.advance(ahead)


@pytest.fixture
def engine(db):
    make_user("alice", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield Engine()
    set_config(None)


def test_a_call_over_the_rate_suspends_its_run_until_its_time_and_no_thread_sleeps_it_out(engine):
    runs = [engine.start("ping") for _ in range(3)]
    began = time.monotonic()
    engine.drain()
    assert time.monotonic() - began < 5
    for run in runs:
        run.refresh_from_db()
    first, second, third = runs
    assert first.status == RunStatus.FINISHED and len(engine.calls) == 1
    # 30/min: calls 2.14 s apart (with the margin), more than is slept in place: the others wait durably.
    for run, after in ((second, 2140), (third, 4280)):
        assert (run.status, run.waiting_for, run.lease_owner) == (RunStatus.WAITING, "rate limit of meter", "")
        assert abs(clock.to_ms(run.wake_at) - (engine.calls[0]["at"] + after - 750)) < 50
    assert LimitHold.objects.count() == 2
    assert all(s <= gate.IN_PLACE_SECONDS for s in engine.slept)
    shown = selectors.waiting_on(second)
    assert shown is not None and shown["kind"] == "rate limit of meter"
    engine.until_done(runs)
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.FINISHED, run.waiting_for
    assert len(engine.calls) == 3 and LimitHold.objects.count() == 0
    # Each started at the time it took: 2.14 s apart.
    gaps = [b["at"] - a["at"] for a, b in zip(engine.calls, engine.calls[1:], strict=False)]
    assert all(2090 <= gap <= 2190 for gap in gaps), gaps


def test_the_show_command_says_what_the_run_waits_for(engine, capsys):
    runs = [engine.start("ping") for _ in range(2)]
    engine.drain()
    call_command("show", runs[1].id)
    assert "waiting for rate limit of meter" in capsys.readouterr().out


def test_a_short_wait_is_slept_in_place(engine):
    LimitCursor.objects.create(scope="meter", key="", next_at=clock.now_ms() + 300)
    run = engine.start("ping")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    assert 0.2 < sum(engine.slept) <= 0.31  # until the start (in slices on PostgreSQL, looking for new work)
    assert engine.calls[0]["at"] >= LimitCursor.objects.get(scope="meter").next_at - 2140


def test_a_call_waiting_in_place_gives_its_worker_up_to_a_run_that_has_waited_for_one(engine):
    """Every worker busy: a run queued 50 ms and not taken. The call suspends its run instead of
    sleeping its 0.9 s out, keeping its start time, and is woken as long before it as a wake takes
    (0.1 s on PostgreSQL; on SQLite the sweep's and the broker's polls more)."""
    LimitCursor.objects.create(scope="meter", key="", next_at=clock.now_ms() + 900)
    [applied] = gate.applied_limits(SEND, {})
    engine.start("keyed", {"account": "k"})  # new work: it holds no start time
    with clock.sleeping_with(engine.sleep), pytest.raises(gate.Suspend) as suspended:
        gate.enter([applied], holder="run-a:3", timeout=5)
    start = LimitHold.objects.get(holder="run-a:3")
    assert (start.run_id, start.scope) == ("run-a", "meter") and start.at >= clock.now_ms() + 700
    assert suspended.value.waiting_for == "rate limit of meter"
    assert suspended.value.wake_at is not None
    assert clock.to_ms(suspended.value.wake_at) == start.at - gate.busy_lead_ms()
    assert sum(engine.slept) <= 0.1  # it looked between short sleeps, and gave up at the first sight


def test_a_queued_run_that_holds_a_start_time_is_no_reason_to_give_a_worker_up(engine):
    LimitCursor.objects.create(scope="meter", key="", next_at=clock.now_ms() + 900)
    [applied] = gate.applied_limits(SEND, {})
    queued = engine.start("ping")
    LimitHold.objects.create(holder=f"{queued.id}:1", run_id=queued.id, scope="meter", at=clock.now_ms() + 714)
    with clock.sleeping_with(engine.sleep):
        passage = gate.enter([applied], holder="run-a:3", timeout=5)
    passage.leave()
    # Slept in place (the clock runs on while the database answers, so a little less than 0.84 s):
    # the queued run goes to wait for its own turn
    assert 0.6 < sum(engine.slept) <= 0.9
    assert not LimitHold.objects.filter(holder="run-a:3").exists()


def test_a_run_woken_for_the_start_time_it_kept_gives_its_worker_up_at_most_once_more(engine):
    """Woken 0.75 s before the start time it kept (a wait of over a second), with new work waiting: it
    suspends again keeping that start time, to be woken `busy_lead_ms` before it; then it has no
    more than that to wait, and waits in place though new work still waits."""
    engine.start("keyed", {"account": "k"})  # new work, queued long since
    clock.advance(timedelta(seconds=1))
    [applied] = gate.applied_limits(SEND, {})
    at = clock.now_ms() + 750
    LimitHold.objects.create(holder="run-a:3", run_id="run-a", scope="meter", at=at)
    with clock.sleeping_with(engine.sleep), pytest.raises(gate.Suspend) as suspended:
        gate.enter([applied], holder="run-a:3", timeout=5)
    assert suspended.value.wake_at is not None
    assert clock.to_ms(suspended.value.wake_at) == at - gate.busy_lead_ms()
    assert LimitHold.objects.get(holder="run-a:3").at == at  # the same start time, kept
    clock.advance(timedelta(milliseconds=at - gate.busy_lead_ms() - clock.now_ms()))  # woken on time
    with clock.sleeping_with(engine.sleep):
        passage = gate.enter([applied], holder="run-a:3", timeout=5)
    passage.leave()
    assert passage.start == {("meter", ""): at}


def test_a_keyed_limit_gives_each_key_its_own_budget_and_says_which_key_waits(engine):
    a1, a2, b1 = (engine.start("keyed", {"account": acct}) for acct in ("acct_a", "acct_a", "acct_b"))
    engine.drain()
    for run in (a1, a2, b1):
        run.refresh_from_db()
    assert (a1.status, b1.status) == (RunStatus.FINISHED, RunStatus.FINISHED)
    assert a2.waiting_for == "rate limit of gauge.ping.keyed for account acct_a"


def test_a_call_must_fit_its_connectors_budget_as_well_as_its_own(engine):
    first, second = engine.start("own", {"account": "x"}), engine.start("ping")
    engine.drain()
    first.refresh_from_db()
    second.refresh_from_db()
    assert first.status == RunStatus.FINISHED
    assert second.waiting_for == "rate limit of meter"  # the first call drew from the connector's budget too
    assert set(LimitCursor.objects.values_list("scope", "key")) == {("meter", ""), ("meter.ping.own", "x")}


def test_a_call_waits_for_a_free_slot_and_gives_it_back(engine):
    LimitSlot.objects.create(scope="gauge.ping.single", key="", slot=0, holder="other:1",
                             until=clock.now_ms() + 60_000)
    run = engine.start("single")
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "concurrency limit of gauge.ping.single")
    assert run.wake_at is not None and clock.to_ms(run.wake_at) - clock.now_ms() <= 1_000
    LimitSlot.objects.filter(holder="other:1").update(holder="", until=0)
    clock.advance(timedelta(seconds=2))
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED
    assert LimitSlot.objects.get(scope="gauge.ping.single").holder == ""  # given back after the call


def test_a_run_waiting_for_a_slot_is_woken_when_a_call_gives_one_back(engine, monkeypatch):
    monkeypatch.setattr(gate, "IN_PLACE_SECONDS", 0.05)  # a moment's look in place, on the wall clock
    [single] = gate.applied_limits(SINGLE, {})
    passage = gate.enter([single], holder="other:1", timeout=5)  # a call under way elsewhere
    first, second = engine.start("single"), engine.start("single")
    with clock.sleeping_with(lambda seconds: None):
        drain(engine.config)
    for run in (first, second):
        run.refresh_from_db()
        assert run.waiting_for == "concurrency limit of gauge.ping.single"
    passage.leave()
    first.refresh_from_db()
    second.refresh_from_db()
    assert (first.status, second.status) == (RunStatus.QUEUED, RunStatus.WAITING)  # the longest waiting, at once
    engine.drain()
    first.refresh_from_db()
    assert first.status == RunStatus.FINISHED


def test_a_vendors_429_with_retry_after_holds_the_limit_for_every_run(engine):
    engine.config.fakes["meter"].rate_limit("meter.ping.send", retry_after=30)
    hit = engine.start("ping")
    engine.drain()
    hit.refresh_from_db()
    assert (hit.status, hit.waiting_for) == (RunStatus.WAITING, "retry")  # its own retry, 30 s on
    other = engine.start("ping")
    engine.drain()
    other.refresh_from_db()
    assert other.waiting_for == "rate limit of meter"  # another run's call waits for the vendor too
    assert clock.to_ms(other.wake_at) >= clock.to_ms(hit.wake_at) - 1_000
    engine.until_done([hit, other])
    for run in (hit, other):
        run.refresh_from_db()
        assert run.status == RunStatus.FINISHED
    kinds = [r["type"] for r in selectors.ledger_of(run_id=hit.id)]
    assert "op.attempt_failed" in kinds  # the timeline shows the 429 and the wait


def test_an_operators_override_takes_effect_on_the_next_call(engine):
    make_user("olga", perms=["runs.pause"])
    limit_services.set_override(target="meter", rate="off", by="olga")
    runs = [engine.start("ping") for _ in range(3)]
    engine.drain()
    assert all(r.status == RunStatus.FINISHED for r in (r.__class__.objects.get(pk=r.pk) for r in runs))
    limit_services.set_override(target="meter.ping.send", concurrency=1, by="olga")
    assert [a.concurrency for a in gate.applied_limits(SEND, {})] == [1]
    limit_services.reset(target="meter.ping.send", by="olga")
    limit_services.reset(target="meter", by="olga")
    assert [str(a.rate) for a in gate.applied_limits(SEND, {})] == ["30/min"]


def test_the_api_says_what_the_run_waits_for(engine):
    runs = [engine.start("ping") for _ in range(2)]
    engine.drain()
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=get_user_model().objects.get(username="alice"))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    run = client.get(f"/api/runs/{runs[1].id}").json()["run"]
    assert (run["status"], run["waiting_for"]) == ("waiting", "rate limit of meter")


def _waiting_on_a_slow_limit(engine, n: int = 3) -> list:
    """`n` runs calling meter under an operator's 1/min: the first calls at once, the others wait their turn."""
    make_user("olga", perms=["runs.pause"])
    limit_services.set_override(target="meter", rate="1/min", by="olga")
    runs = [engine.start("ping") for _ in range(n)]
    engine.start("keyed", {"account": "k"})  # another limit's run: left alone by meter's change
    engine.drain()
    keyed_again = engine.start("keyed", {"account": "k"})
    engine.drain()
    for run in (*runs, keyed_again):
        run.refresh_from_db()
    assert runs[0].status == RunStatus.FINISHED
    for i, run in enumerate(runs[1:], 1):
        assert run.waiting_for == "rate limit of meter"
        assert clock.to_ms(run.wake_at) - clock.now_ms() > (i * 64.2 - 2) * 1000  # the old limit's turns
    assert keyed_again.waiting_for == "rate limit of gauge.ping.keyed for account k"
    return [*runs, keyed_again]


def test_raising_a_limit_wakes_the_runs_waiting_under_it_to_go_now_under_the_new_one(engine):
    *runs, other = _waiting_on_a_slow_limit(engine)
    began = clock.now_ms()
    limit_services.set_override(target="meter", rate="100/s", by="olga")
    for run in runs[1:]:
        run.refresh_from_db()
        assert (run.status, run.waiting_for, run.wake_at) == (RunStatus.QUEUED, "", None)  # woken in the change
    other.refresh_from_db()
    assert other.status == RunStatus.WAITING  # another limit's run keeps its turn
    assert not LimitHold.objects.filter(scope="meter").exists()
    engine.drain()  # no time passes but what the new limit spaces the calls by
    for run in runs:
        run.refresh_from_db()
        assert run.status == RunStatus.FINISHED
    at = [c["at"] for c in engine.calls]
    # The woken calls took start times the new interval (11 ms) apart, not a minute, the first no
    # earlier than the change. A call never leaves before its start time, but may leave up to its
    # window (28 ms at 100/s) after it, so the two calls' own gap can read shorter than 11 ms.
    assert began <= at[1] < began + 1_000
    assert began + 11 <= at[2] < began + 1_000
    assert sum(engine.slept) < 0.1


@pytest.mark.parametrize("change", [{"rate": "off"}, {"concurrency": "0", "rate": "off"}, "reset"])
def test_lifting_or_resetting_a_limit_lets_the_waiting_runs_go_at_once(engine, change):
    *runs, _ = _waiting_on_a_slow_limit(engine)
    if change == "reset":
        limit_services.reset(target="meter", by="olga")  # back to 30/min, a fresh budget
    else:
        limit_services.set_override(target="meter", by="olga", **change)
    engine.drain()
    for run in runs:
        run.refresh_from_db()
    if change == "reset":  # the declared 30/min: the first woken goes now, the next 2.14 s on (not a minute)
        assert [r.status for r in runs] == [RunStatus.FINISHED, RunStatus.FINISHED, RunStatus.WAITING]
        assert clock.to_ms(runs[2].wake_at) - clock.now_ms() < 2140
    else:
        assert all(r.status == RunStatus.FINISHED for r in runs)
        assert sum(engine.slept) == 0


def test_tightening_a_limit_gives_the_waiting_runs_turns_under_the_new_one(engine):
    make_user("olga", perms=["runs.pause"])
    runs = [engine.start("ping") for _ in range(3)]  # 30/min: turns 2.14 s apart
    engine.drain()
    limit_services.set_override(target="meter", rate="1/min", by="olga")
    engine.drain()
    for run in runs[1:]:
        run.refresh_from_db()
        assert run.waiting_for == "rate limit of meter"
    gaps = sorted(clock.to_ms(r.wake_at) - clock.now_ms() for r in runs[1:])
    assert gaps[0] > 60_000 and gaps[1] - gaps[0] > 64_000  # a minute apart now, not 2.14 s
