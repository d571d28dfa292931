"""What every measure of `bench/engine.py` shares: where the repo and the bench's config root are,
its version, the figures measured earlier, how a duration is printed; and what the bench scripts
say about the database they are pointed at (their --help and their refusal without one)."""
from __future__ import annotations

import argparse
import os
import textwrap
from pathlib import Path
from urllib.parse import urlparse

REPO = Path(__file__).resolve().parents[2]
BENCH_ROOT = REPO / "bench" / "bench_company"
VERSION = "bench"

# Figures measured earlier on machines like this one, printed beside today's for comparison (the
# `reference` column's "earlier prototype" and "earlier on this machine": fixed notes, not measured).
NOTES = {"bare_insert_per_s": 1172, "dbos_steps_per_s": 241, "prototype_steps_per_s": 1100}


# The script the measures belong to (run again as a child process for DBOS).
SCRIPT = REPO / "bench" / "engine.py"


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def database_help(script: str, example: str, also: str = "", note: str = "") -> str:
    """How to point the bench script `bench/<script>` at its database: the command line, with
    `example` as the database's name, and that the database is dropped (with `also`: the other
    databases it drops and makes, said after "and"; `note`: a paragraph after). The epilog of its
    --help and its refusal without one."""
    more = f"; and {also}" if also else ""
    dropped = f"The database named is DROPPED and created afresh{more}. Never name a database whose data you want."
    return "\n\n".join([
        "Point it at a PostgreSQL database of its own with DATABASE_URL, e.g.",
        f"  DATABASE_URL=postgresql://postgres@127.0.0.1:5432/{example} .venv/bin/python bench/{script}",
        textwrap.fill(dropped, 100, break_on_hyphens=False),
        *([textwrap.fill(note, 100, break_on_hyphens=False)] if note else []),
    ])


def bench_parser(script: str, doc: str | None, example: str, also: str = "", note: str = "", *,
                 before: str = "", paragraph: bool = False) -> argparse.ArgumentParser:
    """The argument parser of the bench script `bench/<script>` whose docstring is `doc`: its first
    line (its first paragraph with `paragraph`) as the description, and as the epilog `before` (a
    paragraph), then how to point it at its database (`database_help`)."""
    text = doc or ""
    description = text.split("\n\n")[0] if paragraph else text.split("\n")[0]
    epilog = database_help(script, example, also, note)
    return argparse.ArgumentParser(description=description, epilog=f"{before}\n\n{epilog}" if before else epilog,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)


def bench_database_url(script: str, example: str, also: str = "", note: str = "") -> str:
    """DATABASE_URL when it names a PostgreSQL database; otherwise the script stops, saying how to set it."""
    url = os.environ.get("DATABASE_URL", "")
    if urlparse(url).scheme not in ("postgres", "postgresql"):
        raise SystemExit(f"bench/{script} measures PostgreSQL and needs DATABASE_URL.\n"
                         + database_help(script, example, also, note))
    return url
