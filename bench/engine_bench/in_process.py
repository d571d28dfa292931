"""(b) and (e): the engine's cost per checkpointed step, runs advanced in this process, and the
transactions each step takes."""
from __future__ import annotations

import cProfile
import statistics
import time
from collections.abc import Callable
from typing import Any, TypedDict

from engine_bench.database import Counted, xact_commit
from engine_bench.figures import paired_ratio


def start_runs(config: Any, prefix: str, count: int, steps: int) -> list[str]:
    from django_q.models import OrmQ

    from runs import services

    ids = [
        services.start(
            workflow="steps", input={"n": steps}, started_by="bench", run_id=f"{prefix}-{i}", config=config
        ).id
        for i in range(count)
    ]
    OrmQ.objects.all().delete()  # no cluster runs here: advance() is called directly
    return ids


def advance_all(config: Any, ids: list[str]) -> float:
    from runs.engine.advance import advance

    started, cpu = time.perf_counter(), time.process_time()
    for run_id in ids:
        outcome = advance(run_id, worker_id="bench-in-process", config=config)
        if outcome != "finished":
            raise SystemExit(f"run {run_id} did not finish in one advance: {outcome}")
    CPU_SPENT[0] = time.process_time() - cpu
    return time.perf_counter() - started


CPU_SPENT = [0.0]  # this process's CPU seconds in the last advance_all


class InProcess(TypedDict):
    """What in_process measures: seconds, transactions and statements per step (medians over rounds)."""

    per_step: float
    marginal: float
    commits: float
    commits_marginal: float
    statements: float
    statements_marginal: float
    xacts: float
    cpu: float
    cpu_marginal: float
    range: tuple[float, float]  # the fastest and slowest round's per_step
    reference: list[float]  # the reference's seconds per row, one per round (empty without one)
    ratio: float  # median over rounds of per_step / that round's reference (nan without one)
    ratio_marginal: float  # the same for the marginal step


def in_process(config: Any, runs: int, steps: int, rounds: int, profile: str | None,
               reference: Callable[[], float] | None = None) -> InProcess:
    """(b) time per step, amortized and marginal; (e) commits and statements per step. With a
    `reference` (the bare insert: seconds per row), it is measured once a round, before the round's
    steps in even rounds and after them in odd ones, and the step's ratio to it is taken per round."""
    advance_all(config, start_runs(config, "warm", 20, steps))
    per_step, marginal, commits, commits_marginal, statements, statements_marginal, xacts = [], [], [], [], [], [], []
    cpu, cpu_marginal, references = [], [], []
    for r in range(rounds):
        if reference is not None and r % 2 == 0:
            references.append(reference())
        full_ids = start_runs(config, f"b{r}-full", runs, steps)
        empty_ids = start_runs(config, f"b{r}-empty", runs, 0)
        full, empty = Counted(), Counted()
        x0 = xact_commit()
        with full.active():
            t_full = advance_all(config, full_ids)
        cpu_full = CPU_SPENT[0]
        x1 = xact_commit()
        with empty.active():
            t_empty = advance_all(config, empty_ids)
        cpu_empty = CPU_SPENT[0]
        n = runs * steps
        cpu.append(cpu_full / n)
        cpu_marginal.append((cpu_full - cpu_empty) / n)
        per_step.append(t_full / n)
        marginal.append((t_full - t_empty) / n)
        # A transaction is an explicit COMMIT or a statement run in autocommit (which commits itself).
        commits.append((full.commits + full.autocommit_statements) / n)
        commits_marginal.append(
            (full.commits + full.autocommit_statements - empty.commits - empty.autocommit_statements) / n
        )
        statements.append((full.statements + 0.0) / n)
        statements_marginal.append((full.statements - empty.statements) / n)
        xacts.append((x1 - x0 - 2) / n)  # the two xact_commit() reads are transactions too
        if reference is not None and r % 2 == 1:
            references.append(reference())
    if profile:
        ids = start_runs(config, "prof", runs, steps)
        profiler = cProfile.Profile()
        profiler.enable()
        advance_all(config, ids)
        profiler.disable()
        profiler.dump_stats(profile)
    return {
        "per_step": statistics.median(per_step),
        "marginal": statistics.median(marginal),
        "commits": statistics.median(commits),
        "commits_marginal": statistics.median(commits_marginal),
        "statements": statistics.median(statements),
        "statements_marginal": statistics.median(statements_marginal),
        "xacts": statistics.median(xacts),
        "cpu": statistics.median(cpu),
        "cpu_marginal": statistics.median(cpu_marginal),
        "range": (min(per_step), max(per_step)),
        "reference": references,
        "ratio": paired_ratio(per_step, references) if references else float("nan"),
        "ratio_marginal": paired_ratio(marginal, references) if references else float("nan"),
    }
