"""The start in one statement (PostgreSQL): it writes what the ORM start writes, and leaves to it
every start it cannot make (a starter it does not know or allow that way, a taken id).

Each test starts runs both ways, the ORM way by turning the one-statement form off, and compares
the rows, the ledger records, the tasks and the NOTIFYs. Real commits (`transaction=True`): the
NOTIFY is delivered when the start commits.
"""
from __future__ import annotations

from typing import Any

import psycopg
import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django_q.models import OrmQ
from django_q.signing import SignedPackage
from guardian.shortcuts import assign_perm
from prometheus_client import REGISTRY
from pydantic import BaseModel

from connectors.errors import SanomaError, error_code
from runs import ledger, services
from runs.approvals.permissions import principal_of, start_permission_id, workflow_entry
from runs.config.workflows import define_workflow
from runs.engine import dispatch
from runs.models import LedgerRecord, Run
from runs.telemetry import metrics
from runs.testing import make_user
from runs.tests.transaction_count import counted

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the one-statement start is PostgreSQL's"),
]


class Order(BaseModel):
    order_id: str = "1"


ORDER = define_workflow(name="order", input=Order, run=lambda ctx, input: {"ok": True})
OTHER = define_workflow(name="other", input=Order, run=lambda ctx, input: {"ok": True})


@pytest.fixture
def engine(engine_for):
    start_permission_id()  # read once per process: not counted below
    made = engine_for(ORDER, OTHER)
    yield made
    OrmQ.objects.all().delete()


@pytest.fixture
def listener():
    """A connection of its own LISTENing on the channel the workers' supervisors wait on."""
    made = psycopg.connect(**connection.get_connection_params(), autocommit=True)
    made.execute(f"LISTEN {dispatch.RUNNABLE_CHANNEL}")
    yield made
    made.close()


def _notes(listener: psycopg.Connection, seconds: float = 2.0) -> list[str]:
    """The payloads of the NOTIFYs that arrive within `seconds` (stops at the first one)."""
    return [note.payload for note in listener.notifies(timeout=seconds, stop_after=1)]


def _the_orm_way(monkeypatch: Any) -> None:
    monkeypatch.setattr(dispatch, "enqueues_in_one_statement", lambda: False)


def _row(run_id: str) -> dict[str, Any]:
    row = Run.objects.filter(pk=run_id).values().get()
    return {k: v for k, v in row.items() if k not in ("id", "created_at", "updated_at", "queued_at")}


def _records(run_id: str) -> list[dict[str, Any]]:
    # The record's id, moment and linked hash name the run and its moment: all else is compared.
    return [{k: v for k, v in r.items() if k not in ("id", "record_id", "run_id", "at", "hash")}
            for r in LedgerRecord.objects.filter(run_id=run_id).values()]


def _task(run_id: str) -> dict[str, Any]:
    [task] = [t for t in (SignedPackage.loads(q.payload) for q in OrmQ.objects.all()) if t["args"] == (run_id,)]
    # Its own id and moment; its name names the run.
    return {k: v for k, v in task.items() if k not in ("id", "started", "args", "name")} | {
        "name": task["name"].replace(run_id, "<run>")}


@pytest.mark.parametrize("as_principal", [False, True], ids=["username", "principal"])
def test_the_statement_writes_what_the_orm_start_writes(engine, listener, monkeypatch, as_principal):
    # Groups whose names sort differently by code point and by a language's rules.
    make_user("erin", groups=["zeta", "Alpha", "beta", "éclair", "Zulu"], perms=["runs.start_workflow"])

    def who() -> Any:
        return principal_of("erin") if as_principal else "erin"

    with counted() as count:
        fast = services.start(workflow="order", input={"order_id": "7"}, started_by=who(), run_id="fast-1",
                              config=engine.config)
    assert len(count.statements) == 1 + (2 if as_principal else 0)  # principal_of's two reads
    assert _notes(listener) == ["fast-1"]  # no other task was ready
    services.start(workflow="order", input={"order_id": "7"}, started_by=who(), run_id="fast-2", config=engine.config)
    assert _notes(listener, 0.3) == []  # one was
    fast_task = _task("fast-1")
    OrmQ.objects.all().delete()

    _the_orm_way(monkeypatch)
    orm = services.start(workflow="order", input={"order_id": "7"}, started_by=who(), run_id="orm-1",
                         config=engine.config)
    assert _notes(listener) == ["orm-1"]
    services.start(workflow="order", input={"order_id": "7"}, started_by=who(), run_id="orm-2", config=engine.config)
    assert _notes(listener, 0.3) == []

    assert _row("fast-1") == _row("orm-1")
    assert _row("fast-1")["groups"] == ["Alpha", "Zulu", "beta", "zeta", "éclair"] == list(principal_of("erin").groups)
    assert _records("fast-1") == _records("orm-1") and len(_records("fast-1")) == 1
    assert not ledger.verify("fast-1").breaks and not ledger.verify("orm-1").breaks
    assert fast_task == _task("orm-1")
    # The run handed back is the row as a query reads it, as the ORM start's is.
    fields = [f.attname for f in Run._meta.concrete_fields]
    for started in (fast, orm):
        assert not started._state.adding
        read = Run.objects.get(pk=started.pk)
        assert {f: getattr(started, f) for f in fields} == {f: getattr(read, f) for f in fields}


@pytest.mark.parametrize("how", ["superuser", "group"])
def test_a_superuser_and_a_holder_through_a_group_start_in_one_statement(engine, how):
    if how == "superuser":
        make_user("sam", superuser=True)
    else:
        make_user("sam", groups=["starters"])
        assign_perm("runs.start_workflow", get_user_model().objects.get(username="sam").groups.get())
    with counted() as count:
        run = services.start(workflow="order", input={}, started_by="sam", config=engine.config)
    assert len(count.statements) == 1, count.statements
    assert Run.objects.get(pk=run.pk).groups == ([] if how == "superuser" else ["starters"])


def test_a_starter_allowed_on_one_workflow_only_is_started_the_orm_way(engine):
    make_user("olga")
    assign_perm("runs.start_workflow", get_user_model().objects.get(username="olga"), workflow_entry("order"))
    with counted() as count:
        run = services.start(workflow="order", input={}, started_by="olga", config=engine.config)
    assert count.statements[0].lstrip().startswith("WITH who AS") and count.commits == 1
    assert Run.objects.filter(pk=run.pk).exists() and OrmQ.objects.count() == 1
    with pytest.raises(SanomaError) as refused:
        services.start(workflow="other", input={}, started_by="olga", config=engine.config)
    assert error_code(refused.value) == "permission_denied"
    assert not Run.objects.filter(workflow="other").exists() and OrmQ.objects.count() == 1


@pytest.mark.parametrize("who", ["inactive", "nobody", "no-permission"])
def test_a_starter_who_may_not_start_is_refused_as_before_with_nothing_written(engine, who):
    if who == "inactive":
        make_user("ivy", perms=["runs.start_workflow"])
        get_user_model().objects.filter(username="ivy").update(is_active=False)
    elif who == "no-permission":
        make_user("ivy")
    username = "ivy" if who != "nobody" else "nobody-here"
    with pytest.raises(SanomaError) as refused:
        services.start(workflow="order", input={}, started_by=username, run_id="refused", config=engine.config)
    assert error_code(refused.value) == "permission_denied"
    assert not Run.objects.filter(pk="refused").exists() and not OrmQ.objects.exists()
    assert not LedgerRecord.objects.filter(run_id="refused").exists()


def test_a_taken_id_inside_a_callers_transaction_leaves_that_transaction_usable(engine):
    first = services.start(workflow="order", input={"order_id": "1"}, started_by="alice", run_id="taken",
                           config=engine.config)
    with transaction.atomic():
        again, created = services.start_or_get(workflow="order", input={"order_id": "1"}, started_by="alice",
                                               run_id="taken", config=engine.config)
        assert (again.pk, created) == (first.pk, False)
        with pytest.raises(SanomaError) as differs:
            services.start(workflow="order", input={"order_id": "2"}, started_by="alice", run_id="taken",
                           config=engine.config)
        assert error_code(differs.value) == "invalid_input" and differs.value.data["differs"] == ["input"]
        assert Run.objects.filter(pk="taken").count() == 1  # the transaction still answers
        started = services.start(workflow="order", input={}, started_by="alice", run_id="inside",
                                 config=engine.config)
    assert Run.objects.filter(pk=started.pk).exists() and OrmQ.objects.count() == 2
    assert LedgerRecord.objects.filter(run_id="taken").count() == 1


def test_a_start_rolled_back_with_its_callers_transaction_leaves_nothing(engine):
    with pytest.raises(RuntimeError), transaction.atomic():
        services.start(workflow="order", input={}, started_by="alice", run_id="rolled-back", config=engine.config)
        raise RuntimeError("the caller fails after the start")
    assert not Run.objects.filter(pk="rolled-back").exists() and not OrmQ.objects.exists()


def _started_count() -> float:
    metrics.flush()  # as a scrape does
    return REGISTRY.get_sample_value("sanoma_runs_started_total", {"workflow": "order"}) or 0.0


def test_a_start_is_counted_once_when_it_commits_and_a_repeat_or_a_rolled_back_one_not_at_all(engine):
    before = _started_count()
    services.start(workflow="order", input={}, started_by="alice", run_id="counted", config=engine.config)
    assert _started_count() - before == 1  # in autocommit: committed with its statement
    services.start(workflow="order", input={}, started_by="alice", run_id="counted", config=engine.config)
    with pytest.raises(SanomaError):
        services.start(workflow="order", input={}, started_by="nobody-here", config=engine.config)
    with pytest.raises(RuntimeError), transaction.atomic():
        services.start(workflow="order", input={}, started_by="alice", run_id="rolled-back", config=engine.config)
        raise RuntimeError("the caller fails after the start")
    assert _started_count() - before == 1
