"""(k) where the hash chain's cost sits, and whether keeping the chain's head on the run row cuts it.

Records are inserted one per transaction (autocommit, as the engine's checkpoint is), each on a run
of its own, under three link triggers, rounds alternating: `current` (the link trigger of migration
0005: it locks the run row, reads the run's last record), `head_on_run` (the run row keeps the
chain's length and head and the trigger links with one UPDATE of it: a design measured here, not
adopted) and `off` (no link trigger). Per insert: the PostgreSQL backend's CPU (from /proc, steady
on a loaded machine) and wall time. The bench database only: its run table gets the head columns.
"""
from __future__ import annotations

import hashlib
import statistics
import time
from typing import Any

from engine_bench.database import backend_cpu

CURRENT = """
CREATE OR REPLACE FUNCTION sanoma_ledger_chain() RETURNS trigger AS $$
DECLARE
    last_hash text;
    last_index integer;
BEGIN
    PERFORM 1 FROM runs_run WHERE id = NEW.run_id FOR NO KEY UPDATE;
    SELECT hash, chain_index INTO last_hash, last_index FROM runs_ledgerrecord
        WHERE run_id = NEW.run_id ORDER BY chain_index DESC LIMIT 1;
    NEW.chain_index := COALESCE(last_index + 1, 0);
    NEW.prev_hash := COALESCE(last_hash, '');
    NEW.hash := encode(sha256(convert_to(NEW.prev_hash || NEW.hash, 'UTF8')), 'hex');
    RETURN NEW;
END;
$$ LANGUAGE plpgsql"""
HEAD_ON_RUN = """
CREATE OR REPLACE FUNCTION sanoma_ledger_chain() RETURNS trigger AS $$
DECLARE
    prev text;
    head text;
    idx integer;
BEGIN
    -- SET reads the row as it was: the head becomes prev, the new link the head; the update locks
    -- the row to the end of the transaction, as the current trigger's FOR NO KEY UPDATE does.
    UPDATE runs_run SET bench_chain_prev = bench_chain_head,
        bench_chain_head = encode(sha256(convert_to(bench_chain_head || NEW.hash, 'UTF8')), 'hex'),
        bench_chain_length = bench_chain_length + 1
        WHERE id = NEW.run_id
        RETURNING bench_chain_length - 1, bench_chain_prev, bench_chain_head INTO idx, prev, head;
    NEW.chain_index := idx;
    NEW.prev_hash := prev;
    NEW.hash := head;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql"""
_COLUMNS = ("ALTER TABLE runs_run ADD COLUMN IF NOT EXISTS bench_chain_length integer NOT NULL DEFAULT 0, "
            "ADD COLUMN IF NOT EXISTS bench_chain_head varchar(64) NOT NULL DEFAULT '', "
            "ADD COLUMN IF NOT EXISTS bench_chain_prev varchar(64) NOT NULL DEFAULT ''")
_INSERT = """WITH lease AS (SELECT id FROM runs_run WHERE id = %s)
INSERT INTO runs_ledgerrecord (record_id, run_id, seq, v, app, at, actor, workflow, kind, body, "group",
    chain_index, prev_hash, hash)
SELECT %s, id, %s, 1, 'bench', 0, 'bench', 'steps', 'op.called', %s::jsonb, NULL, %s, '', %s FROM lease RETURNING id"""
_BODY = '{"op": "acme.order.get", "input": {"order_id": "1"}, "output": {"id": "1", "total": 12.5}}'
MODES = ("current", "head_on_run", "off")


def _one_run(cursor: Any, template: str, run_id: str) -> None:
    cursor.execute(
        "INSERT INTO runs_run (id, workflow, app_version, input, started_by, groups, status, waiting_for, lease_owner,"
        " signal_gen, created_at, updated_at, has_approvals, has_retries, source_run) SELECT %s, workflow,"
        " app_version, input, started_by, groups, 'finished', '', '', 0, created_at, updated_at, false, false, ''"
        " FROM runs_run WHERE id = %s", [run_id, template])


def chain_variants(template_run: str, records: int, rounds: int) -> dict[str, dict[str, float]]:
    """Per mode: medians over rounds of `pg_cpu` and `wall` seconds per record inserted (and
    committed), and `verified` 1.0 when every chain written with a link trigger holds."""
    from django.db import connection

    from runs.models import LedgerRecord

    found: dict[str, dict[str, list[float]]] = {m: {"pg_cpu": [], "wall": []} for m in MODES}
    written: list[str] = []
    with connection.cursor() as cursor:
        cursor.execute(_COLUMNS)
        try:
            for r in range(rounds):
                for mode in MODES if r % 2 == 0 else MODES[::-1]:
                    cursor.execute(HEAD_ON_RUN if mode == "head_on_run" else CURRENT)
                    cursor.execute(f"ALTER TABLE runs_ledgerrecord {'DISABLE' if mode == 'off' else 'ENABLE'} "
                                   "TRIGGER runs_ledgerrecord_chain")
                    run_id = f"k{r}-{mode}"
                    _one_run(cursor, template_run, run_id)
                    if mode != "off":
                        written.append(run_id)
                    cpu, started = backend_cpu(), time.perf_counter()
                    for i in range(records):
                        content = f"{run_id}:{i}"  # stands for the content digest the engine sends
                        cursor.execute(_INSERT, [run_id, content, i, _BODY, i if mode == "off" else -1,
                                                 hashlib.sha256(content.encode()).hexdigest()])
                    found[mode]["wall"].append((time.perf_counter() - started) / records)
                    spent = backend_cpu()
                    if cpu is not None and spent is not None:
                        found[mode]["pg_cpu"].append((spent - cpu) / records)
        finally:
            cursor.execute(CURRENT)
            cursor.execute("ALTER TABLE runs_ledgerrecord ENABLE TRIGGER runs_ledgerrecord_chain")
    broken = 0
    for run_id in written:
        # The inserts carry a stand-in for the content digest: the positions and links are checked.
        rows = list(LedgerRecord.objects.filter(run_id=run_id).order_by("chain_index")
                    .values_list("chain_index", "prev_hash", "hash"))
        linked = all(rows[i][1] == rows[i - 1][2] for i in range(1, len(rows))) and rows[0][1] == ""
        if [row[0] for row in rows] != list(range(records)) or not linked:
            broken += 1
    return {mode: {name: statistics.median(values) if values else float("nan") for name, values in sides.items()}
            | {"verified": float(broken == 0)} for mode, sides in found.items()}
