"""Deadlines, idleness and the stop rule of a worker that scales to zero (with one wakeup declared,
register the next deadline, record it, stop only if still idle with the same deadline)."""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction

from connectors.drivers import CallContext
from runs.config.resolution import SanomaConfig
from runs.config.workflows import Every, define_workflow
from runs.engine import clock
from runs.models import AppVersion, Run, RunStatus
from runs.testing import resolve_on_fakes
from wakeups.declare import RegisterInput, WakeupDeclaration
from wakeups.idle import StopRule, idleness, next_deadline
from wakeups.models import WakeupRow

pytestmark = pytest.mark.django_db


def nothing(ctx, input):
    return None


@pytest.fixture
def config():
    manual = define_workflow(name="nap", run=nothing)
    return resolve_on_fakes(SanomaConfig(connectors=[], workflows=[manual]))


def scheduled_config(every: str = "1h"):
    wf = define_workflow(name="report", run=nothing, trigger=Every(every))
    return resolve_on_fakes(SanomaConfig(connectors=[], workflows=[wf]))


def make_run(config, run_id: str, *, status: str = RunStatus.WAITING, wake_in: float | None = None,
             waiting_for: str = "sleep") -> Run:
    now = clock.now()
    return Run.objects.create(
        id=run_id, workflow="nap", app_version=config.workflow_versions["nap"], input={}, started_by="x", status=status,
        waiting_for=waiting_for if status == RunStatus.WAITING else "",
        wake_at=now + timedelta(seconds=wake_in) if wake_in is not None else None, created_at=now, updated_at=now)


class Recorder:
    """A wakeup type whose register records its calls, and may fail or do something meanwhile."""

    def __init__(self, fail: str = "", meanwhile=None) -> None:
        self.calls: list[tuple[RegisterInput, CallContext]] = []
        self.fail = fail
        self.meanwhile = meanwhile

    def __call__(self, payload: RegisterInput, context: CallContext) -> None:
        self.calls.append((payload, context))
        if self.meanwhile:
            self.meanwhile()
        if self.fail:
            raise RuntimeError(self.fail)


def rule_for(config, register, *, count: int = 1, stopped=None) -> StopRule:
    wakeups = [WakeupDeclaration(id=f"host-{i}", register=register, secrets={"token": "t"}) for i in range(count)]
    return StopRule(config=config, wakeups=wakeups, on_stopped=stopped)


# ---- deadlines and idleness ---------------------------------------------------------------------

def test_the_next_deadline_is_the_earliest_sleeper_or_fire_and_other_waits_have_none(config):
    assert next_deadline(config) is None
    make_run(config, "approval", waiting_for="approval")
    assert next_deadline(config) is None
    later = make_run(config, "later", wake_in=600)
    soon = make_run(config, "soon", wake_in=300)
    assert next_deadline(config) == soon.wake_at != later.wake_at
    fires = scheduled_config("1m")
    fire = next_deadline(fires)
    assert fire is not None and fire <= clock.now() + timedelta(minutes=1)


def test_idle_only_with_nothing_queued_or_running_and_no_deadline_within_the_horizon(config):
    assert idleness(config).idle
    make_run(config, "far", wake_in=600)
    assert idleness(config).idle
    make_run(config, "near", wake_in=30)
    assert not idleness(config).idle  # within the 60 s horizon
    Run.objects.filter(pk="near").delete()
    make_run(config, "queued", status=RunStatus.QUEUED)
    assert not idleness(config).idle


def test_a_worker_whose_version_is_no_longer_the_latest_is_idle(config):
    make_run(config, "near", wake_in=30)
    AppVersion.objects.create(version="acme@newer", first_started_at=clock.now(), promoted_at=clock.now())
    assert idleness(config).idle  # a deadline of an old version does not keep it up
    make_run(config, "queued", status=RunStatus.QUEUED)
    assert not idleness(config).idle  # its own queued runs do: it finishes them first


# ---- the stop rule (checks 106-111) ----------------------------------------------------------------

def test_an_idle_worker_registers_its_next_deadline_records_it_and_stops(config):
    """106: register is called with `at`; the row's `at` is set and `last_error` cleared;
    `stopped_at` is set; the worker stops; on_stopped({at}) is called."""
    WakeupRow.objects.create(pk=1, last_error="earlier trouble")
    sleeper = make_run(config, "sleeper", wake_in=600)
    register, told, stopped = Recorder(), [], []  # type: ignore[var-annotated]
    rule = rule_for(config, register, stopped=told.append)
    outcome = rule.check()
    assert outcome.stop and outcome.at == sleeper.wake_at
    [(payload, context)] = register.calls
    assert payload.at == sleeper.wake_at
    assert context.by == "wakeup" and context.op_id == "sanoma.wakeup.register"
    assert context.secrets == {"token": "t"} and context.idempotency_key.startswith("wakeup:host-0:")
    row = WakeupRow.objects.get()
    assert (row.at, row.last_error, row.stopped_at) == (sleeper.wake_at, "", None)
    rule.stopped(outcome.at, lambda: stopped.append(True))
    assert stopped == [True] and told == [sleeper.wake_at]
    assert WakeupRow.objects.get().stopped_at is not None


def test_a_failed_registration_is_recorded_logged_once_and_retried_while_the_worker_runs(config, caplog):
    """107."""
    make_run(config, "sleeper", wake_in=600)
    register = Recorder(fail="the host is down")
    rule = rule_for(config, register)
    with caplog.at_level(logging.ERROR, logger="sanoma.wakeup"):
        first, second = rule.check(), rule.check()
    assert not first.stop and not second.stop
    assert len(register.calls) == 2  # tried again at the next check
    assert WakeupRow.objects.get().last_error == "RuntimeError: the host is down"
    assert caplog.text.count("the host is down") == 1
    register.fail = ""
    assert rule.check().stop
    assert WakeupRow.objects.get().last_error == ""


def test_a_run_arriving_during_registration_keeps_the_worker_up(config):
    """108: not idle any more, or the deadline changed."""
    make_run(config, "sleeper", wake_in=600)
    arrives = Recorder(meanwhile=lambda: make_run(config, "new", status=RunStatus.QUEUED))
    assert not rule_for(config, arrives).check().stop
    Run.objects.filter(pk="new").delete()
    earlier = Recorder(meanwhile=lambda: make_run(config, "earlier", wake_in=300))
    outcome = rule_for(config, earlier).check()
    assert not outcome.stop and len(earlier.calls) == 1
    assert outcome.at == Run.objects.get(pk="earlier").wake_at


def test_with_no_deadline_nothing_is_registered_and_the_worker_stops_with_no_at(config):
    """109."""
    register, told = Recorder(), []  # type: ignore[var-annotated]
    rule = rule_for(config, register, stopped=told.append)
    outcome = rule.check()
    assert outcome.stop and outcome.at is None and register.calls == []
    rule.stopped(None, lambda: None)
    assert told == [None]
    assert WakeupRow.objects.get().at is None


def test_two_registrations_of_the_same_deadline_have_different_keys(config):
    """110."""
    make_run(config, "sleeper", wake_in=600)
    register = Recorder()
    rule = rule_for(config, register)
    rule.check()
    rule.check()
    (p1, c1), (p2, c2) = register.calls
    assert p1.at == p2.at and c1.idempotency_key != c2.idempotency_key


@pytest.mark.parametrize("count", [0, 2])
def test_with_no_wakeup_or_two_the_worker_never_stops_itself(config, count):
    """111."""
    register = Recorder()
    rule = rule_for(config, register, count=count)
    assert not rule.enabled
    assert not rule.check().stop and register.calls == []


def test_a_stop_failure_is_logged_not_raised(config, caplog):
    rule = rule_for(config, Recorder())

    def broken() -> None:
        raise RuntimeError("cluster hung")

    with caplog.at_level(logging.ERROR, logger="sanoma.wakeup"):
        rule.stopped(None, broken)
    assert "did not stop cleanly" in caplog.text


def test_the_wakeup_row_is_one_row():
    WakeupRow.get()
    WakeupRow.get()
    assert WakeupRow.objects.count() == 1
    with pytest.raises(IntegrityError), transaction.atomic():
        WakeupRow.objects.create(pk=2)
