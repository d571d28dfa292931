"""What a bench script says about its database: the command line, and that the database is dropped."""
from __future__ import annotations

import pytest

from engine_bench.common import bench_database_url, database_help


def test_the_help_gives_the_command_line_and_says_what_is_dropped() -> None:
    text = database_help("engine.py", "sanoma_bench", "so are <name>_dbos_direct and <name>_dbos_queue",
                         "Packages: pip install -r bench/requirements.txt")
    assert ("DATABASE_URL=postgresql://postgres@127.0.0.1:5432/sanoma_bench .venv/bin/python bench/engine.py"
            in [line.strip() for line in text.splitlines()])
    flat = " ".join(text.split())
    assert "The database named is DROPPED and created afresh; and so are <name>_dbos_direct and" in flat
    assert flat.endswith("Packages: pip install -r bench/requirements.txt")
    assert "; and" not in database_help("parked.py", "sanoma_parked")


@pytest.mark.parametrize("url", ["", "sqlite:///x.sqlite3", "mysql://u@h/db"])
def test_a_bench_refuses_a_database_that_is_not_postgresql(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    with pytest.raises(SystemExit) as refused:
        bench_database_url("scale.py", "sanoma_bench_scale", "with --history, <name>_history")
    said = str(refused.value.code)
    assert said.startswith("bench/scale.py measures PostgreSQL and needs DATABASE_URL.")
    assert "5432/sanoma_bench_scale .venv/bin/python bench/scale.py" in said
    assert "DROPPED" in said and "<name>_history" in said


@pytest.mark.parametrize("url", ["postgresql://postgres@127.0.0.1:5432/b", "postgres://u@h/b"])
def test_a_bench_takes_a_postgresql_url(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv("DATABASE_URL", url)
    assert bench_database_url("scale.py", "sanoma_bench_scale") == url
