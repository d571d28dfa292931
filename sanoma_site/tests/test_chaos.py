"""The chaos harness's short configuration (`bench/chaos.py --short`), run as a whole, in its own process.

It starts its own PostgreSQL cluster (initdb into a temporary folder, on a free port), its vendor
server and three real workers, runs 50 mixed runs under random SIGKILLs, SIGTERMs, freezes past the
lease and PostgreSQL restarts (fast and immediate), and reports what it counted. The test reads the
report (`--json`) and holds the harness to its word: its exit status says what the report says.

On the PostgreSQL suite only (on SQLite the harness's database is not the kind under test); skipped,
saying why, where PostgreSQL's initdb and pg_ctl are not installed. No timing is asserted: how
long the run and its drain took are figures the report prints.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection

REPO = Path(__file__).resolve().parents[2]


def _find_bin() -> Path | None:
    """Where the harness finds initdb and pg_ctl (its own lookup, read from its file)."""
    spec = importlib.util.spec_from_file_location("chaos_postgres", REPO / "bench" / "chaos_postgres.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.find_bin()


pytestmark = [
    pytest.mark.process,
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="the chaos run is PostgreSQL's: it restarts a PostgreSQL server of its own"),
    pytest.mark.skipif(_find_bin() is None,
                       reason="PostgreSQL's initdb and pg_ctl are not installed (set PG_BIN to their folder)"),
]


def test_the_short_chaos_run_loses_no_run_and_repeats_no_effect_at_any_vendor(tmp_path: Path) -> None:
    report = tmp_path / "chaos.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "chaos.py"), "--short", "--json", str(report)],
                          cwd=REPO, capture_output=True, text=True, timeout=1800)
    output = f"--- chaos output ---\n{done.stdout}\n{done.stderr[-6000:]}"
    assert report.exists(), output
    found = json.loads(report.read_text())

    # The chaos happened: faults at the workers and restarts of the server, while runs were in flight.
    assert sum(found["faults"].values()) >= 1, output
    assert found["pg_restarts"]["total"] >= 1 and not found["pg_restarts"]["failed"], output
    assert found["runs"]["started"] == 50, output
    # Nothing lost: every run, children included, ended within the drain.
    assert found["runs"]["lost"] == 0 and found["drained"], output
    # At the vendor that honours keys, no key ever took effect twice, re-sent or not.
    assert found["duplicate_effects"]["honoured"] == 0, output
    # Every output a run recorded is one the vendor gave; every hash chain holds.
    assert found["recorded_outputs_not_at_vendor"] == [], output
    assert found["ledger_verify"]["exit"] == 0, output
    # At the vendors that ignore keys too: an attempt in doubt is settled only once it can no longer
    # land (a reconcile read waits out the call's deadline), so nothing took effect twice.
    assert found["duplicate_effects"]["ignored"] == 0 and found["duplicate_effects"]["reconciled"] == 0, output
    # A restart under any engine write is ridden out: no run failed because the database went away.
    assert found["runs"]["failed"] == 0, output
    assert done.returncode == 0, output
