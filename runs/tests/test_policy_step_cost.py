"""What a Cedar policy costs a run's steps: no query of its own, and one evaluation per kind of call
a policy version sees (a call like one decided before is a look-up)."""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel

from runs.authoring import define_workflow
from runs.models import Run, RunStatus
from runs.policies import load_cedar_policy
from runs.tests.fixtures import SEND

POLICY = """
    @id("staff-send")
    permit(principal, action in Action::"send", resource);

    @id("money-needs-finance")
    @approve("group:finance")
    forbid(principal, action in Action::"money", resource);

    @id("no-spam")
    @reason("never to spam@")
    forbid(principal, action == Action::"acme.mail.send", resource) when { context.input.to == "spam@example.com" };
"""


class NotesInput(BaseModel):
    n: int


def notes(ctx, input: NotesInput):
    for i in range(input.n):
        ctx.acme.mail.send({"to": "ada@example.com", "text": f"note {i}"})
    return {"sent": input.n}


NOTES = define_workflow(name="notes", input=NotesInput, run=notes, uses=[SEND])


def _cedar(tmp_path: Path):
    directory = tmp_path / "policies"
    directory.mkdir()
    (directory / "main.cedar").write_text(dedent(POLICY).lstrip(), encoding="utf-8")
    policy = load_cedar_policy(directory)
    assert policy is not None
    return policy


def _queries(engine, run_id: str, n: int) -> int:
    """The queries advancing the run takes, less the pauses' and the limit overrides' (each read at
    most once a second per process, so a slow machine may read them during either run)."""
    engine.start("notes", {"n": n}, run_id=run_id)
    with CaptureQueriesContext(connection) as queries:
        engine.drain()
    assert Run.objects.get(pk=run_id).status == RunStatus.FINISHED
    periodic = ('"runs_pause"', '"runs_limitoverride"')
    return sum(1 for q in queries.captured_queries if not any(table in q["sql"] for table in periodic))


def test_a_cedar_policy_adds_no_query_to_a_runs_steps(engine_for, tmp_path):
    plain = engine_for(NOTES)
    _queries(plain, "warm-plain", 1)
    without = _queries(plain, "plain", 5)
    cedar = engine_for(NOTES, policy=_cedar(tmp_path))
    _queries(cedar, "warm-cedar", 1)
    assert _queries(cedar, "cedar", 5) == without


def test_each_kind_of_call_is_evaluated_once_per_policy_version(engine_for, tmp_path):
    policy = _cedar(tmp_path)
    engine = engine_for(NOTES, policy=policy)
    _queries(engine, "first", 5)
    # The text differs on every call, but no rule reads it: the first call was evaluated, the rest kept.
    assert (policy.decisions.misses, policy.decisions.hits) == (1, 4)
    _queries(engine, "second", 5)  # another run, the same calls
    assert (policy.decisions.misses, policy.decisions.hits) == (1, 9)
