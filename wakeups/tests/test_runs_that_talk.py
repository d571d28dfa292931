"""Child runs and message waits under a real `manage.py worker`.

- A worker SIGKILLed while parents are mid-way (each has started its child and is posting) is
  restarted: every parent replays from the top and finds its child in its recorded step, so no
  second child is started, and every parent ends with its child's output.
- A message wait with a timeout, and no message, fails the wait with `wait_timed_out` once its
  deadline passes while the worker is up: the sweep wakes the run, no one else. How soon after the
  deadline is a figure (printed here, measured by bench/engine.py), not asserted.

Runs on the test's own database (`transaction=True`), as the other worker tests do.
"""
from __future__ import annotations

import time
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest
from django.db import connection

from runs import recovery, services
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import clock
from runs.models import LedgerRecord, Run, RunStatus, Step, StepKind
from runs.testing import make_user
from wakeups.tests.worker_company.harness import ROOT, Worker, database_url, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

STARTER = "talk-tester"
PARENTS = 8
STALL_SECONDS = 60.0
KILL_WINDOW_SECONDS = 5.0


def _site(tmp_path: Path, version: str, **env: object) -> tuple[ResolvedConfig, dict[str, str]]:
    """The worker company on file-backed fakes under `tmp_path`, its starter, and a worker's environment."""
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    config = load_config(ROOT, fakes="instance", fake_dir=var / "fakes", app_version=version)
    make_user(STARTER, perms=["runs.start_workflow"])
    return config, worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version=version, **env)


def _parents() -> dict[str, Run]:
    return {run.id: run for run in Run.objects.filter(workflow="parent-posts")}


def _children_started() -> int:
    return Run.objects.filter(parent__isnull=False).count()


def _unrecorded_parent_posts(fake) -> set[str]:
    """Parents' own posts the fake took that have no checkpoint yet: a kill now catches a parent
    between starting its child and recording its next call."""
    keys = {e["key"] for e in fake.state["effects"] if e["key"].startswith("parent-")}
    recorded = {f"{r}:{s}" for r, s in Step.objects.filter(run__workflow="parent-posts", kind=StepKind.CALL)
                .values_list("run_id", "seq")}
    return keys - recorded


def test_a_sigkilled_parent_replays_without_starting_a_second_child(tmp_path: Path) -> None:
    config, env = _site(tmp_path, "talk", TALLY_BEFORE_MS=5, TALLY_AFTER_MS=60)
    fake = config.fakes["tally"]
    worker = Worker(env, tmp_path / "worker.log")
    caught: set[str] = set()
    try:
        for i in range(PARENTS):
            services.start(workflow="parent-posts", input={"label": f"p{i}"}, started_by=STARTER,
                           run_id=f"parent-{i}", config=config)
        worker.start()
        worker.wait_for(lambda: _children_started() >= PARENTS // 2, within=STALL_SECONDS,
                        progress=_children_started, what="half the parents to start their child")
        ends = time.monotonic() + KILL_WINDOW_SECONDS
        while not _unrecorded_parent_posts(fake) and time.monotonic() < ends:
            time.sleep(0.002)
        worker.kill()
        caught = _unrecorded_parent_posts(fake)
        worker.start()

        def finished() -> int:
            return Run.objects.filter(status=RunStatus.FINISHED).count()

        total = PARENTS * 2
        worker.wait_for(lambda: finished() == total or Run.objects.filter(status=RunStatus.FAILED).exists(),
                        within=STALL_SECONDS, progress=finished, what=f"all {total} runs to finish")
        assert worker.terminate(within=STALL_SECONDS) == 0, worker.describe()
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()

    parents = _parents()
    assert len(parents) == PARENTS
    for run_id, parent in parents.items():
        children = list(Run.objects.filter(parent_id=run_id))
        assert len(children) == 1, (run_id, [c.id for c in children])
        [child] = children
        assert (parent.status, child.status) == (RunStatus.FINISHED, RunStatus.FINISHED), (run_id, worker.describe())
        assert parent.result is not None and child.result is not None
        assert parent.result["child"] == child.id and parent.result["child_entries"] == child.result["entries"]
        started = LedgerRecord.objects.filter(run_id=run_id, kind="run.child_started").count()
        assert started == 1, run_id
    # Every call took effect once at the fake, the interrupted ones included.
    keys = Counter(e["key"] for e in fake.state["effects"])
    assert max(keys.values()) == 1 and len(keys) == PARENTS * (1 + 5)
    print(f"\nchild runs: {PARENTS} parents, 1 kill, {len(caught)} parent call(s) caught between effect and checkpoint")


def test_a_message_wait_times_out_while_the_worker_is_up(tmp_path: Path) -> None:
    config, env = _site(tmp_path, "word")
    worker = Worker(env, tmp_path / "worker.log")
    try:
        worker.start()
        run = services.start(workflow="await-word", input={"timeout_ms": 1500}, started_by=STARTER,
                             run_id="word-1", config=config)
        worker.wait_for(lambda: Run.objects.get(pk=run.id).status == RunStatus.FINISHED, within=STALL_SECONDS,
                        what="the wait to time out and the run to finish")
        assert worker.terminate(within=STALL_SECONDS) == 0, worker.describe()
    except BaseException:
        print(worker.describe())
        raise
    finally:
        worker.cleanup()
    began = Step.objects.get(run_id="word-1", kind=StepKind.WAIT)
    read = Step.objects.get(run_id="word-1", kind=StepKind.MESSAGE)
    assert read.error is not None and read.error["code"] == "wait_timed_out"
    assert began.output is not None
    until = began.output["until"]
    result = Run.objects.get(pk="word-1").result
    assert result is not None
    resumed = clock.to_ms(datetime.fromisoformat(result["timed_out_at"]))
    assert resumed >= until  # never before its deadline
    print(f"\nmessage wait: resumed {resumed - until} ms after its deadline")


def test_a_worker_killed_during_a_durable_retry_wait_loses_nothing_and_retries_once(tmp_path: Path) -> None:
    """The vendor refuses with a 429 and Retry-After: 5 s. The run waits durably (no thread sleeps);
    the worker is SIGKILLed during the wait and a new one started; the retry happens once, after
    the wait, on the new worker."""
    config, env = _site(tmp_path, "retry")
    fake = config.fakes["tally"]
    fake.rate_limit("tally.entry.count", retry_after=5)
    first = Worker(env, tmp_path / "first.log")
    second = Worker(env, tmp_path / "second.log")
    try:
        first.start()
        services.start(workflow="count-later", input={}, started_by=STARTER, run_id="retry-1", config=config)
        first.wait_for(lambda: Run.objects.get(pk="retry-1").waiting_for == "retry", within=STALL_SECONDS,
                       what="the run to wait for its retry")
        first.kill()
        second.start()
        second.wait_for(lambda: Run.objects.get(pk="retry-1").status == RunStatus.FINISHED, within=STALL_SECONDS,
                        what="the retry to succeed on the second worker")
        assert second.terminate(within=STALL_SECONDS) == 0, second.describe()
    except BaseException:
        print(first.describe(), second.describe())
        raise
    finally:
        first.cleanup()
        second.cleanup()
    calls = [c for c in fake.calls if c["op"] == "tally.entry.count"]
    assert [c["outcome"] for c in calls] == ["error", "ok"]
    [failed] = LedgerRecord.objects.filter(run_id="retry-1", kind="op.attempt_failed")
    [called] = LedgerRecord.objects.filter(run_id="retry-1", kind="op.called")
    assert failed.body["wait_ms"] == 5000 and called.body["attempt"] == 2
    assert called.at >= failed.body["next_at"]  # not before the vendor's Retry-After


def test_a_worker_sigkilled_after_an_ignored_key_call_leaves_the_run_in_doubt(tmp_path: Path) -> None:
    """The vendor answered (its effect is in the fake's file) and the worker was killed before the
    engine recorded the reply. The vendor ignores idempotency keys, so the next worker does not
    send the call again: the run waits in doubt until an operator says what happened."""
    config, env = _site(tmp_path, "doubt", TALLY_AFTER_MS=3000)
    fake = config.fakes["tally"]
    make_user("ops", perms=["runs.view_any_run", "runs.operate_runs"])
    first = Worker(env, tmp_path / "first.log")
    second = Worker(env, tmp_path / "second.log")
    try:
        first.start()
        services.start(workflow="charge-once", input={}, started_by=STARTER, run_id="doubt-1", config=config)
        first.wait_for(lambda: len(fake.state["effects"]) == 1, within=STALL_SECONDS, what="the vendor's effect")
        first.kill()  # the reply is still on its way back: nothing is recorded
        assert not Step.objects.filter(run_id="doubt-1").exists()
        second.start()
        second.wait_for(lambda: Run.objects.get(pk="doubt-1").waiting_for == "in_doubt", within=STALL_SECONDS,
                        what="the next worker to find the call in doubt")
        assert len([c for c in fake.calls if c["op"] == "tally.entry.charge"]) == 1  # not sent again
        entry = fake.state["effects"][0]["entry_id"]
        recovery.resolve_in_doubt(run_id="doubt-1", happened=True, output={"entry_id": entry, "n": 1}, by="ops",
                                  config=config)
        second.wait_for(lambda: Run.objects.get(pk="doubt-1").status == RunStatus.FINISHED, within=STALL_SECONDS,
                        what="the run to go on after the answer")
        assert second.terminate(within=STALL_SECONDS) == 0, second.describe()
    except BaseException:
        print(first.describe(), second.describe())
        raise
    finally:
        first.cleanup()
        second.cleanup()
    assert Run.objects.get(pk="doubt-1").result == {"entry": entry}
    assert len(fake.state["effects"]) == 1
    assert LedgerRecord.objects.filter(run_id="doubt-1", kind="op.resolved").count() == 1
