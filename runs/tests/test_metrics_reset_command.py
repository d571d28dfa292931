"""`manage.py metrics reset`, run as a host's start does: the host's folder of counts emptied, and
nothing else; refused, changing nothing, where there is no folder to empty."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def reset(folder: Path, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), "metrics", "reset"], cwd=REPO,
                          env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(folder), **env},
                          capture_output=True, text=True, timeout=120)


def test_the_hosts_counts_are_emptied_and_nothing_else(tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    for name in ("counter_101.db", "histogram_102.db", "notes.txt"):
        (folder / name).write_text("x")
    done = reset(folder, SANOMA_VAR_DIR=str(tmp_path / "var"))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"metrics: emptied {folder} (2 files of counts removed)"
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]


def test_with_metrics_off_it_is_refused_and_nothing_is_removed(tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_101.db").write_text("x")
    done = reset(folder, SANOMA_VAR_DIR=str(tmp_path / "var"), SANOMA_METRICS="false")
    assert done.returncode == 1 and "Metrics are off on this host (SANOMA_METRICS=false)" in done.stderr
    assert (folder / "counter_101.db").exists()
