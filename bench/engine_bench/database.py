"""The bench's database: made afresh, its commits counted, and (a) the bare insert beside which a
step is measured."""
from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlparse, urlunparse


def with_db(url: str, name: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path="/" + name))


def recreate_database(url: str) -> None:
    import psycopg
    from psycopg import sql

    name = urlparse(url).path.lstrip("/")
    if not name or name in ("postgres", "template0", "template1"):
        raise SystemExit(f"DATABASE_URL must name a database of the bench's own (it is dropped); got {name!r}")
    with psycopg.connect(with_db(url, "postgres"), autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))


def xact_commit() -> int:
    """Committed transactions of this database so far, all backends (pending stats flushed first);
    0 off PostgreSQL (the bench runs on PostgreSQL; its tests may run on SQLite)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        return 0
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_force_next_flush()")
    time.sleep(0.05)
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_stat_clear_snapshot()")
        cursor.execute("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()")
        return int(cursor.fetchone()[0])


def backend_cpu() -> float | None:
    """CPU seconds (user + system) the PostgreSQL backend of Django's default connection has spent,
    read from /proc: None when the server is not on this machine (or not PostgreSQL). On a loaded
    machine the server's CPU is steadier than wall time, which waits for other processes too."""
    import os

    from django.db import connection

    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Counted:
    """COMMITs and statements issued on Django's default connection while active."""

    def __init__(self) -> None:
        self.commits = 0
        self.statements = 0
        self.autocommit_statements = 0

    @contextmanager
    def active(self) -> Iterator[Counted]:
        from django.db import connection

        connection.ensure_connection()
        # _commit is private to Django's backends, so django-stubs does not declare it.
        original = connection._commit  # type: ignore[attr-defined]

        def commit() -> Any:
            self.commits += 1
            return original()

        def count(execute: Any, sql: str, params: Any, many: bool, context: Any) -> Any:
            self.statements += 1
            if not connection.in_atomic_block:
                self.autocommit_statements += 1
            return execute(sql, params, many, context)

        connection._commit = commit  # type: ignore[attr-defined]  # private, not in django-stubs (above)
        try:
            with connection.execute_wrapper(count):
                yield self
        finally:
            del connection._commit  # type: ignore[attr-defined]  # private, not in django-stubs (above)


_BENCH_ROW = None


def bench_row_model() -> Any:
    """A step-like table of the bench's own: (run_id, seq) unique, run_id indexed, a JSON output."""
    global _BENCH_ROW
    if _BENCH_ROW is None:
        from django.db import models

        class BenchRow(models.Model):  # noqa: DJ008  (a throwaway probe table, never displayed)
            run_id = models.CharField(max_length=200)
            seq = models.IntegerField()
            output = models.JSONField()

            class Meta:
                app_label = "bench_probe"
                db_table = "bench_probe_row"
                constraints = [models.UniqueConstraint(fields=["run_id", "seq"], name="bench_probe_run_seq")]
                indexes = [models.Index(fields=["run_id"], name="bench_probe_run")]

        _BENCH_ROW = BenchRow
    return _BENCH_ROW


def bare_insert(rows: int) -> float:
    """Seconds per row: one small row per transaction.atomic(), like a checkpoint alone."""
    from django.db import connection, transaction

    BenchRow = bench_row_model()
    with connection.schema_editor() as editor:
        editor.create_model(BenchRow)
    payload = {"order_id": "1001", "amount_cents": 4500, "status": "ok", "note": "x" * 40}
    for i in range(200):  # warm up
        with transaction.atomic():
            BenchRow.objects.create(run_id="warm", seq=i, output=payload)
    started = time.perf_counter()
    for i in range(rows):
        with transaction.atomic():
            BenchRow.objects.create(run_id=f"r{i // 10}", seq=i % 10, output=payload)
    elapsed = time.perf_counter() - started
    with connection.schema_editor() as editor:
        editor.delete_model(BenchRow)
    return elapsed / rows
