"""Counting the transactions a piece of code spends on the default connection: each COMMIT Django
issues, and each statement run in autocommit (which commits itself), as `bench/engine.py` (e)
counts them. Shared by the tests that hold the engine's and the sweep's counts."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from django.db import connection


@dataclass
class Count:
    commits: int = 0
    autocommit: int = 0
    statements: list[str] = field(default_factory=list)

    @property
    def transactions(self) -> int:
        return self.commits + self.autocommit


@contextmanager
def counted() -> Iterator[Count]:
    count = Count()
    connection.ensure_connection()
    original = connection._commit  # type: ignore[attr-defined]  # private: the COMMIT Django issues

    def commit() -> Any:
        count.commits += 1
        return original()

    def execute(run: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
        if sql.lstrip().upper().startswith("BEGIN"):  # SQLite's BEGIN IMMEDIATE opens an atomic block
            return run(sql, params, many, context)
        count.statements.append(sql)
        if not connection.in_atomic_block:
            count.autocommit += 1
        return run(sql, params, many, context)

    connection._commit = commit  # type: ignore[attr-defined]
    try:
        with connection.execute_wrapper(execute):
            yield count
    finally:
        del connection._commit  # type: ignore[attr-defined]
