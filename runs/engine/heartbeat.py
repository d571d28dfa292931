"""Lease renewal for vendor calls in flight: one daemon thread per process, started on first use.

A step's commit renews the run's lease; a single slow call (longer than a third of the lease) is
kept alive here, so no other worker takes the run over while the vendor is still answering.
"""
from __future__ import annotations

import itertools
import logging
import threading
import time
from datetime import timedelta

from django.db import connections

from runs.engine import clock, transitions

log = logging.getLogger("sanoma.engine")

_lock = threading.Lock()
_inflight: dict[int, tuple[str, str, timedelta, float]] = {}
_tokens = itertools.count(1)
_thread: threading.Thread | None = None
TICK_SECONDS = 0.5


def begin(run_id: str, worker_id: str, lease: timedelta) -> int:
    global _thread
    token = next(_tokens)
    with _lock:
        _inflight[token] = (run_id, worker_id, lease, time.monotonic())
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_loop, name="sanoma-lease-heartbeat", daemon=True)
            _thread.start()
    return token


def end(token: int) -> None:
    with _lock:
        _inflight.pop(token, None)


def _due() -> list[tuple[int, str, str, timedelta]]:
    now = time.monotonic()
    with _lock:
        due = [(t, run, worker, lease) for t, (run, worker, lease, since) in _inflight.items()
               if now - since >= lease.total_seconds() / 3]
        for token, run, worker, lease in due:
            _inflight[token] = (run, worker, lease, now)
    return due


def _loop() -> None:
    while True:
        time.sleep(TICK_SECONDS)
        due = _due()
        if not due:
            continue
        try:
            for _, run_id, worker_id, lease in due:
                now = clock.now()
                transitions.keep_alive(run_id=run_id, worker_id=worker_id, now=now, lease_until=now + lease)
        except Exception:  # the next step's commit finds out whether the lease is really gone
            log.warning("renewing leases of calls in flight failed", exc_info=True)
        finally:
            connections.close_all()  # renewals are rare: hold no connection between them
