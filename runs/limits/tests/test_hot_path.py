"""What a call of an operation with no limit pays for limits: a look at the overrides last read, no
query. The overrides are read once a segment at most (so an operator's limit on such a connector
still holds from its runs' next segment)."""
from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from runs import services
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.engine.advance import Advanced, advance
from runs.limits import overrides
from runs.limits import services as limit_services
from runs.models import Run, RunStatus
from runs.testing import make_user, resolve_on_fakes


class Calls(BaseModel):
    n: int = 5


class Pong(BaseModel):
    n: int


class Ping(BaseModel):
    pass


plain_vendor = define_connector("plain", {"ping": {"send": op(effect="read", input=Ping, output=Pong,
                                                               idempotent=True)}})
def _fake(file=None):
    return define_fake(plain_vendor, initial=lambda: {"n": 0}, ops={"ping": {"send": lambda s, i, c: {"n": 1}}},
                       file=file)


plain = with_setup(plain_vendor, fake=_fake)
SEND = plain.op("plain.ping.send")
CALLS = define_workflow(name="plain-calls", input=Calls, uses=[SEND],
                        run=lambda ctx, input: {"n": sum(ctx.plain.ping.send({}).n for _ in range(input.n))})


@pytest.fixture
def config(db, monkeypatch):
    make_user("alice", perms=["runs.start_workflow"])
    make_user("olga", perms=["runs.pause"])
    made = resolve_on_fakes(SanomaConfig(connectors=[plain], workflows=[CALLS]))
    set_config(made)
    monkeypatch.setattr(overrides, "REFRESH_SECONDS", 0.0)  # every read that may query does
    overrides.forget()
    yield made
    set_config(None)
    overrides.forget()


def _advanced(config, n: int) -> tuple[Run, list[str]]:
    run = services.start(workflow="plain-calls", input={"n": n}, started_by="alice", config=config)
    with CaptureQueriesContext(connection) as seen:
        advance(run.id, worker_id="w-1", config=config)
    run.refresh_from_db()
    return run, [q["sql"] for q in seen.captured_queries if "runs_limit" in q["sql"]]


def test_calls_of_an_unlimited_connector_issue_no_limits_query(config):
    run, limits_queries = _advanced(config, 5)
    assert run.status == RunStatus.FINISHED and run.result == {"n": 5}
    # One read of the overrides as the segment begins; none for any of the five calls.
    assert len(limits_queries) == 1 and "runs_limitoverride" in limits_queries[0], limits_queries


def test_an_operators_limit_on_an_unlimited_connector_holds_from_the_next_segment(config):
    limit_services.set_override(target="plain", rate="1/min", by="olga")
    run, _ = _advanced(config, 2)
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "rate limit of plain")
    limit_services.reset(target="plain", by="olga")  # woken at once, and no limit now
    assert advance(run.id, worker_id="w-1", config=config) is Advanced.FINISHED
