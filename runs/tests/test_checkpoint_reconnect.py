"""A checkpoint survives a database blip: a real connection, cut by a TCP proxy right after the vendor replied.

The engine's connection goes through a small proxy on 127.0.0.1 that forwards to PostgreSQL. The
proxy cuts every socket (the driver sees the server vanish mid-session) and refuses new ones for
a while, then lets them through again.
"""
from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import DatabaseError, IntegrityError, connection
from django.test import override_settings

from connectors.errors import SanomaError
from runs.config.workflows import define_workflow
from runs.engine import clock, reconnect
from runs.models import LedgerRecord, Step
from runs.tests.fixtures import REFUND

on_postgresql_through_a_proxy = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql",
                       reason="drops a real PostgreSQL connection through a TCP proxy; SQLite has none"),
]


def proxied(test: Any) -> Any:
    for mark in reversed(on_postgresql_through_a_proxy):
        test = mark(test)
    return test

_READY_FOR_QUERY = b"Z\x00\x00\x00\x05"  # the server's ReadyForQuery message, then one status byte


class Proxy:
    """Forwards 127.0.0.1:<port> to the database; `cut` drops every connection and refuses new ones."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.listener.settimeout(0.1)
        self.port = self.listener.getsockname()[1]
        self.refusing = threading.Event()
        self.swallow_reply = threading.Event()  # drop the next answer of the server (after it committed), then cut
        self.stopped = threading.Event()
        self.refused = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._thread = threading.Thread(target=self._accept, name="pg-proxy", daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.refusing.is_set():
                self.refused += 1
                client.close()
                continue
            upstream = socket.create_connection(self.target)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, True), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_server: bool) -> None:
        held = b""
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if from_server and self.swallow_reply.is_set():
                    held += data
                    if _READY_FOR_QUERY in held[-6:-1]:  # the server committed and answered: lose the answer
                        self.swallow_reply.clear()
                        self.drop_all()  # new connections are let through at once
                        break
                    continue
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                _close(sock)

    def cut(self, *, for_seconds: float | None = None) -> None:
        """Drop every connection now and refuse new ones (for `for_seconds`, or until `resume`)."""
        self.refusing.set()
        self.drop_all()
        if for_seconds is not None:
            timer = threading.Timer(for_seconds, self.resume)
            timer.daemon = True
            timer.start()

    def drop_all(self) -> None:
        with self._lock:
            sockets, self._sockets = self._sockets, []
        for sock in sockets:
            _close(sock)

    def resume(self) -> None:
        self.refusing.clear()

    def close(self) -> None:
        self.stopped.set()
        self.cut()
        self.listener.close()
        self._thread.join(timeout=2)


def _close(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    sock.close()


@pytest.fixture
def proxy(db) -> Iterator[Proxy]:
    """The test database, reached through a proxy: every connection opened from now on goes through it."""
    settings_dict = connection.settings_dict
    before = (settings_dict["HOST"], settings_dict["PORT"])
    proxy = Proxy(before[0] or "127.0.0.1", int(before[1] or 5432))
    connection.close()
    settings_dict["HOST"], settings_dict["PORT"] = "127.0.0.1", proxy.port
    try:
        yield proxy
    finally:
        proxy.close()
        connection.close()
        settings_dict["HOST"], settings_dict["PORT"] = before


def after_reply(engine: Any, op: Any, then: Callable[[], None]) -> None:
    """Run `then` right after the fake vendor carried out `op` and replied."""
    op_id = getattr(op, "id", op)
    driver = engine.config.drivers[op_id]

    class Cutting:
        def call(self, op: str, payload: Any, context: Any) -> Any:
            reply = driver.call(op, payload, context)
            then()
            return reply

        def __getattr__(self, name: str) -> Any:
            return getattr(driver, name)

    engine.config.drivers[op_id] = Cutting()


def refund_wf(name: str) -> Any:
    return define_workflow(name=name, uses=[REFUND],
                           run=lambda ctx, i: ctx.acme.order.refund({"order_id": "1", "amount": 5}).refund_id)


def really_sleeping(waited: list[float]) -> Callable[[float], None]:
    def sleep(seconds: float) -> None:
        waited.append(seconds)
        time.sleep(seconds)
    return sleep


@proxied
def test_a_connection_dropped_after_the_vendor_replied_is_reopened_and_the_step_recorded_once(engine_for, proxy):
    engine = engine_for(refund_wf("blip"))
    after_reply(engine, REFUND, lambda: proxy.cut(for_seconds=1.5))
    waited: list[float] = []
    started = time.monotonic()
    with clock.sleeping_with(really_sleeping(waited)):
        run = engine.run("blip")
    took = time.monotonic() - started
    assert run.status == "finished", run.error
    assert run.result == "re_1"
    assert len(engine.fake.calls) == 1  # the vendor was asked once
    assert len(engine.fake.state["refunds"]) == 1
    assert len(engine.records(run, "op.called")) == 1
    assert Step.objects.filter(run=run, kind="call").count() == 1
    assert proxy.refused >= 1  # the engine did try while the database was away
    assert 1.5 <= sum(waited) < 4 and 1.5 <= took < 6
    assert waited[:3] == [0.05, 0.1, 0.2]


@proxied
def test_a_write_that_committed_before_its_answer_was_lost_counts_as_written(engine_for, proxy):
    engine = engine_for(refund_wf("lost-answer"))
    after_reply(engine, REFUND, proxy.swallow_reply.set)
    waited: list[float] = []
    with clock.sleeping_with(really_sleeping(waited)):
        run = engine.run("lost-answer")
    assert run.status == "finished", run.error
    assert len(engine.fake.calls) == 1
    assert len(engine.records(run, "op.called")) == 1
    assert waited == [0.05]  # one look on a new connection found the write


@proxied
@override_settings(SANOMA_LEASE_SECONDS=3)
def test_a_database_gone_for_longer_than_the_lease_fails_the_call_and_refuses_every_later_one(engine_for, proxy):
    seen: list[str] = []

    def body(ctx, i):
        try:
            ctx.acme.order.refund({"order_id": "1", "amount": 5})
        except SanomaError as err:
            seen.append(str(err.code))
            proxy.resume()  # the database is back, too late for the checkpoint; the run's end is recorded
        ctx.acme.order.refund({"order_id": "1", "amount": 5})

    engine = engine_for(define_workflow(name="gone", uses=[REFUND], run=body))
    after_reply(engine, REFUND, proxy.cut)
    waited: list[float] = []
    started = time.monotonic()
    with clock.sleeping_with(really_sleeping(waited)):
        run = engine.run("gone")
    took = time.monotonic() - started
    assert seen == ["ledger_write_failed"]
    assert run.status == "failed"
    assert run.error["code"] == "run_ended"
    assert "acme.order.refund succeeded, but the ledger could not record it" in run.error["message"]
    assert len(engine.fake.calls) == 1
    assert len(engine.fake.state["refunds"]) == 1
    assert not LedgerRecord.objects.filter(run_id=run.id, kind="op.called").exists()
    # a 3 s lease, just claimed: tried for about 3 s less the 0.3 s margin, never past the lease
    assert 2.0 < sum(waited) <= 2.8 and took < 3.5


def test_the_waits_after_a_drop_grow_to_a_second_and_end_at_the_deadline(monkeypatch):
    now = [100.0]
    monkeypatch.setattr(reconnect.time, "monotonic", lambda: now[0])
    backoff = reconnect.Backoff(deadline=104.0)
    waits = []
    while (delay := backoff.next_delay()) is not None:
        waits.append(delay)
        now[0] += delay
    assert waits == pytest.approx([0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 0.45])
    assert reconnect.Backoff(deadline=99.0).next_delay() is None


@pytest.mark.django_db
def test_an_answer_of_the_database_is_not_a_lost_connection():
    connection.ensure_connection()
    assert not reconnect.connection_lost(DatabaseError("connection reset"))  # the connection is still up
    assert not reconnect.connection_lost(IntegrityError("duplicate key"))
    assert not reconnect.connection_lost(TypeError("not serialisable"))
    assert not reconnect.can_reconnect()  # a test runs in a transaction: a new connection would lose it
