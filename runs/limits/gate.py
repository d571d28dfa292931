"""What a call of a limited operation does just before its driver is invoked, and after it answers.

`enter` finds the limits in force for the call (its connector's and its operation's, as declared
or as an operator changed them), takes a start time from each rate budget and a slot from each
concurrency budget, and waits for the latest start time in place when it is near
(`IN_PLACE_SECONDS`). When it is further, the run suspends (`waiting for rate limit of stripe`),
keeping the start times it took (`LimitHold`), and is woken a moment before them; no thread sleeps
and no worker holds the run meanwhile. A concurrency budget with no free slot is polled in place
for a moment, then the run suspends (`waiting for concurrency limit of stripe`) until a call gives
a slot back (the run that has waited longest is woken), or at worst `SLOT_POLL_SECONDS` later.
`Passage.leave` gives the slots back once the driver has answered.

A worker does not sleep out one call's wait while new work waits for it. While a run has been queued
for `BUSY_AFTER_SECONDS` and not taken (every worker is busy) and holds no start time (it will not
wait for a turn itself), a call with more than `busy_lead_ms` to wait suspends its run instead,
keeping its start times, to be woken that long before them: `BUSY_IN_PLACE_SECONDS` on
PostgreSQL, where a worker wakes a run at its time; on SQLite, where the sweep finds due runs every
`SANOMA_SWEEP_SECONDS` and the broker polls for them, that and those intervals. Woken then, it has
no more than that to wait, and waits in place. Runs that hold start
times do not count: giving a worker up to a run that then waits for its own turn would only make
the calls late (a start time missed is a call the budget loses).

A start time taken long ago (the run woke late) is given up for a fresh one: a call never starts
later than `late_ms` after the time it took, so calls never bunch up past the limit.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import connection

from connectors import limits
from connectors.errors import DriverError
from connectors.limits import SPACING_MARGIN, Rate
from connectors.operations import Operation
from runs.engine import clock
from runs.engine.stops import Suspend
from runs.limits import RATE_WAIT, SLOT_WAIT, overrides, services

IN_PLACE_SECONDS = 1.0  # a wait up to this is slept in place (well under calling.DURABLE_RETRY_SECONDS)
WAKE_LEAD_SECONDS = 0.75  # a run waiting for its start time is woken this long before it
BUSY_IN_PLACE_SECONDS = 0.1  # with new work waiting for a worker, a call waits in place this long at most
BUSY_AFTER_SECONDS = 0.05  # a run queued this long and not taken: every worker is busy
SLOT_AHEAD_SECONDS = 0.06  # a concurrency slot is looked for this long before the start time
DEPART_LEAD_SECONDS = SLOT_AHEAD_SECONDS  # the call is handed to the thread that sends it this long before
SLOT_POLL_SECONDS = 1.0  # a run waiting for a concurrency slot looks again after this
SLOT_POLL_EVERY = 0.02  # in place, a concurrency slot is looked for this often
SLOT_LEASE_EXTRA_SECONDS = 10.0  # a slot's lease: the call's timeout and this; then a dead worker's slot is free
ROUNDS = 3
MAX_WAITING_FOR = 250

log = logging.getLogger("sanoma.limits")


@dataclass(frozen=True)
class Applied:
    """One limit in force for one call: its budget (scope and key value) and its bounds."""

    scope: str  # the vendor, or the operation's id
    key_name: str | None
    key: str  # the key field's value ('' when unkeyed)
    rate: Rate | None
    concurrency: int | None

    @property
    def label(self) -> str:
        """`stripe`, or `stripe.refund.create for account acct_1`."""
        return f"{self.scope} for {self.key_name} {self.key}" if self.key_name and self.key else self.scope

    @property
    def interval_ms(self) -> int:
        return 0 if self.rate is None else max(1, round(self.rate.interval * 1000))

    @property
    def late_ms(self) -> int:
        """How long after its start time a call may still start: calls bunch up by at most this."""
        if self.rate is None:
            return 0
        return max(5, int(self.rate.period * SPACING_MARGIN * 0.4 * 1000))

    def waiting_for(self, kind: str) -> str:
        return f"{kind} {self.label}"[:MAX_WAITING_FOR]


effective = services.effective  # the limit in force: the declaration's, as an override changes it


def applied_limits(op: Operation, input_json: Any, *, queued_at: datetime | None = None) -> list[Applied]:
    """The limits a call of `op` with this input must fit: its connector's, then its operation's.

    `queued_at`: when the call's run was last queued; the overrides are read again when they were
    read before it (a run an operator's change woke sees that change, whichever worker takes it)."""
    changed = overrides.current(read_after=queued_at)
    found = []
    for scope, declared in ((op.vendor, op.vendor_limit), (op.id, op.limit)):
        override = changed.get(scope)
        if declared is None and override is None:
            continue
        rate, concurrency, key_name = effective(declared, override)
        if rate is None and concurrency is None:
            continue
        key = declared.key_value(input_json) if declared is not None else ""
        found.append(Applied(scope, key_name, key, rate, concurrency))
    return found


@dataclass
class Passage:
    """The start times a call took and the concurrency slots it holds while its driver works."""

    holder: str
    slots: list[tuple[Applied, int]] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    start: dict[tuple[str, str], int] = field(default_factory=dict)  # by (scope, key), epoch ms
    departed: bool = False

    def depart(self) -> None:
        """The call's first request leaves now (`go`); the call's further requests are its own business."""
        if not self.departed:
            self.go()
            self.departed = True

    def go(self) -> None:
        """Just before the request leaves, on the thread that sends it: wait for the start time
        when early; a call that would leave later than its start time's window (a busy machine's
        thread hand-over, a slow moment) takes a new start time instead, so the calls never reach
        the vendor closer together than the limit allows. Suspends the run when the new time is
        far (as `enter` does)."""
        for _ in range(ROUNDS):
            began = max(self.start.values(), default=0)
            if clock.now_ms() < began:
                clock.sleep((began - clock.now_ms()) / 1000)
            now = clock.now_ms()
            if on_time(self.applied, self.start, now):
                return
            log.info("%s: %d ms late for its start time as it leaves; it takes a new one", self.holder, now - began)
            self.start = _rates(self.applied, self.holder, fresh=True)
        a = next(a for a in self.applied if a.rate is not None)
        raise Suspend(a.waiting_for(RATE_WAIT), wake_at=clock.from_ms(clock.now_ms() + a.interval_ms))

    def leave(self) -> None:
        """Give the slots back, and wake a run waiting for one of them (the others poll)."""
        slots, self.slots = self.slots, []
        for applied, slot in slots:
            services.release(scope=applied.scope, key=applied.key, slot=slot, holder=self.holder)
        for applied, _ in slots:
            services.wake_one(applied.waiting_for(SLOT_WAIT))


class Timed:
    """A driver whose every call first waits for the call's start time (`Passage.go`), on the thread
    that then sends the request, and again as an HTTP request leaves (`connectors.limits.departing`,
    called by the shared HTTP client): the limit holds for when the call leaves, not when it was let
    through."""

    def __init__(self, driver: Any, passage: Passage) -> None:
        self.driver, self.passage = driver, passage

    def answers_inline(self, op_id: str) -> bool:
        return bool(self.driver.answers_inline(op_id))

    def call(self, op_id: str, payload: Any, context: Any) -> Any:
        self.passage.go()  # for any driver; an HTTP driver's client looks again as the request leaves
        token = limits._departing.set(self.passage.depart)
        try:
            return self.driver.call(op_id, payload, context)
        finally:
            limits._departing.reset(token)


def on_time(applied: list[Applied], start: dict[tuple[str, str], int], now: int) -> bool:
    """Whether a call leaving at `now` is within the window of each of its start times."""
    return all(a.rate is None or now <= start[(a.scope, a.key)] + a.late_ms for a in applied)


def enter(applied: list[Applied], *, holder: str, timeout: float) -> Passage:
    """Take the call's start time and slots; sleep until the start when it is near, else suspend the run."""
    passage = Passage(holder, applied=applied)
    try:
        start = _rates(applied, holder)
        for turn in range(ROUNDS + 1):
            if turn == ROUNDS:  # never on time (a database too busy): try again a moment later
                a = next(a for a in applied if a.rate is not None)
                raise Suspend(a.waiting_for(RATE_WAIT), wake_at=clock.from_ms(clock.now_ms() + a.interval_ms))
            # Sleep until just before the start, take the slots (a call under way may be ending),
            # then start on time: a slot held while sleeping would be kept from another call.
            _wait_for_start(applied, holder, start,
                            until_ms=max(start.values(), default=0) - int(SLOT_AHEAD_SECONDS * 1000))
            _slots(applied, passage, timeout)
            # The last moment is waited for by `Passage.go`, on the thread that sends the request: handing
            # the call to it takes a busy machine a few ms, which would make the call leave late.
            wait = (max(start.values(), default=0) - clock.now_ms()) / 1000 - DEPART_LEAD_SECONDS
            if wait > 0:
                clock.sleep(wait)
            now = clock.now_ms()
            if on_time(applied, start, now):
                break
            log.info("%s: %d ms late for its start time; it takes a new one", holder, now - max(start.values()))
            start = _rates(applied, holder, fresh=True)  # waiting for the slot made the start time stale
    except BaseException:
        passage.leave()
        raise
    passage.start = start
    return passage


def _new_work_waiting() -> bool:
    """Whether a run that holds no start time has waited for a worker longer than an idle worker
    takes to notice it."""
    return services.new_work_waiting(queued_before=clock.from_ms(clock.now_ms() - int(BUSY_AFTER_SECONDS * 1000)))


def busy_lead_ms() -> int:
    """How long before its start time a run that gave its worker up is woken: as long as a wake can
    take here. On PostgreSQL a worker wakes a run at its time; on SQLite the sweep looks for due runs
    every `SANOMA_SWEEP_SECONDS` and the broker for tasks every `Q_CLUSTER["poll"]` seconds."""
    if connection.vendor == "postgresql":
        return int(BUSY_IN_PLACE_SECONDS * 1000)
    poll = settings.Q_CLUSTER.get("poll", 0.2)  # django-q2's default
    polls = settings.SANOMA_SWEEP_SECONDS + (poll if isinstance(poll, int | float) else 0.2)
    return int((BUSY_IN_PLACE_SECONDS + polls) * 1000)


def _wait_for_start(applied: list[Applied], holder: str, start: dict[tuple[str, str], int], *, until_ms: int) -> None:
    """Sleep in place until `until_ms`, looking every `BUSY_IN_PLACE_SECONDS` for new work waiting
    for a worker; while there is some and more than `busy_lead_ms` is left, suspend the run instead,
    keeping its start times, to be woken that long before them (then it waits in place)."""
    lead_ms, look_ms = busy_lead_ms(), int(BUSY_IN_PLACE_SECONDS * 1000)
    while (left := until_ms - clock.now_ms()) > 0:
        if left > lead_ms and _new_work_waiting():
            services.keep_holds(holder, start)
            at = max(start.values())
            a = next(a for a in applied if start[(a.scope, a.key)] == at)
            raise Suspend(a.waiting_for(RATE_WAIT), wake_at=clock.from_ms(at - lead_ms))
        slice_ms = min(left - lead_ms, look_ms) if left > lead_ms else left
        clock.sleep(slice_ms / 1000)


def _rates(applied: list[Applied], holder: str, *, fresh: bool = False) -> dict[tuple[str, str], int]:
    """A start time from every budget (kept ones when still good); suspends when one is far off."""
    now = clock.now_ms()
    kept = {} if fresh else services.holds_of(holder)
    taken: dict[tuple[str, str], int] = {}
    for a in applied:
        at = kept.get((a.scope, a.key))
        if at is not None and now > at + a.late_ms:
            log.info("%s: %s woke %d ms after its start time; it takes a new one", a.label, holder, now - at)
        if at is None or now > at + a.late_ms:
            at = services.reserve(scope=a.scope, key=a.key, interval_ms=a.interval_ms, now_ms=now)
        taken[(a.scope, a.key)] = at
        if at - now > IN_PLACE_SECONDS * 1000:
            services.keep_holds(holder, taken)
            raise Suspend(a.waiting_for(RATE_WAIT), wake_at=clock.from_ms(max(now, at - int(WAKE_LEAD_SECONDS * 1000))))
    if kept:
        services.drop_holds(holder)
    return taken


def _slots(applied: list[Applied], passage: Passage, timeout: float) -> None:
    """A slot of every concurrency budget, looked for in place for a moment; else the run suspends."""
    have = {(a.scope, a.key) for a, _ in passage.slots}
    for a in applied:
        if a.concurrency is None or (a.scope, a.key) in have:
            continue
        gives_up = clock.now_ms() + int(IN_PLACE_SECONDS * 1000)
        while True:
            now = clock.now_ms()
            until = now + int((timeout + SLOT_LEASE_EXTRA_SECONDS) * 1000)
            slot = services.acquire(scope=a.scope, key=a.key, slots=a.concurrency, holder=passage.holder,
                                    until_ms=until, now_ms=now)
            if slot is not None:
                passage.slots.append((a, slot))
                break
            if now >= gives_up:
                raise Suspend(a.waiting_for(SLOT_WAIT), wake_at=clock.from_ms(now + int(SLOT_POLL_SECONDS * 1000)))
            clock.sleep(SLOT_POLL_EVERY)


def vendor_said_wait(applied: list[Applied], err: BaseException) -> float | None:
    """A vendor's 429 with `Retry-After` pushes every budget of the call to then (other workers'
    calls wait too); the seconds it asked for, or None."""
    if not isinstance(err, DriverError) or err.status != 429 or err.retry_after is None:
        return None
    until = clock.now_ms() + int(err.retry_after * 1000)
    for a in applied:
        services.push(scope=a.scope, key=a.key, until_ms=until)
    return err.retry_after


__all__ = ["Applied", "Passage", "RATE_WAIT", "SLOT_WAIT", "Timed", "applied_limits", "effective", "enter",
           "on_time", "vendor_said_wait"]


def overridden(op: Operation) -> bool:
    """Whether an operator set a limit on `op` or its connector (which may declare none).

    On every call of an operation that declares no limit: a look at the overrides this process last
    read, never a query (they are read at the start of each segment and by every limited call)."""
    changed = overrides.known()
    return bool(changed) and (op.vendor in changed or op.id in changed)
