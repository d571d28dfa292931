"""The surfaces of time: the admin's Schedules page (through Django's test client), `manage.py
schedules` (text, `--json`, `--run-now`) and `manage.py wakeup` (`systemd`, `show`).

A real database; the config is the process's (`set_config`), as the admin and the commands read it.
"""
from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.conf import settings
from django.contrib.messages import get_messages
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig
from runs.config.workflows import Every, Schedule, define_workflow
from runs.engine import clock
from runs.models import Run, RunStatus
from runs.testing import make_user, resolve_on_fakes
from wakeups.models import ScheduleState, WakeupRow
from wakeups.schedules import fire_due

pytestmark = pytest.mark.django_db

URL = "/admin/wakeups/schedulestate/"
HELSINKI = "Europe/Helsinki"
# Friday 2027-01-08 10:00 UTC (12:00 in Helsinki, EET); the clock is moved there (it only moves forward)
NOW = datetime(2027, 1, 8, 10, 0, tzinfo=UTC)


def report(ctx, input):
    return {"ok": True}


@pytest.fixture
def config():
    workflows = [
        define_workflow(name="morning-report", run=report, trigger=Schedule(cron="0 9 * * 1-5", timezone=HELSINKI)),
        define_workflow(name="sync", run=report, trigger=Every("15m")),
        define_workflow(name="by-hand", run=report),
    ]
    resolved = resolve_on_fakes(SanomaConfig(connectors=[], workflows=workflows))
    set_config(resolved)
    clock.advance(NOW - clock.now())
    yield resolved
    set_config(None)


def browser(username: str, *, staff: bool = True, superuser: bool = False, perms: tuple[str, ...] = ()) -> Client:
    user = make_user(username, perms=perms, superuser=superuser)
    user.is_staff = staff or superuser
    user.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(user)
    return client


def operator() -> Client:
    return browser("olga", superuser=True)


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def command(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def pages(client: Client) -> dict[str, dict]:
    response = client.get(URL)
    assert response.status_code == 200
    return {s["workflow"]: s for s in response.context["schedules"]}


# ---- the admin's Schedules page ----------------------------------------------------------------

def test_the_page_lists_each_scheduled_workflow_with_its_next_fires_and_last_fire(config: ResolvedConfig):
    fire_due(config, now=NOW - timedelta(minutes=20))  # first seen: the cursor starts here
    fire_due(config, now=NOW - timedelta(minutes=1))  # `sync` fired at 09:45 (its run is the last run)
    client = operator()
    response = client.get(URL)
    assert response.status_code == 200
    html = response.content.decode()
    shown = pages(client)
    assert set(shown) == {"morning-report", "sync"}  # the unscheduled workflow is not listed
    morning = shown["morning-report"]
    assert morning["next_fires"][:2] == ["2027-01-11T07:00:00+00:00", "2027-01-12T07:00:00+00:00"]
    assert morning["next_fires_local"][0] == "2027-01-11T09:00:00+02:00"
    assert len(morning["next_fires"]) == 5
    assert morning["last_run"] is None
    sync = shown["sync"]
    assert sync["next_fires"][0] == "2027-01-08T10:15:00+00:00"
    assert sync["last_fire_at"] == "2027-01-08T09:45:00+00:00"
    assert sync["last_run"] == {"id": "sync@2027-01-08T09:45:00Z", "status": RunStatus.QUEUED}
    assert "morning-report" in html and "0 9 * * 1-5" in html and "sync@2027-01-08T09:45:00Z" in html
    assert html.count('value="Run now"') == 2


def test_run_now_starts_a_run_and_it_becomes_the_last_run_on_the_page_and_in_the_command(config: ResolvedConfig):
    fire_due(config, now=NOW - timedelta(minutes=20))
    fire_due(config, now=NOW - timedelta(minutes=1))
    cursor = ScheduleState.objects.get(pk="sync").last_fire_at
    client = operator()
    response = client.post(URL, {"workflow": "sync"}, follow=True)
    # Named by the moment it was started: the clock was moved to NOW and runs on from there (on a
    # loaded machine, seconds later).
    run = Run.objects.exclude(id="sync@2027-01-08T09:45:00Z").get(workflow="sync", started_by="schedule")
    assert run.id.startswith("sync@2027-01-08T10:0")
    assert run.started_by == "schedule" and run.input == {} and run.status == RunStatus.QUEUED
    assert f"Started {run.id}" in said(response) or f"Started {run.id}" in response.content.decode()
    assert pages(client)["sync"]["last_run"] == {"id": run.id, "status": RunStatus.QUEUED}
    assert f"last run {run.id} (queued)" in command("schedules")
    assert ScheduleState.objects.get(pk="sync").last_fire_at == cursor  # the fire cursor did not move


def test_run_now_of_a_schedule_never_fired_makes_it_the_last_run(config: ResolvedConfig):
    client = operator()
    client.post(URL, {"workflow": "morning-report"})
    assert Run.objects.filter(workflow="morning-report").count() == 1
    [listed] = json.loads(command("schedules", "--json"))[:1]
    assert listed["workflow"] == "morning-report"
    run = Run.objects.get(workflow="morning-report")
    assert run.id.startswith("morning-report@2027-01-08T10:00:00")
    assert listed["last_run"] == {"id": run.id, "status": RunStatus.QUEUED}


def test_run_now_is_refused_to_a_staff_user_who_may_not_start_workflows(config: ResolvedConfig):
    client = browser("sam", perms=("wakeups.view_schedulestate",))
    assert client.get(URL).status_code == 200
    assert 'value="Run now"' not in client.get(URL).content.decode()
    response = client.post(URL, {"workflow": "sync"}, follow=True)
    assert "You may not start workflows" in said(response) or "You may not start workflows" in response.content.decode()
    assert not Run.objects.exists()


def test_the_page_is_refused_to_a_user_who_is_not_staff(config: ResolvedConfig):
    client = browser("nora", staff=False, perms=("runs.start_workflow", "wakeups.view_schedulestate"))
    response = client.post(URL, {"workflow": "sync"})
    assert response.status_code == 302 and "/login/" in response["Location"]
    assert client.get(URL).status_code == 302
    assert not Run.objects.exists()


def test_a_get_starts_nothing(config: ResolvedConfig):
    client = operator()
    assert client.get(URL, {"workflow": "sync"}).status_code == 200
    assert not Run.objects.exists()


def test_run_now_of_an_unscheduled_workflow_is_an_error_on_the_page(config: ResolvedConfig):
    response = operator().post(URL, {"workflow": "by-hand"}, follow=True)
    assert "No scheduled workflow 'by-hand'" in said(response) or \
        "No scheduled workflow &#x27;by-hand&#x27;" in response.content.decode()
    assert not Run.objects.exists()


# ---- manage.py schedules -----------------------------------------------------------------------

def test_schedules_run_now_starts_one_run_and_names_it(config: ResolvedConfig):
    out = command("schedules", "--run-now", "morning-report")
    run = Run.objects.get()
    assert out.strip() == f"started {run.id}"
    assert run.id.startswith("morning-report@2027-01-08T10:00:00") and run.id.endswith("Z")
    assert (run.workflow, run.started_by, run.input) == ("morning-report", "schedule", {})
    assert ScheduleState.objects.get(pk="morning-report").last_run_id == run.id


@pytest.mark.parametrize("workflow", ["nope", "by-hand"])
def test_schedules_run_now_of_an_unknown_or_unscheduled_workflow_is_a_one_line_error(config, workflow):
    with pytest.raises(CommandError) as raised:
        command("schedules", "--run-now", workflow)
    assert str(raised.value) == f"No scheduled workflow {workflow!r}"
    assert not Run.objects.exists()


def test_schedules_json_is_a_document_with_the_next_five_fires_in_the_timezone_and_utc(config: ResolvedConfig):
    document = json.loads(command("schedules", "--json"))
    by_name = {s["workflow"]: s for s in document}
    assert set(by_name) == {"morning-report", "sync"}
    morning = by_name["morning-report"]
    assert morning["timezone"] == HELSINKI and morning["trigger"] == "0 9 * * 1-5"
    utc = [datetime.fromisoformat(f) for f in morning["next_fires"]]
    local = [datetime.fromisoformat(f) for f in morning["next_fires_local"]]
    assert len(utc) == len(local) == 5
    assert utc == [datetime(2027, 1, d, 7, tzinfo=UTC) for d in (11, 12, 13, 14, 15)]  # Mon-Fri, 09:00 EET
    assert all(f.utcoffset() == timedelta(0) for f in utc)
    assert [f.astimezone(ZoneInfo(HELSINKI)).replace(tzinfo=None) for f in utc] == \
        [f.replace(tzinfo=None) for f in local]
    assert all(f.utcoffset() == timedelta(hours=2) for f in local)
    assert morning["last_fire_at"] is None and morning["last_run"] is None
    assert (morning["skipped"], morning["backfilled"], morning["missed"]) == (0, 0, 0)
    assert by_name["sync"]["next_fires"][0] == "2027-01-08T10:15:00+00:00"


def test_schedules_text_lists_next_fires_in_both_zones(config: ResolvedConfig):
    out = command("schedules")
    assert "morning-report: 0 9 * * 1-5 (Europe/Helsinki)" in out
    assert "next  2027-01-11T09:00:00+02:00  (2027-01-11T07:00:00Z)" in out
    assert "by-hand" not in out


# ---- manage.py wakeup --------------------------------------------------------------------------

def test_wakeup_systemd_prints_a_service_and_a_timer_naming_manage_py_and_the_project():
    out = command("wakeup", "systemd")
    base = str(settings.BASE_DIR)
    assert "# /etc/systemd/system/sanoma-worker.service" in out
    assert "# /etc/systemd/system/sanoma-worker.timer" in out
    assert "[Service]" in out and "[Timer]" in out and "[Install]" in out
    assert f"WorkingDirectory={base}" in out
    assert f"{base}/manage.py worker --stop-when-idle" in out
    assert f"{base}/manage.py supervise" in out
    assert "OnUnitInactiveSec=60s" in out


def test_wakeup_show_prints_the_wakeup_row():
    assert command("wakeup", "show").splitlines() == ["at: -", "stopped_at: -", "last_error: -"]
    at = datetime(2027, 1, 11, 7, 0, tzinfo=UTC)
    WakeupRow.objects.filter(pk=1).update(at=at, stopped_at=NOW, last_error="the supervisor did not answer")
    lines = command("wakeup", "show").splitlines()
    assert lines[0].startswith("at: 2027-01-11 07:00:00")
    assert lines[1].startswith("stopped_at: 2027-01-08 10:00:00")
    assert lines[2] == "last_error: the supervisor did not answer"


def test_the_wake_up_page_says_what_its_row_is_for(config: ResolvedConfig):
    client = browser("sam", perms=("wakeups.view_wakeuprow",))
    page = client.get("/admin/wakeups/wakeuprow/").content.decode()
    assert "Worker wake-up: when a worker that stopped while idle must start again" in page
    assert ">Wakeup<" not in page
