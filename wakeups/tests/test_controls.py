"""The pauses and the limits' overrides a worker process keeps in memory (runs.engine.controls): on
PostgreSQL the worker's loop hears each change (`sanoma_controls`) and tells its processes, which
meanwhile keep their copies without reading them; where nothing listens they are read once a second.
Real database, real commits, a real LISTEN connection."""
from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from runs import pausing
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig
from runs.engine import clock, controls, pauses
from runs.limits import overrides
from runs.limits import services as limit_services
from runs.models import Pause, PauseKind
from runs.testing import make_user, resolve_on_fakes
from runs.tests.fixtures import GET, acme
from wakeups.listen import Listener
from wakeups.worker import Worker

pytestmark = pytest.mark.django_db(transaction=True)
postgres_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="LISTEN/NOTIFY is PostgreSQL's")

LOOK = define_workflow(name="look", uses=[GET], run=lambda ctx, input: ctx.acme.order.get({"order_id": "1"}).total)


@pytest.fixture
def watch(monkeypatch) -> Iterator[controls.Watch]:
    made = controls.Watch()
    controls.install(made)
    monkeypatch.setattr(pauses, "REFRESH_SECONDS", 0.0)  # without the watch, every look would read
    monkeypatch.setattr(overrides, "REFRESH_SECONDS", 0.0)
    pauses.forget()
    overrides.forget()
    yield made
    controls.install(None)
    pauses.forget()
    overrides.forget()


def _reads(look) -> int:
    with CaptureQueriesContext(connection) as seen:
        look()
    return len(seen.captured_queries)


def test_a_copy_no_change_was_heard_since_is_kept_without_a_read_while_the_loop_listens(watch):
    look = lambda: pauses.holding_start("look")
    assert _reads(look) == 1  # the first look reads
    assert _reads(look) == 1  # the loop is not listening: read again
    watch.listening(True)
    assert _reads(look) == 0 and _reads(overrides.current) == 1  # (the overrides' first look)
    assert _reads(look) == 0 and _reads(overrides.current) == 0
    watch.changed()  # a change heard: every copy is read again, once
    assert _reads(look) == 1 and _reads(look) == 0
    assert _reads(overrides.current) == 1 and _reads(overrides.current) == 0
    # A run queued after the overrides' last read still reads them (an operator's change may have woken it).
    assert _reads(lambda: overrides.current(read_after=clock.now())) == 1
    watch.listening(False)  # the loop busy elsewhere for longer than a copy may be kept (0 s here)
    assert _reads(look) == 1


def test_without_a_watch_each_copy_is_read_again_once_its_second_is_up(monkeypatch):
    controls.install(None)
    pauses.forget()
    look = lambda: pauses.holding_start("look")
    assert _reads(look) == 1
    assert _reads(look) == 0  # within the second
    monkeypatch.setattr(pauses, "REFRESH_SECONDS", 0.0)
    assert _reads(look) == 1


class _Loop:
    """The worker's loop waiting on its LISTEN connection (`Worker._listen`), in a thread."""

    def __init__(self, watch: controls.Watch) -> None:
        self.listener = Listener([controls.CHANNEL])
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(watch,), daemon=True)
        self.thread.start()

    def _run(self, watch: controls.Watch) -> None:
        while not self.done.is_set():
            Worker._listen(self.listener, until=time.monotonic() + 0.2, look=float("inf"), watch=watch)

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.listener.close()


def _heard(watch: controls.Watch, before: int) -> bool:
    ends = time.monotonic() + 10
    while watch.changes() == before and time.monotonic() < ends:
        time.sleep(0.01)
    return watch.changes() > before


@postgres_only
def test_a_pause_made_elsewhere_is_seen_at_the_next_look_once_the_loop_has_heard_of_it(watch, monkeypatch):
    monkeypatch.setattr(pauses, "REFRESH_SECONDS", 3600.0)  # only the watch can make a look read now
    loop = _Loop(watch)
    try:
        assert pauses.holding_start("look") is None
        before = watch.changes()
        with transaction.atomic():  # as another process pauses it: nothing here is told to forget
            Pause.objects.create(kind=PauseKind.WORKFLOW, target="look", reason="down", paused_by="ops",
                                 paused_at=clock.now())
            controls.changed()
        assert _heard(watch, before)
        held = pauses.holding_start("look")
        assert held is not None and held.reason == "down"
    finally:
        loop.close()


@postgres_only
def test_pauses_unpauses_and_limit_changes_each_tell_the_listening_workers(db):
    make_user("ops", perms=["runs.pause"])
    config = resolve_on_fakes(SanomaConfig(connectors=[acme], workflows=[LOOK]))
    set_config(config)
    listener = Listener([controls.CHANNEL])
    try:
        heard: list[str] = []

        def told() -> str:
            ends = time.monotonic() + 5
            while time.monotonic() < ends:
                notes = listener.wait(ends - time.monotonic())
                if notes:
                    return notes[0][0]
            return ""

        pausing.pause(kind="connector", target="acme", reason="down", by="ops", config=config)
        heard.append(told())
        pausing.unpause(kind="connector", target="acme", by="ops", config=config)
        heard.append(told())
        limit_services.set_override(target="acme", rate="1/s", by="ops", config=config)
        heard.append(told())
        limit_services.reset(target="acme", by="ops", config=config)
        heard.append(told())
        assert heard == [controls.CHANNEL] * 4
    finally:
        listener.close()
        set_config(None)
        pauses.forget()
        overrides.forget()
