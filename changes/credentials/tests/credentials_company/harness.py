"""The credentials tests' helpers: the config root, a Fernet key, a real `manage.py` process on the
test's database (not part of the config root: the worker never imports this file).

A child process is pointed at the database pytest-django made (`transaction=True` tests, so what
either side writes is committed and visible to the other) through a DATABASE_URL rebuilt from the
connection's settings, as `wakeups/tests/worker_company/harness.py` does (this layer may not import
that one).
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from django.db import connection

REPO = Path(__file__).resolve().parents[4]
ROOT = Path(__file__).resolve().parent
READY_LINE = "worker started:"
# A fixed key for the tests (a test database's secrets only).
TEST_KEY = "nEHw7aYxV3o2oFQ8q9Qy3tq0kq5mF7Hc2m2XlQy9t1Y="


def rows_containing(text: str) -> list[str]:
    """Every `table.column`, over every table of the test database (found by introspection), with a row
    whose value holds `text`."""
    hits = []
    name = connection.ops.quote_name
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names(cursor):
            columns = [c.name for c in connection.introspection.get_table_description(cursor, table)]
            cursor.execute(f"SELECT {', '.join(name(c) for c in columns)} FROM {name(table)}")
            for row in cursor.fetchall():
                for column, cell in zip(columns, row, strict=True):
                    if isinstance(cell, (bytes, memoryview)):
                        cell = bytes(cell).decode("utf-8", "replace")
                    if text in str(cell):
                        hits.append(f"{table}.{column}")
    return sorted(set(hits))


def child_env(*, db_url: str, var_dir: Path, version: str = "c1", fakes: str = "", **extra: Any) -> dict[str, str]:
    """The environment of a child `manage.py`: this config root, real drivers unless `fakes`, and no
    credential variable of this process's environment (only those given in `extra`)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "DJANGO_SETTINGS", "VAULT_", "MAILER_"))}
    env.update(DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="sanoma_site.settings", SANOMA_ROOT=str(ROOT),
               SANOMA_FAKES=fakes, SANOMA_VAR_DIR=str(var_dir), SANOMA_APP_VERSION=version,
               SANOMA_SECRETS_KEY=TEST_KEY, SANOMA_LEASE_SECONDS="3", SANOMA_WORKERS="1", PYTHONUNBUFFERED="1")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def manage(*args: str, env: Mapping[str, str], input: str | None = None, timeout: float = 60.0
           ) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=dict(env), input=input,
                          capture_output=True, text=True, timeout=timeout)


class Worker:
    """`manage.py worker` in its own session, output to a file; killed with its group at cleanup."""

    def __init__(self, env: Mapping[str, str], log: Path, *args: str) -> None:
        self.env, self.log, self.args = dict(env), log, args
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, *, ready_within: float | None = 60.0) -> Worker:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, str(REPO / "manage.py"), "worker", *self.args], cwd=REPO,
                                         env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        if ready_within:
            self.wait_for(lambda: READY_LINE in self.output(), within=ready_within, what="the worker to start")
        return self

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, condition: Callable[[], Any], *, within: float, what: str, every: float = 0.05) -> Any:
        ends = time.monotonic() + within
        while True:
            value = condition()
            if value:
                return value
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the worker exited ({self.proc.returncode}) waiting for {what}\n"
                                     f"{self.describe()}")
            if time.monotonic() > ends:
                raise AssertionError(f"timed out after {within} s waiting for {what}\n{self.describe()}")
            time.sleep(every)

    def exit_code(self, *, within: float = 60.0) -> int:
        assert self.proc is not None
        return self.proc.wait(timeout=within)

    def terminate(self, *, within: float = 30.0) -> int:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=within)

    def cleanup(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def describe(self) -> str:
        return f"--- worker output ({self.log}) ---\n{self.output()[-6000:]}\n--- end ---"
