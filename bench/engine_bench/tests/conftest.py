"""The bench's modules import one another as `engine_bench.*` (the scripts put bench/ on sys.path)."""
from __future__ import annotations

import sys
from pathlib import Path

BENCH = str(Path(__file__).resolve().parents[2])
if BENCH not in sys.path:
    sys.path.insert(0, BENCH)
