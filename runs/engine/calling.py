"""Carrying one attempt of a call to its driver, within its time limit, and the retry rules.

A vendor call runs on a thread of a shared pool while the worker's thread waits for it at most
the call's timeout. A call past its deadline is abandoned: the worker goes on (the attempt
failed with `driver_timeout`), the heartbeat stops renewing the lease for it, and whatever the
abandoned thread gets back later is dropped. The handoff costs a thread switch each way (0.1 ms
on a quiet machine, over 1 ms on a loaded one), so only a call that may outlast its deadline pays
it: the runtime's own operations (collections, people) work on the database on the worker's own
thread and connection, and a driver that answers at once (an in-memory fake with nothing held)
runs on the worker's thread too.
"""
from __future__ import annotations

import contextvars
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings
from django.db import connections
from pydantic import BaseModel

from connectors.drivers import CallContext, Driver
from connectors.errors import DriverTimeout
from connectors.operations import Operation, Retry
from runs.telemetry import tracing

# Vendors whose drivers are the runtime's own and use the worker's database connection.
INLINE_VENDORS = ("data", "sanoma")
# A retry wait longer than this is a durable sleep (the run waits with its wake time, no thread asleep).
DURABLE_RETRY_SECONDS = 3.0
POOL_THREADS = 64

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()


def _executor() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=POOL_THREADS, thread_name_prefix="sanoma-call")
        return _pool


def default_timeout() -> float:
    return float(settings.SANOMA_CALL_TIMEOUT_SECONDS)


def invoke(driver: Driver, op: Operation, parsed: BaseModel, context: CallContext, timeout: float) -> Any:
    """The driver's reply to one attempt, or `DriverTimeout` once `timeout` seconds have passed.

    Only a call that may outlast its deadline goes to a pool thread: the runtime's own operations
    and a driver that answers at once (`Driver.answers_inline`: an in-memory fake) run here."""
    if op.vendor in INLINE_VENDORS or driver.answers_inline(op.id):
        return driver.call(op.id, parsed, context)
    if tracing.ON:  # the driver's own spans (an HTTP client's) nest in the call's
        future = _executor().submit(contextvars.copy_context().run, _on_pool_thread, driver, op.id, parsed, context)
    else:
        future = _executor().submit(_on_pool_thread, driver, op.id, parsed, context)
    try:
        return future.result(timeout=timeout)
    except FutureTimeout:
        future.cancel()
        hint = ("it is tried again" if op.idempotent else
                "it may have taken effect at the vendor: check there before running it again")
        raise DriverTimeout(f"{op.id} did not answer within {timeout:g} s; {hint}", retryable=op.idempotent,
                            may_have_acted=True) from None


def _on_pool_thread(driver: Driver, op_id: str, parsed: BaseModel, context: CallContext) -> Any:
    """One attempt on a pool thread. A driver that touched the database here opened a connection
    of this thread's own: it is closed after the call, so no pool thread holds one open for good."""
    try:
        return driver.call(op_id, parsed, context)
    finally:
        if any(conn.connection is not None for conn in connections.all(initialized_only=True)):
            connections.close_all()


class SiteRetry(Retry):
    """The site's default for an idempotent operation: three tries, waiting SANOMA_RETRY_DELAYS
    between them (about 1 s, then 2 s)."""

    def delay(self, attempt: int, *, retry_after: float | None = None, spread: float = 0.0) -> float:
        delays = tuple(getattr(settings, "SANOMA_RETRY_DELAYS", (1.0, 2.0)))
        wait = float(delays[min(attempt - 1, len(delays) - 1)])
        return wait if retry_after is None else max(wait, min(float(retry_after), self.max_delay))


def retry_policy(op: Operation, override: Retry | None) -> Retry:
    """What decides the retries of this call: the call's own, the operation's, or the site's."""
    if override is not None:
        return override
    if op.retry is not None:
        return op.retry
    return SITE_RETRY


SITE_RETRY = SiteRetry(attempts=3)  # reads the settings at each delay, so one serves every call
