"""What every measure of `bench/engine.py` shares: where the repo and the bench's config root are,
its version, the figures measured earlier, how a duration is printed."""
from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BENCH_ROOT = REPO / "bench" / "bench_company"
VERSION = "bench"

# Figures measured earlier on machines like this one, printed beside today's for comparison.
NOTES = {"bare_insert_per_s": 1172, "dbos_steps_per_s": 241, "prototype_steps_per_s": 1100}


# The script the measures belong to (run again as a child process for DBOS).
SCRIPT = REPO / "bench" / "engine.py"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"
