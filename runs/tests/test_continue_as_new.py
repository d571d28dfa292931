"""`ctx.continue_as_new(input)`: an endless workflow starts afresh with new input in the same run.

The run keeps its id, its ledger and its page; a `continue` step (with its `run.continued`
record) is the boundary, and every replay afterwards starts after it: the history before it is
kept, shown and verified, but never read again. Replay itself reads rows, not model instances
(`runs.engine.history`). Runs advance through the in-process drain, as elsewhere.
"""
from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel, Field

from runs import ledger, recovery, services
from runs.admin.timeline import timeline_row
from runs.authoring import define_workflow
from runs.config.outline import outline_of
from runs.engine import history
from runs.engine.proof import prove
from runs.models import LedgerRecord, Run, RunStatus, Step
from runs.testing import make_user
from runs.tests.fixtures import GET
from runs.tests.test_lint import flow


class Tally(BaseModel):
    total: int = 0
    rounds: int = Field(default=5, ge=0)
    every: int = 2


def tally(ctx, input: Tally):
    total = input.total
    for done in range(input.rounds):
        if done == input.every:
            ctx.continue_as_new({"total": total, "rounds": input.rounds - done, "every": input.every})
        total += ctx.wait_message("add")["n"]
    return {"total": total}


def swallowing(ctx, input: Tally):
    if input.rounds:
        try:
            ctx.continue_as_new({"total": input.total + 1, "rounds": input.rounds - 1})
        except Exception:  # a BaseException goes through: the run still starts afresh
            return {"swallowed": True}
    return {"total": input.total}


def bad_input(ctx, input: Tally):
    ctx.continue_as_new({"rounds": -1})


def in_all(ctx, input: Tally):
    ctx.all([lambda: ctx.continue_as_new({})])


def call_then_continue(ctx, input: Tally):
    ctx.acme.order.get({"order_id": "1"})
    if input.rounds:
        ctx.continue_as_new({"total": input.total + 1, "rounds": input.rounds - 1})
    ctx.wait_message("go")
    return {"total": input.total}


def send(run: Run, n: int, key: str) -> None:
    services.send_message(run_id=run.id, topic="add", payload={"n": n}, message_id=key, by="alice")


def steps_of(run: Run) -> list[tuple[int, str, str]]:
    return list(Step.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "name"))


def test_a_run_that_continues_as_new_keeps_its_id_and_ledger_and_replays_only_its_new_generation(engine_for):
    engine = engine_for(define_workflow(name="tally", input=Tally, uses=["wait_message"], run=tally))
    run = engine.run("tally", {"rounds": 5, "every": 2})
    for n in range(1, 6):
        send(run, n, f"m{n}")
        engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"total": 15}), run.error
    assert Run.objects.count() == 1
    # Generation 1: rounds 1-2 (steps 1-4), continue at 5; generation 2: rounds 3-4 (6-9), continue
    # at 10; generation 3: round 5 (11-12). Step numbers go on growing across generations.
    assert [(seq, kind) for seq, kind, _ in steps_of(run)] == [
        (1, "wait"), (2, "message"), (3, "wait"), (4, "message"), (5, "continue"),
        (6, "wait"), (7, "message"), (8, "wait"), (9, "message"), (10, "continue"), (11, "wait"), (12, "message")]
    continued = engine.records(run, "run.continued")
    assert [(r["seq"], r["generation"], r["input"]) for r in continued] == [
        (5, 2, {"total": 3, "rounds": 3, "every": 2}), (10, 3, {"total": 10, "rounds": 1, "every": 2})]
    assert engine.kinds(run)[0] == "run.started" and engine.kinds(run)[-1] == "run.finished"
    assert ledger.verify(run.id).breaks == []
    assert run.input == {"rounds": 5, "every": 2}  # the run's input stays as it was sent


def test_a_wake_after_the_continuation_loads_only_the_current_generation_in_one_query(engine_for):
    engine = engine_for(define_workflow(name="tally", input=Tally, uses=["wait_message"], run=tally))
    run = engine.run("tally", {"rounds": 10, "every": 3})
    for n in range(4):
        send(run, 1, f"m{n}")
        engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING
    with CaptureQueriesContext(connection) as captured:
        loaded = history.load(run)
    assert len(captured) == 1
    # The continue step is at 7 (after three rounds); the fourth round read its message at 9 and waits at 10.
    assert (loaded.base, loaded.generation, loaded.input) == (7, 2, {"total": 3, "rounds": 7, "every": 3})
    assert sorted(loaded.steps) == [8, 9, 10]
    assert [(s.kind, s.name, s.next_seq) for s in loaded.steps.values()] == [
        ("wait", "add", 9), ("message", "add", 10), ("wait", "add", 11)]
    assert loaded.steps[9].output["payload"] == {"n": 1} and loaded.steps[9].error is None


def test_replay_reads_the_same_values_as_the_model_rows(engine_for):
    engine = engine_for(define_workflow(name="tally", input=Tally, uses=["wait_message"], run=tally))
    run = engine.run("tally", {"rounds": 3, "every": 99})
    send(run, 7, "a")
    engine.drain()
    loaded = history.load(run)
    for step in Step.objects.filter(run=run):
        got = loaded.steps[step.seq]
        assert (got.seq, got.kind, got.name, got.output, got.error, got.next_seq) == (
            step.seq, step.kind, step.name, step.output, step.error, step.next_seq)
    assert (loaded.base, loaded.generation, loaded.input) == (0, 1, run.input)


def test_except_exception_cannot_swallow_the_continuation(engine_for):
    engine = engine_for(define_workflow(name="swallow", input=Tally, run=swallowing))
    run = engine.run("swallow", {"rounds": 3})
    assert (run.status, run.result) == (RunStatus.FINISHED, {"total": 3}), run.error
    assert [kind for _, kind, _ in steps_of(run)] == ["continue", "continue", "continue"]


def test_a_continuation_with_input_its_workflow_refuses_fails_the_run_and_writes_nothing(engine_for):
    engine = engine_for(define_workflow(name="bad", input=Tally, run=bad_input))
    run = engine.run("bad")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "invalid_input")
    assert steps_of(run) == []
    assert not LedgerRecord.objects.filter(run_id=run.id, kind="run.continued").exists()


def test_a_continuation_inside_ctx_all_is_refused(engine_for):
    engine = engine_for(define_workflow(name="fan", input=Tally, uses=["all"], run=in_all))
    run = engine.run("fan")
    assert (run.status, run.error["code"]) == (RunStatus.FAILED, "invalid_input")
    assert "ctx.all" in run.error["message"]


def test_calls_of_an_earlier_generation_are_not_replayed_nor_made_again(engine_for):
    engine = engine_for(define_workflow(name="again", input=Tally, uses=[GET, "wait_message"],
                                        run=call_then_continue))
    run = engine.run("again", {"total": 0, "rounds": 2})
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "message"), run.error
    assert len(engine.fake.calls) == 3  # one call a generation
    assert [(seq, kind) for seq, kind, _ in steps_of(run)] == [
        (1, "call"), (2, "continue"), (3, "call"), (4, "continue"), (5, "call"), (6, "wait")]
    services.send_message(run_id=run.id, topic="go", payload={}, by="alice")
    engine.drain()
    run.refresh_from_db()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"total": 2}), run.error
    assert len(engine.fake.calls) == 3  # the wake replayed generation 3 only: no call made twice


def test_a_parked_run_that_continued_is_proven_over_its_current_generation(engine_for):
    engine = engine_for(define_workflow(name="again", input=Tally, uses=[GET, "wait_message"],
                                        run=call_then_continue))
    run = engine.run("again", {"total": 0, "rounds": 2})
    proof = prove(run=run, config=engine.config)
    assert (proof.outcome, proof.steps_replayed) == ("migrates", 2), proof.reason


def test_a_fork_after_a_continuation_replays_from_it(engine_for):
    make_user("ops", perms=["runs.view_any_run", "runs.operate_runs", "runs.rerun_runs", "runs.start_workflow"])
    engine = engine_for(define_workflow(name="again", input=Tally, uses=[GET, "wait_message"],
                                        run=call_then_continue))
    source = engine.run("again", {"total": 0, "rounds": 1})
    Run.objects.filter(pk=source.pk).update(status=RunStatus.FAILED)  # forks are made of ended runs
    plan = recovery.check_fork(run_id=source.id, from_step=4, by="ops", config=engine.config)
    assert plan.from_step == 4
    fork = recovery.fork(run_id=source.id, from_step=4, by="ops", config=engine.config)
    calls = len(engine.fake.calls)
    engine.drain()
    fork.refresh_from_db()
    assert (fork.status, fork.waiting_for) == (RunStatus.WAITING, "message"), fork.error
    assert len(engine.fake.calls) == calls  # steps 1-3 reused: its second generation's call is not made again
    assert history.load(fork).base == 2


def test_the_run_page_timeline_shows_the_continuation(engine_for):
    engine = engine_for(define_workflow(name="swallow", input=Tally, run=swallowing))
    run = engine.run("swallow", {"rounds": 1})
    [record] = engine.records(run, "run.continued")
    row = timeline_row(record)
    assert row["type"] == "run.continued" and "generation 2" in row["what"]


def test_the_outline_and_the_lint_accept_it(tmp_path):
    definition = define_workflow(name="tally", input=Tally, uses=["wait_message"], run=tally)
    assert outline_of(definition).problems == ()
    assert flow(tmp_path, '''
        from runs.authoring import define_workflow

        def run(ctx, input):
            ctx.wait_message("tick")
            ctx.continue_as_new({"round": 2})

        loop = define_workflow(name="loop", run=run)
        ''') == []


def test_a_long_history_is_built_with_the_collector_paused_and_it_is_on_again_after(engine_for, monkeypatch):
    import gc

    engine = engine_for(define_workflow(name="tally", input=Tally, uses=["wait_message"], run=tally))
    run = engine.run("tally", {"rounds": 3, "every": 99})
    send(run, 2, "a")
    engine.drain()
    short = history.load(run)
    monkeypatch.setattr(history, "GC_PAUSE_ROWS", 0)
    seen = []

    def decoded(values):
        seen.append(gc.isenabled())
        return [history._json(v) for v in values]

    monkeypatch.setattr(history, "_decoded", decoded)
    long = history.load(run)
    assert seen == [False] and gc.isenabled()
    assert {seq: (s.kind, s.output) for seq, s in long.steps.items()} == {
        seq: (s.kind, s.output) for seq, s in short.steps.items()}
