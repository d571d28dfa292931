"""The demo as `./demo` sets it up, for the desk's browser journeys: the example company (`company/`)
on its fakes, its people from its own data files (each one's password is their username), the
made-up secrets the data files name, the shipment left in doubt and the example runs, all made
by the code `manage.py demo` runs (sanoma_site/demo.py, runs/seed.py), in the order it runs it. What the command
does besides (its own git repository for the company, a worker and a web server as child
processes, the banner) is the tests' own: a live server, and `DemoWorker`, a thread that does
what the worker does.

    from sanoma_site.tests.demo_desk import demo, demo_worker   # the fixtures
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.core.signals import request_finished, request_started
from django.db import connection

from changes.selectors import declared_resources
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine.drain import drain
from runs.models import DecisionMessage, Run
from runs.seed import seed_from_datafiles
from runs.versions import sync_workflow_entries
from sanoma_site.demo import demo_secrets, stage_in_doubt, start_example_runs

COMPANY = Path(__file__).resolve().parents[2] / "company"


@dataclass
class Demo:
    """The demo's company as the command left it: its config, who may sign in, the runs it started."""

    config: ResolvedConfig
    people: list[Any]
    in_doubt: Run
    runs: dict[str, Run] = field(default_factory=dict)
    """The example runs by workflow (refund, follow-up, reprice, support.onboard-agent)."""

    @property
    def shop(self) -> Any:
        """The shop's fake: what the vendor holds (its orders, refunds, shipments, the calls made)."""
        return self.config.fakes["shop"]


def set_up_demo(fake_dir: Path, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Demo:
    """What `manage.py demo` does before it starts its worker and server, on the test database."""
    monkeypatch.setenv("SANOMA_FAKES", "instance")
    settings.SANOMA_FAKES = "instance"
    config = load_config(COMPANY, fakes="instance", fake_dir=fake_dir)
    set_config(config)
    sync_workflow_entries(config)
    read = declared_resources()
    people = seed_from_datafiles(read)
    for name, value in demo_secrets(read).items():
        if not os.environ.get(name):
            monkeypatch.setenv(name, value)
    in_doubt = stage_in_doubt(config)  # before any worker: this thread advances it
    started, problems = start_example_runs()
    assert not problems, problems
    return Demo(config=config, people=people, in_doubt=in_doubt, runs={run.workflow: run for run in started})


class DemoWorker:
    """A stand-in for the demo's `manage.py worker`: runs what is queued and applies decisions as they
    come, in a thread of its own."""

    def __init__(self, config: ResolvedConfig) -> None:
        self.config = config
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._work, daemon=True)

    def _work(self) -> None:
        try:
            while not self.stop.is_set():
                if (Run.objects.filter(status="queued").exists()
                        or DecisionMessage.objects.filter(applied=False).exists()):
                    drain(self.config)
                time.sleep(0.05)
        finally:
            connection.close()

    def start(self) -> None:
        self.thread.start()

    def end(self) -> None:
        """Stop, and wait until the thread has: it must not still read the database when the test's is flushed."""
        self.stop.set()
        self.thread.join(timeout=60)
        if self.thread.is_alive():
            raise RuntimeError("the demo's worker thread did not stop within 60 s")


class InFlight:
    """How many requests the live server is answering now, from Django's request_started and
    request_finished signals (its request threads are daemons nobody joins, and one lives on while
    the browser keeps its connection open, so a thread alive says nothing)."""

    def __init__(self) -> None:
        self.count = 0
        self.lock = threading.Condition()

    def started(self, **_: Any) -> None:
        with self.lock:
            self.count += 1

    def finished(self, **_: Any) -> None:
        with self.lock:
            self.count -= 1
            self.lock.notify_all()

    def __enter__(self) -> InFlight:
        request_started.connect(self.started, dispatch_uid=f"in-flight-{id(self)}")
        request_finished.connect(self.finished, dispatch_uid=f"in-flight-{id(self)}")
        return self

    def __exit__(self, *_: object) -> None:
        try:
            self.wait()
        finally:
            request_started.disconnect(dispatch_uid=f"in-flight-{id(self)}")
            request_finished.disconnect(dispatch_uid=f"in-flight-{id(self)}")

    def wait(self, timeout: float = 60) -> None:
        """Until no request is being answered, nor was for a second: one answering a page's last read
        (a run page reads itself every few seconds) would otherwise still query the database while
        the test's is flushed, and on PostgreSQL the flush's TRUNCATE and its SELECT deadlock. A
        request sent just before the browser left its page may be taken up a moment later (the server
        looks for new ones every half second), hence the second."""
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() - quiet_since < 1.0:
            with self.lock:
                if self.count > 0:
                    self.lock.wait_for(lambda: self.count <= 0, timeout=max(0.0, deadline - time.monotonic()))
                    if self.count > 0:
                        raise RuntimeError(f"the live server still answers a request after {timeout:.0f} s")
                    quiet_since = time.monotonic()
            time.sleep(0.1)


@pytest.fixture
def demo(tmp_path: Path, transactional_db: None, monkeypatch: pytest.MonkeyPatch, settings: Any) -> Iterator[Demo]:
    """The demo's company, people and runs, as `./demo` leaves them (before its worker takes them up).

    Torn down after the test's browser (which leaves its pages) and `demo_worker` (which stops its
    thread), and before `transactional_db` flushes the database (it asks for that fixture, so it is
    set up after it and torn down before): it waits for the live server's requests still in flight,
    so that nothing but the flush touches the database then."""
    try:
        with InFlight():
            yield set_up_demo(tmp_path / "fakes", monkeypatch, settings)
    finally:
        set_config(None)


@pytest.fixture
def demo_worker(demo: Demo) -> Iterator[DemoWorker]:
    """The demo's worker, taking up its runs as `./demo`'s does."""
    worker = DemoWorker(demo.config)
    worker.start()
    try:
        yield worker
    finally:
        worker.end()
