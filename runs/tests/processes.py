"""Running real `manage.py` processes (a worker, a supervisor) from a test, against the database
pytest-django made.

Pointing the worker at the test database: pytest-django creates the test database and rewrites
the connection's settings in place, so inside a test `connection.settings_dict` (the same dict as
`settings.DATABASES["default"]`) names the database the test is really using: on SQLite the file
`test_<name>` (settings give it a `TEST.NAME` beside the main file, see `sanoma_site/settings.py`),
on PostgreSQL `test_<name>` (with `_gw<n>` under xdist). `database_url()` turns that dict back into
a `DATABASE_URL` for the child process. The test must use `django_db(transaction=True)`, so what
it writes is committed and visible to the worker, and so the worker's writes are visible to it.
An in-memory SQLite test database cannot be shared with another process: that is refused with a
clear message.
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

from runs.config.trees import url_of

REPO = Path(__file__).resolve().parents[2]
READY_LINE = "worker started:"


def database_url(settings_dict: Mapping[str, Any]) -> str:
    """A DATABASE_URL naming the database this process is connected to (the test database), as
    `runs.config.trees.url_of` writes it; an in-memory SQLite database, which no process can share,
    is refused."""
    engine = settings_dict["ENGINE"]
    name = str(settings_dict["NAME"])
    if engine.endswith("sqlite3") and (not name or name == ":memory:" or name.startswith("file:")
                                       or "mode=memory" in name):
        raise RuntimeError(
            f"The test database is SQLite in memory ({name!r}); a worker process cannot share it. "
            "Give DATABASES['default']['TEST']['NAME'] a file path"
        )
    if not engine.endswith(("sqlite3", "postgresql")):
        raise RuntimeError(f"No DATABASE_URL for a {engine} database")
    return url_of(settings_dict)


# What a worker running the example company on its REAL drivers (SANOMA_FAKES="") needs to start:
# each of its vendors' required credentials, pointing nowhere that answers. A test that calls one of
# them sets its own URL and key over these.
EXAMPLE_COMPANY_CREDENTIALS = {
    "SHOP_API_URL": "https://127.0.0.1:9", "SHOP_API_KEY": "nothing-answers-there",
    "STRIPE_API_KEY": "sk_test_nothing_answers_there", "GHOST_ADMIN_URL": "https://127.0.0.1:9",
    "GHOST_ADMIN_API_KEY": "0123456789abcdef01234567:" + "ab" * 32, "BLUESKY_IDENTIFIER": "acme.invalid",
    "BLUESKY_APP_PASSWORD": "nothing-answers-there", "RESEND_API_KEY": "re_nothing_answers_there",
    "SLACK_BOT_TOKEN": "xoxb-nothing-answers-there", "GITHUB_TOKEN": "nothing-answers-there", "GITHUB_ORG": "acme",
    "GITHUB_API_URL": "https://127.0.0.1:9",
}


def worker_env(*, db_url: str, var_dir: Path, version: str, root: Path, **extra: Any) -> dict[str, str]:
    """The environment of a process on the test database, with `root` as its config root; an empty
    `version` leaves the app version to the code (its hash)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "DJANGO_SETTINGS"))}
    env.update(
        DATABASE_URL=db_url,
        DJANGO_SETTINGS_MODULE="sanoma_site.settings",
        SANOMA_ROOT=str(root),
        SANOMA_FAKES="instance",
        SANOMA_VAR_DIR=str(var_dir),
        SANOMA_LEASE_SECONDS="3",
        PYTHONUNBUFFERED="1",
    )
    if version:
        env["SANOMA_APP_VERSION"] = version
    env.update({k: str(v) for k, v in extra.items()})
    return env


def wait_until(condition: Callable[[], Any], *, within: float, what: str, describe: Callable[[], str],
               every: float = 0.05) -> Any:
    """Poll `condition` until truthy; after `within` s fail, saying what was awaited and `describe()`
    (the processes' output). The bound only turns a hang into a failure."""
    ends = time.monotonic() + within
    while time.monotonic() < ends:
        value = condition()
        if value:
            return value
        time.sleep(every)
    raise AssertionError(f"timed out waiting for {what}\n{describe()}")


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in a process group, read from /proc."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces, so split after the last ')'
        fields = stat[stat.rindex(")") + 2 :].split()
        if fields[0] != "Z" and int(fields[2]) == pgid:
            members.append(int(entry.name))
    return members


class Worker:
    """`manage.py worker` in its own process group (its own session), output to a file."""

    def __init__(self, env: Mapping[str, str], log: Path, args: tuple[str, ...] = ()) -> None:
        self.env = dict(env)
        self.log = log
        self.args = args
        self.proc: subprocess.Popen | None = None
        self.pgid: int | None = None
        self._offset = 0

    def start(self, *, ready_within: float = 60.0) -> Worker:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "worker", *self.args],
                cwd=REPO, env=self.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        self.pgid = self.proc.pid  # a new session: its leader's pid is the group id
        if ready_within:
            self.wait_for(lambda: READY_LINE in self.output(all_runs=False), within=ready_within,
                          what="the worker to start")
        return self

    def output(self, *, all_runs: bool = True) -> str:
        if not self.log.exists():
            return ""
        text = self.log.read_text(errors="replace")
        return text if all_runs else text[self._offset :]

    def wait_for(self, condition: Callable[[], Any], *, within: float, what: str, every: float = 0.05,
                 progress: Callable[[], Any] | None = None) -> Any:
        """Poll `condition` until truthy. The bound only turns a hang into a failure: it fails after
        `within` s, or, given `progress` (a measure that only grows, e.g. runs finished), after
        `within` s without `progress()` changing, so a loaded machine that is slow but getting on
        is not failed. Fails at once if the worker exits; every failure carries its output."""
        ends = time.monotonic() + within
        seen = progress() if progress is not None else None
        while True:
            value = condition()
            if value:
                return value
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"the worker exited ({self.proc.returncode}) while waiting for {what}\n"
                                     f"{self.describe()}")
            if progress is not None and (now := progress()) != seen:
                seen, ends = now, time.monotonic() + within
            if time.monotonic() > ends:
                stalled = f" (no progress from {seen!r})" if progress is not None else ""
                raise AssertionError(f"timed out after {within} s{stalled} waiting for {what}\n{self.describe()}")
            time.sleep(every)

    def kill(self) -> None:
        """SIGKILL to the whole process group: the cluster, its workers and the sweep die at once."""
        assert self.proc is not None and self.pgid is not None
        try:
            os.killpg(self.pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=10)
        ends = time.monotonic() + 10
        while group_members(self.pgid) and time.monotonic() < ends:
            time.sleep(0.02)

    def terminate(self, *, within: float = 30.0) -> int:
        """SIGTERM to the main PID only (what a supervisor should send); returns the exit code."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not stop within {within} s of SIGTERM\n{self.describe()}") from None

    def terminate_group(self, signum: int = signal.SIGTERM, *, within: float = 30.0) -> int:
        """`signum` to the whole process group (what systemd and a shell's Ctrl-C do); returns the
        exit code."""
        assert self.proc is not None and self.pgid is not None
        os.killpg(self.pgid, signum)
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the worker did not stop within {within} s of signal {signum} to its group\n"
                                 f"{self.describe()}") from None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def cleanup(self) -> None:
        """Whatever happened, leave no process of this worker behind."""
        if self.pgid is not None and (self.alive() or group_members(self.pgid)):
            try:
                os.killpg(self.pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def describe(self) -> str:
        tail = self.output()[-6000:]
        return f"--- worker output ({self.log}) ---\n{tail}\n--- end of worker output ---"
