"""(h) the engine's step with the ledger's hash chain and without it."""
from __future__ import annotations

import itertools
import statistics
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from engine_bench.database import backend_cpu
from engine_bench.figures import paired_ratio
from engine_bench.in_process import CPU_SPENT, advance_all, start_runs

_PLAIN_INDEX = itertools.count(10**6)  # chain_index of records written with the chain off: never repeated


@contextmanager
def chain_off() -> Iterator[None]:
    """The ledger as before its hash chain: no link trigger, no digest or link in Python, no lock of
    the run row in the lease check. Each record still
    gets a distinct chain_index (a counter), so the (run_id, chain_index) unique index that replaced
    the run_id index is maintained in both modes."""
    from django.db import connection

    from runs import ledger_chain
    from runs.engine import fastpath, transitions

    def plain(record: Any) -> None:  # for the trigger, or linked after a record: neither, here
        record.chain_index, record.prev_hash, record.hash = next(_PLAIN_INDEX), "", ""

    def plain_after(record: Any, last: tuple[int, str]) -> tuple[int, str]:
        plain(record)
        return record.chain_index, record.hash

    # Every writer on PostgreSQL readies its record for the trigger through `for_trigger` (the ORM's
    # `prepare` too), or links it itself through `link_after`.
    originals = ledger_chain.for_trigger, transitions.link_after, fastpath._CHECKING
    with connection.cursor() as cursor:
        cursor.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER runs_ledgerrecord_chain")
    ledger_chain.for_trigger = plain
    transitions.link_after = plain_after
    # The lease check's lock on the run row is the chain's (one writer of a run's chain at a time).
    fastpath._CHECKING = fastpath._CHECKING.replace("FOR NO KEY UPDATE", "")
    try:
        yield
    finally:
        ledger_chain.for_trigger, transitions.link_after, fastpath._CHECKING = originals
        with connection.cursor() as cursor:
            cursor.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER runs_ledgerrecord_chain")


def hash_chain_cost(config: Any, runs: int, steps: int, rounds: int) -> dict[str, float]:
    """(h) the engine's step with the hash chain and without it, rounds alternating (seconds per step,
    medians): per_step over 10-call runs, and marginal (minus 0-call runs); `ratio` and
    `ratio_marginal`, the median over rounds of the round's with / without (each round measures both
    side by side, so a machine that drifts between rounds moves both halves of a pair, as (b)'s
    ratio to the bare insert is taken); and the CPU each side
    spends per step of the 10-call runs: this process (`cpu`) and its PostgreSQL backend (`pg_cpu`,
    NaN when the server's /proc is not readable here). CPU is the steadier figure on a loaded machine."""
    from contextlib import nullcontext

    from runs import ledger

    found: dict[str, list[float]] = {name: [] for mode in ("with", "without")
                                     for name in (mode, mode + "_marginal", mode + "_cpu", mode + "_pg_cpu")}
    for r in range(rounds):
        for mode in ("with", "without") if r % 2 == 0 else ("without", "with"):
            with chain_off() if mode == "without" else nullcontext():
                full_ids = start_runs(config, f"h{r}-{mode}-full", runs, steps)
                pg_before = backend_cpu()
                full = advance_all(config, full_ids)
                pg_after = backend_cpu()
                found[mode + "_cpu"].append(CPU_SPENT[0] / (runs * steps))
                if pg_before is not None and pg_after is not None:
                    found[mode + "_pg_cpu"].append((pg_after - pg_before) / (runs * steps))
                empty = advance_all(config, start_runs(config, f"h{r}-{mode}-empty", runs, 0))
            found[mode].append(full / (runs * steps))
            found[mode + "_marginal"].append((full - empty) / (runs * steps))
    result = {name: statistics.median(values) if values else float("nan") for name, values in found.items()}
    result["ratio"] = paired_ratio(found["with"], found["without"])
    result["ratio_marginal"] = paired_ratio(found["with_marginal"], found["without_marginal"])
    checked = ledger.verify("h0-with-full-0")  # a run written with the chain: its chain holds
    if checked.breaks or not checked.records:
        raise SystemExit(f"(h) the chain does not verify: {checked}")
    remove_unlinked("h%-without-%")
    return result


def remove_unlinked(run_ids_like: str) -> None:
    """The runs written with the chain off, removed (their records past the ledger's append-only
    triggers, as the database's owner may), so `manage.py ledger verify` of the bench's database
    holds: they were written to be measured, not kept."""
    from django.db import connection, transaction

    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute("ALTER TABLE runs_ledgerrecord DISABLE TRIGGER USER")
        cursor.execute("DELETE FROM runs_ledgerrecord WHERE run_id LIKE %s", [run_ids_like])
        cursor.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER USER")
        for table, column in (("runs_step", "run_id"), ("runs_runtag", "run_id"),
                              ("runs_runuserobjectpermission", "content_object_id"),
                              ("runs_rungroupobjectpermission", "content_object_id"), ("runs_run", "id")):
            cursor.execute(f"DELETE FROM {table} WHERE {column} LIKE %s", [run_ids_like])
