"""Schedules: fire times (cron in the schedule's timezone, DST nights, intervals), one run per fire
however many workers fire, back-fill within the catch-up window, overlap skip, definition errors.

Every time is injected (`now=`): nothing here waits on the wall clock.
"""
from __future__ import annotations

import logging
from datetime import UTC, datetime, timedelta

import pytest
from pydantic import BaseModel

from connectors.errors import ConfigError, ProblemKind
from runs.config.resolution import SanomaConfig
from runs.config.workflows import Every, Schedule, check_schedule, define_workflow
from runs.models import Run, RunStatus
from runs.testing import drain, resolve_on_fakes
from wakeups.models import ScheduleState, WakeupRow
from wakeups.schedules import Firer, fire_due, fires_between, next_fires, run_id_for

pytestmark = pytest.mark.django_db

HELSINKI = "Europe/Helsinki"


def report(ctx, input):
    return {"ok": True}


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, tzinfo=UTC)


def config_with(schedule: str | None = None, **options):
    trigger = Schedule(cron=schedule, **options) if schedule else Every(options.pop("every"), **options)
    wf = define_workflow(name="report", run=report, trigger=trigger)
    return resolve_on_fakes(SanomaConfig(connectors=[], workflows=[wf]))


def cursor_at(moment: datetime, workflow: str = "report") -> None:
    ScheduleState.objects.update_or_create(pk=workflow, defaults={"last_fire_at": moment})


# ---- fire times --------------------------------------------------------------------------------

def test_the_autumn_night_fires_a_repeated_local_time_once():
    """2026-10-25 in Helsinki: 03:00-04:00 happens twice (EEST, then EET); 03:30 fires once."""
    schedule = check_schedule("30 3 * * *", HELSINKI)
    fires = fires_between(schedule, utc(2026, 10, 24, 12), utc(2026, 10, 26, 12))
    assert fires == [utc(2026, 10, 25, 0, 30), utc(2026, 10, 26, 1, 30)]  # 03:30 EEST, then 03:30 EET


def test_the_spring_night_fires_a_missing_local_time_once_after_the_gap():
    """2026-03-29 in Helsinki: 03:00-04:00 does not exist; 03:30 fires once, at 04:00 EEST."""
    schedule = check_schedule("30 3 * * *", HELSINKI)
    fires = fires_between(schedule, utc(2026, 3, 28, 12), utc(2026, 3, 30, 12))
    assert fires == [utc(2026, 3, 29, 1, 0), utc(2026, 3, 30, 0, 30)]


def test_weekday_mornings_in_the_schedules_timezone():
    schedule = check_schedule("0 9 * * 1-5", HELSINKI)
    # Friday 2026-01-02 .. the next five fires skip the weekend; 09:00 EET is 07:00 UTC
    fires = next_fires(schedule, utc(2026, 1, 2, 8), 3)
    assert fires == [utc(2026, 1, 5, 7), utc(2026, 1, 6, 7), utc(2026, 1, 7, 7)]


def test_an_interval_fires_on_its_multiples_since_the_epoch():
    schedule = check_schedule(every="15m")
    assert schedule.every == 900
    assert next_fires(schedule, utc(2026, 1, 1, 10, 7, 3), 2) == [utc(2026, 1, 1, 10, 15), utc(2026, 1, 1, 10, 30)]
    assert run_id_for("report", utc(2026, 1, 1, 10, 15)) == "report@2026-01-01T10:15:00Z"


# ---- definition --------------------------------------------------------------------------------

@pytest.mark.parametrize(("make", "message"), [
    (lambda: Schedule(cron="0 9 * * * *"), "has 6 field"),
    (lambda: Schedule(cron="61 9 * * *"), "its minute field"),
    (lambda: Schedule(cron="0 25 * * *"), "its hour field"),
    (lambda: Schedule(cron="0 9 * * 8"), "its day-of-week field"),
    (lambda: Every("500ms"), "shortest interval, 1 s"),
    (lambda: Every("soon"), "is not an interval"),
    (lambda: Every("1m", overlap="queue"), "overlap 'queue'"),
    (lambda: Schedule(cron="0 9 * * *", every="1m"), "not both, not neither"),
    (lambda: Every("1h", catchup="soon"), "is not an interval"),
])
def test_a_bad_schedule_is_refused_when_made_naming_the_field(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_a_trigger_written_as_a_dict_is_refused_with_the_value_to_write_instead():
    with pytest.raises(ValueError) as refused:
        define_workflow(name="report", run=report, trigger={  # type: ignore[arg-type]
            "schedule": "0 8 * * 1-5", "timezone": HELSINKI, "overlap": "skip"})
    assert str(refused.value) == (
        'Workflow "report": a trigger is a value now, not a dict: write trigger=Schedule(cron=\'0 8 * * 1-5\', '
        "timezone='Europe/Helsinki', overlap='skip') (Schedule and Every come from runs.authoring)")
    with pytest.raises(ValueError, match=r"write trigger=Every\('15m'\)"):
        define_workflow(name="report", run=report, trigger={"every": "15m"})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r'trigger is "manual", Schedule\(cron=.*or Every\("15m"\); got \'daily\''):
        define_workflow(name="report", run=report, trigger="daily")  # type: ignore[arg-type]


def test_a_scheduled_workflow_whose_input_refuses_nothing_is_refused_when_the_config_resolves():
    class Needs(BaseModel):
        day: str

    wf = define_workflow(name="report", run=report, input=Needs, trigger=Every("1h"))
    with pytest.raises(ConfigError) as err:
        resolve_on_fakes(SanomaConfig(connectors=[], workflows=[wf]))
    [problem] = err.value.problems
    assert "runs on a schedule" in problem and "refuses {}" in problem
    assert problem.kind is ProblemKind.OTHER


def test_catchup_and_overlap_are_read():
    schedule = check_schedule(every="1h", overlap="skip", catchup="2h")
    assert schedule == Schedule(every=3600.0, overlap="skip", catchup=7200.0)


# ---- firing ------------------------------------------------------------------------------------

def test_a_fire_starts_one_run_by_the_schedule_agent_and_it_finishes():
    config = config_with(schedule="0 9 * * 1-5", timezone=HELSINKI)
    cursor_at(utc(2026, 1, 5, 6, 59))
    fired = fire_due(config, now=utc(2026, 1, 5, 7, 0, 1))
    assert fired.started == ["report@2026-01-05T07:00:00Z"]
    run = Run.objects.get(pk="report@2026-01-05T07:00:00Z")
    assert (run.started_by, run.input, run.workflow) == ("schedule", {}, "report")
    drain(config)
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED


def test_two_workers_firing_together_start_one_run():
    config = config_with(every="1h")
    cursor_at(utc(2026, 1, 5, 6, 30))
    a, b = Firer(config), Firer(config)
    first = a.fire(now=utc(2026, 1, 5, 7, 0, 1))
    second = b.fire(now=utc(2026, 1, 5, 7, 0, 1))
    assert first.started == ["report@2026-01-05T07:00:00Z"]
    assert second.started == []
    assert Run.objects.count() == 1


def test_a_worker_stopped_for_three_fires_backfills_three_runs_oldest_first():
    """The worker stopped itself at T: the fires due since T run once each, oldest first."""
    config = config_with(every="1h")
    WakeupRow.objects.create(pk=1, stopped_at=utc(2026, 1, 5, 6, 30))
    fired = fire_due(config, now=utc(2026, 1, 5, 9, 30))
    assert fired.started == ["report@2026-01-05T07:00:00Z", "report@2026-01-05T08:00:00Z",
                             "report@2026-01-05T09:00:00Z"]
    assert fired.backfilled == fired.started
    runs = list(Run.objects.order_by("created_at", "id").values_list("id", flat=True))
    assert runs == fired.started
    state = ScheduleState.objects.get(pk="report")
    assert (state.backfilled, state.missed, state.last_fire_at) == (3, 0, utc(2026, 1, 5, 9))
    assert fire_due(config, now=utc(2026, 1, 5, 9, 31)).started == []  # each fire once


def test_a_fire_older_than_catchup_is_reported_not_run(caplog):
    config = config_with(every="1h", catchup="90m")
    cursor_at(utc(2026, 1, 5, 6, 30))
    with caplog.at_level(logging.WARNING, logger="sanoma.schedules"):
        fired = fire_due(config, now=utc(2026, 1, 5, 9, 30))
    assert fired.started == ["report@2026-01-05T08:00:00Z", "report@2026-01-05T09:00:00Z"]
    assert fired.missed == 1
    assert "1 fire(s) from 2026-01-05T07:00:00+00:00" in caplog.text
    assert ScheduleState.objects.get(pk="report").missed == 1
    assert not Run.objects.filter(pk="report@2026-01-05T07:00:00Z").exists()


def test_the_default_catchup_is_a_day():
    config = config_with(every="12h")
    cursor_at(utc(2026, 1, 1, 1))
    fired = fire_due(config, now=utc(2026, 1, 3, 1))
    assert fired.missed == 2  # 01-01 12:00 and 01-02 00:00 are older than 24 h
    assert fired.started == ["report@2026-01-02T12:00:00Z", "report@2026-01-03T00:00:00Z"]


def test_overlap_skip_skips_while_the_last_run_is_unfinished_and_says_so(caplog):
    config = config_with(every="1h", overlap="skip")
    cursor_at(utc(2026, 1, 5, 6, 30))
    assert fire_due(config, now=utc(2026, 1, 5, 7, 0, 1)).started == ["report@2026-01-05T07:00:00Z"]
    with caplog.at_level(logging.INFO, logger="sanoma.schedules"):
        fired = fire_due(config, now=utc(2026, 1, 5, 8, 0, 1))  # the 07:00 run is still queued
    assert fired.started == [] and fired.skipped == [utc(2026, 1, 5, 8)]
    assert "skipped the fire at 2026-01-05T08:00:00+00:00" in caplog.text
    state = ScheduleState.objects.get(pk="report")
    assert (state.skipped, state.last_skip_at) == (1, utc(2026, 1, 5, 8))
    drain(config)  # the 07:00 run finishes: the next fire runs
    assert fire_due(config, now=utc(2026, 1, 5, 9, 0, 1)).started == ["report@2026-01-05T09:00:00Z"]


def test_overlap_allow_starts_a_run_per_fire():
    config = config_with(every="1h")
    cursor_at(utc(2026, 1, 5, 6, 30))
    fire_due(config, now=utc(2026, 1, 5, 7, 0, 1))
    assert fire_due(config, now=utc(2026, 1, 5, 8, 0, 1)).started == ["report@2026-01-05T08:00:00Z"]


def test_a_schedule_seen_first_starts_from_now():
    config = config_with(every="1h")
    firer = Firer(config)
    assert firer.fire(now=utc(2026, 1, 5, 6, 30)).started == []
    assert firer.next_due == utc(2026, 1, 5, 7)
    assert firer.fire(now=utc(2026, 1, 5, 6, 45)).started == []  # not due: no query at all
    assert firer.fire(now=utc(2026, 1, 5, 7, 0, 0) + timedelta(milliseconds=5)).started == [
        "report@2026-01-05T07:00:00Z"]
