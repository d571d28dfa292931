"""Crash test: a real worker, SIGKILLed mid-way three times, loses nothing and repeats nothing.

50 runs of `five-posts` (5 non-idempotent calls each) on the file-backed fake of
`wakeups/tests/worker_company/`, advanced by a real `manage.py worker` (a django-q2 cluster plus the
sweep) in its own process group. The whole group is killed with SIGKILL three times while runs
are in flight, each time at a moment when the fake holds an effect the engine has not yet
checkpointed (the fake's driver sleeps `TALLY_AFTER_MS` after the effect, before replying), and a
new worker is started. In the end every run finished, the fake took each of the 250 effects
exactly once (the calls the crashes interrupted were repeated with the same idempotency key and
answered from the fake's remembered reply), and the ledger holds exactly one `op.called` per call.

The worker runs against the database pytest-django created for this test (see
`worker_company/harness.py`: `connection.settings_dict` names it, on SQLite the test file, on
PostgreSQL `test_<name>`), so the test is `transaction=True`: its writes are committed and the
worker's are visible to it. Runs on SQLite (default) and PostgreSQL
(`DATABASE_URL=postgresql://postgres@127.0.0.1:5432/<name> pytest wakeups/tests/test_crash.py`).

Every wait is bounded only to turn a hang into a failure: the waits for effects and for the runs to
finish fail after STALL_SECONDS without progress, not after a fixed time. No timing is asserted (the
figures are bench/engine.py's). A failure prints the worker's output.
"""
from __future__ import annotations

import time
from collections import Counter
from functools import partial
from pathlib import Path

import pytest
from django.db import connection

from runs import services
from runs.config.resolution import load_config
from runs.models import LedgerRecord, Run, RunStatus, Step, StepKind
from runs.testing import make_user
from wakeups.tests.worker_company.harness import ROOT, Worker, database_url, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

RUNS = 50
CALLS = 5
KILLS = 3
VERSION = "crash-test"
PREFIX = "crash-"
# The fake's driver: a little work before the effect, more after it (reply not yet checkpointed).
BEFORE_MS, AFTER_MS = 5, 40
# How long a kill waits for an unrecorded effect to show before killing anyway.
KILL_WINDOW_SECONDS = 5.0
# The longest the test waits without progress (effects at the fake, runs finished) before it calls
# the worker stuck. Only a hang fails on it: a loaded machine that is slow but getting on does not.
STALL_SECONDS = 60.0


def _effect_keys(fake) -> list[str]:
    return [effect["key"] for effect in fake.state["effects"]]


def _reached(fake, effects: int) -> bool:
    return len(_effect_keys(fake)) >= effects


def _checkpointed_keys() -> set[str]:
    rows = Step.objects.filter(run__id__startswith=PREFIX, kind=StepKind.CALL).values_list("run_id", "seq")
    return {f"{run_id}:{seq}" for run_id, seq in rows}


def _unrecorded(fake) -> set[str]:
    """Effects at the vendor whose call has no checkpoint yet. Read the fake first, then the
    database: a checkpoint committed in between then counts as recorded, never the reverse."""
    effects = set(_effect_keys(fake))
    return effects - _checkpointed_keys()


def _diagnosis() -> str:
    """The runs' and the broker's state, for a failure message."""
    from django.utils import timezone
    from django_q.models import OrmQ

    now = timezone.now()
    queue = list(OrmQ.objects.values_list("id", "lock"))
    locked = [lock for _, lock in queue if lock > now]
    unfinished = Run.objects.filter(id__startswith=PREFIX).exclude(status=RunStatus.FINISHED).order_by("id")
    rows = [f"{r.id} {r.status} lease={r.lease_owner or '-'} until={r.lease_until} queued_at={r.queued_at}"
            for r in unfinished]
    return (f"now {now}; broker queue: {len(queue)} task(s), {len(locked)} locked "
            f"(locks until {sorted(locked)[:3]}...)\nunfinished runs:\n  " + "\n  ".join(rows))


def _status_counts() -> dict[str, int]:
    return dict(Counter(Run.objects.filter(id__startswith=PREFIX).values_list("status", flat=True)))


def test_sigkilled_worker_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    db_url = database_url(connection.settings_dict)
    var = tmp_path / "var"
    (var / "fakes").mkdir(parents=True)
    config = load_config(ROOT, fakes="instance", fake_dir=var / "fakes", app_version=VERSION)
    fake = config.fakes["tally"]
    make_user("crash-tester", perms=["runs.start_workflow"])
    env = worker_env(db_url=db_url, var_dir=var, version=VERSION, TALLY_BEFORE_MS=BEFORE_MS, TALLY_AFTER_MS=AFTER_MS)
    worker = Worker(env, tmp_path / "worker.log")
    kills: list[dict] = []
    orphans: set[str] = set()
    started = time.monotonic()
    try:
        for i in range(RUNS):
            services.start(workflow="five-posts", input={"label": f"r{i}"}, started_by="crash-tester",
                           run_id=f"{PREFIX}{i:02d}", config=config)
        worker.start()
        for k in range(KILLS):
            threshold = (k + 1) * RUNS * CALLS // (KILLS + 2)
            worker.wait_for(partial(_reached, fake, threshold), within=STALL_SECONDS,
                            progress=lambda: len(_effect_keys(fake)), what=f"{threshold} effects before kill {k + 1}")
            # Kill while an effect is unrecorded, so the restart must repeat a call; if none shows
            # within the window, kill anyway (the kill is still mid-way).
            ends = time.monotonic() + KILL_WINDOW_SECONDS
            while not _unrecorded(fake) and time.monotonic() < ends:
                time.sleep(0.002)
            worker.kill()
            frozen = _unrecorded(fake)  # nothing moves now: these calls must be repeated
            orphans |= frozen
            counts = _status_counts()
            kills.append({"at_effects": len(_effect_keys(fake)), "unrecorded": sorted(frozen), "statuses": counts})
            assert counts.get(RunStatus.FINISHED, 0) < RUNS, f"kill {k + 1} came after every run finished: {kills}"
            worker.start()
        worker.wait_for(lambda: _status_counts().get(RunStatus.FINISHED, 0) == RUNS
                        or _status_counts().get(RunStatus.FAILED, 0),
                        within=STALL_SECONDS,
                        progress=lambda: (len(_effect_keys(fake)), _status_counts().get(RunStatus.FINISHED, 0)),
                        what=f"all {RUNS} runs to finish")
        assert worker.terminate(within=STALL_SECONDS) == 0, worker.describe()
    except BaseException:
        print(f"kills: {kills}\n{_diagnosis()}\n{worker.describe()}")
        raise
    finally:
        worker.cleanup()
    elapsed = time.monotonic() - started

    context = f"kills: {kills}\n{worker.describe()}"
    # Every run finished with its five entries.
    runs = {run.id: run for run in Run.objects.filter(id__startswith=PREFIX)}
    assert len(runs) == RUNS
    assert {run.status for run in runs.values()} == {RunStatus.FINISHED}, (_status_counts(), context)

    # The fake: each of the 250 calls took effect exactly once.
    expected = {f"{PREFIX}{i:02d}:{seq}" for i in range(RUNS) for seq in range(1, CALLS + 1)}
    effects = fake.state["effects"]
    keys = Counter(effect["key"] for effect in effects)
    assert len(effects) == RUNS * CALLS, (len(effects), [k for k, n in keys.items() if n > 1], context)
    assert set(keys) == expected and max(keys.values()) == 1
    # Its call log: one accepted call per key, every other call a repeat answered from memory.
    calls = fake.calls
    outcomes = Counter(call["outcome"] for call in calls)
    assert set(outcomes) <= {"ok", "repeat"}, (outcomes, context)
    accepted = Counter(call["idempotency_key"] for call in calls if call["outcome"] == "ok")
    repeated = Counter(call["idempotency_key"] for call in calls if call["outcome"] == "repeat")
    assert set(accepted) == expected and max(accepted.values()) == 1
    assert set(repeated) <= expected
    # The kills interrupted calls between effect and checkpoint; each was repeated, not redone.
    assert orphans, f"no kill caught an effect before its checkpoint: {kills}"
    assert orphans <= set(repeated), (sorted(orphans - set(repeated)), context)
    # The run saw the fake's first reply even when its call was repeated.
    entry_of = {effect["key"]: effect["entry_id"] for effect in effects}
    for run_id, run in runs.items():
        assert run.result == {"entries": [entry_of[f"{run_id}:{seq}"] for seq in range(1, CALLS + 1)]}, run_id

    # The engine's tables: one checkpoint and exactly one op.called per call, one end per run.
    assert _checkpointed_keys() == expected
    called = list(LedgerRecord.objects.filter(run_id__startswith=PREFIX, kind="op.called").values_list("run_id", "seq"))
    assert len(called) == RUNS * CALLS and {f"{r}:{s}" for r, s in called} == expected
    finished = Counter(LedgerRecord.objects.filter(run_id__startswith=PREFIX, kind="run.finished")
                       .values_list("run_id", flat=True))
    assert len(finished) == RUNS and max(finished.values()) == 1

    print(f"\ncrash test: {RUNS} runs x {CALLS} calls, {len(kills)} kills at effects "
          f"{[k['at_effects'] for k in kills]}, {len(orphans)} unrecorded effect(s) at kills, "
          f"{sum(repeated.values())} repeat call(s) answered from memory, {elapsed:.1f} s")
