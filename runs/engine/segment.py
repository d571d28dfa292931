"""One advance of a run, as the engine sees it: a `Segment`.

It numbers the steps as the workflow's body reaches them (`take_seq`), answers whether a step is
recorded (`replayed`), and writes each durable step as one `Checkpoint` in one transaction under
the run's lease (`commit`), renewing the lease as it goes and keeping it while a slow vendor call
runs (`heartbeat`). `advance` holds the segment; the workflow only ever sees the `ctx` over it.
"""
from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, transaction

from connectors.errors import SanomaError
from connectors.operations import Operation
from runs import ledger, ledger_chain
from runs.approvals.announce import announce_asked
from runs.approvals.permissions import grant_approver
from runs.config.resolution import ResolvedConfig
from runs.engine import clock, effects, fastpath, faults, heartbeat, instances, reconnect, transitions
from runs.engine.faults import FaultPoint
from runs.engine.history import Replayed
from runs.engine.stops import Cancelled, Diverged, LeaseLost, ReachedStep, Rewind, Suspend
from runs.engine.transitions import LeaseCheck
from runs.errors import RunCode
from runs.models import Approval, LedgerKind, LedgerRecord, Run, RunMessage, RunStatus, RunTag, Step, StepKind
from runs.sandbox.engine import SandboxAdvance, sandbox_advance
from runs.spend.services import Settlement, settle_call
from runs.telemetry import metrics, tracing

log = logging.getLogger("sanoma.engine")

# What `ctx.approval` replays as: an approval is asked at a seq of its own, with no step row.
APPROVAL = "approval"
# What a policy's approval of a held call takes its seq as (never reached by a body: the call is).
HOLD = "hold"

# Records whose step's unique (run, seq) already guards them: written without a savepoint.
FAST_KINDS = (LedgerKind.OP_CALLED, LedgerKind.SLEEP_STARTED)
# The test-only fault point right before each kind of write (see `runs.engine.faults`).
WRITE_POINTS = {
    LedgerKind.OP_INTENT: FaultPoint.BEFORE_INTENT,
    LedgerKind.OP_RESOLVED: FaultPoint.BEFORE_RESOLVED,
    LedgerKind.MESSAGE_RECEIVED: FaultPoint.BEFORE_MESSAGE_READ,
    LedgerKind.APPROVAL_REQUESTED: FaultPoint.BEFORE_APPROVAL,
    LedgerKind.CHILD_STARTED: FaultPoint.BEFORE_CHILD,
    LedgerKind.OP_CALLED: FaultPoint.BEFORE_CALL,
}


@dataclass
class Checkpoint:
    """One durable step: what commits together, under the lease, or not at all.

    `step` is the checkpoint row (None for a record that belongs to no step of its own: an intent,
    a failed attempt, an approval asked); `records` its ledger records. With it may go the
    approval asked (`approval`), the message read (`read`, marked read at the step), the child run
    started (`child`, its row and its first record), the run's tags (`tags`), the run's flag
    that it has retry records (`retries`), and the settlement of a money call's reservation
    (`money`: spent or released with the call's record, `runs.spend.services.settle_call`)."""

    step: Step | None = None
    records: Sequence[LedgerRecord] = ()
    approval: Approval | None = None
    read: RunMessage | None = None
    child: Run | None = None
    tags: dict[str, str] | None = None
    retries: bool = False
    money: Settlement | None = None

    def one_record(self) -> bool:
        """A step and one record of a kind its step guards, nothing else: the one-statement write."""
        return (self.step is not None and self.approval is None and self.read is None and self.child is None
                and self.tags is None and self.money is None and len(self.records) == 1
                and self.records[0].kind in FAST_KINDS)


class Segment:
    """One advance of one run: its step counter, its recorded steps, its lease, its writes."""

    def __init__(self, *, run: Run, config: ResolvedConfig, worker_id: str, steps: dict[int, Replayed],
                 segment_seconds: float, replay_until: int | None = None, base: int = 0, generation: int = 1) -> None:
        self.run = run
        self.worker_id = worker_id
        # A sandbox run advances on fakes only: its drivers are its fakes' (loaded from its row), or
        # a refusal for a vendor with none. Never the config's drivers. (A dry replay calls nothing.)
        self.sandbox: SandboxAdvance | None = sandbox_advance(run, config) if replay_until is None else None
        self.config = self.sandbox.config if self.sandbox is not None else config
        # The steps of the run's current generation: those after its latest `continue` step (`base`).
        self.steps = steps
        self.base = base
        self.generation = generation
        self.next_seq = base + 1
        # A dry replay (checking a fork) stops as the body reaches this step: nothing is written.
        self.replay_until = replay_until
        # The fan-out `ctx.all` is in (its records carry it), or None.
        self.group: dict[str, Any] | None = None
        # The run's signal generation when claimed: a signal during the advance hands it back.
        self.signal_gen = run.signal_gen
        self._ended = False
        self._poisoned: str | None = None
        # The input of the generation the body runs (set by `runs.engine.history.run_generations`).
        self.input: Any = None
        # A call's checkpoint written behind the workflow's code (`runs.engine.effects`), and the
        # calls whose checkpoint could not be written: at a rewind, the call at that seq fails.
        self.behind: effects.Behind | None = None
        self.unrecorded: dict[int, tuple[str, SanomaError]] = {}
        self._rewinding = False
        self._ends = time.monotonic() + segment_seconds
        self._lease = timedelta(seconds=settings.SANOMA_LEASE_SECONDS)
        # The claim just set the lease; step writes only check it until a third of it has passed.
        self._renew_after = time.monotonic() + self._lease.total_seconds() / 3
        # The run's last ledger record as the claim read it (under the run row's lock) or as this
        # advance's last one-statement checkpoint wrote it, and `ledger_chain.linked_elsewhere`
        # then: the next checkpoint's record is linked after it in Python, unless this process has
        # had a record linked any other way since.
        self._last_record: fastpath.Last | None = None
        self._last_mark = -1
        claimed = transitions.claimed_link(run)
        if claimed is not None:
            self._last_record, self._last_mark = claimed

    # ---- steps --------------------------------------------------------------------------------

    def take_seq(self) -> int:
        """The next step's number (a dry replay stops here once it reaches its step).

        A recorded patch step the code no longer asks about (`ctx.patched` removed once every run
        took its new path) is stepped over: the code after it keeps its recorded numbers."""
        seq = self.next_seq
        while (patch := self.steps.get(seq)) is not None and patch.kind == StepKind.PATCH:
            seq += 1
        if self.replay_until is not None and seq >= self.replay_until:
            raise ReachedStep(seq)
        self.next_seq = seq + 1
        if tracing.ON:
            tracing.step_taken(seq)
        return seq

    def skip_past(self, seq: int) -> None:
        """Go on after `seq` (a step taken out of order: an approval a policy asked)."""
        self.next_seq = max(self.next_seq, seq + 1)

    def begin_generation(self, seq: int, generation: int) -> None:
        """The body continued as new at `seq` (`runs.engine.history`): it starts again after it."""
        self.steps = {}
        self.base = seq
        self.generation = generation
        self.next_seq = seq + 1

    def replayed(self, seq: int, kind: str, name: str) -> Replayed | None:
        """The recorded step `seq`, if any; one of another kind or name means the code changed."""
        step = self.steps.get(seq)
        if step is not None and (step.kind != kind or step.name != name):
            raise SanomaError(
                f"Run {self.run.id} no longer replays: step {seq} was {step.kind} {step.name}, now {kind} {name}. "
                "A workflow must make the same calls in the same order on every replay",
                code=RunCode.REPLAY_DIVERGED,
                data={"seq": seq, "was": f"{step.kind} {step.name}", "now": f"{kind} {name}"},
            )
        return step

    def step(self, seq: int, kind: str, name: str, **fields: Any) -> Step:
        """A new step of this run, numbered `seq` (not yet written)."""
        return instances.new(Step, run_id=self.run.pk, seq=seq, kind=kind, name=name, next_seq=self.next_seq,
                             related={"run": self.run}, **fields)

    def record(self, kind: LedgerKind, seq: int, body: dict[str, Any], *, key: str | None = None,
               actor: str | None = None) -> LedgerRecord:
        """A ledger record of this run at `seq` (not yet written); a sandbox run's says so."""
        if self.sandbox is not None:
            body = {**body, "sandbox": True}
        return ledger.build(self.run, kind=kind, seq=seq, body=body, key=key, group=self.group,
                            app=self.config.app_name, actor=actor)

    # ---- what may still happen ----------------------------------------------------------------

    def check_open(self) -> None:
        """Refuse a call after the advance ended, or after a call's effect went unrecorded."""
        if self._ended:
            raise SanomaError(f"Run {self.run.id} has ended: no more calls", code=RunCode.RUN_ENDED)
        if self._poisoned:
            raise SanomaError(
                f"Run {self.run.id} takes no more calls: {self._poisoned} succeeded, "
                "but the ledger could not record it",
                code=RunCode.RUN_ENDED,
            )

    def poison(self, op_id: str) -> None:
        """`op_id` took effect but could not be recorded: every further call of this advance is refused."""
        self._poisoned = op_id

    def check_time(self) -> None:
        """A segment that ran long hands the run back before its next new step."""
        if time.monotonic() > self._ends:
            raise Suspend("segment", requeue=True)

    def close(self) -> None:
        """The advance is over: any later call through its ctx (kept by a workflow) is refused."""
        self._ended = True
        if self.behind is not None:  # every way out writes it first; never left holding the lease
            heartbeat.end(self.behind.heartbeat)
            self.behind = None
        if self.sandbox is not None:
            self.sandbox.close()

    # ---- write-behind (`runs.engine.effects`) --------------------------------------------------

    def defer(self, op: Operation, checkpoint: Checkpoint, *, call_seconds: float) -> None:
        """Hold a carried-out call's checkpoint until the engine next acts for the run (`flush`),
        or until the run ends with it (`take_behind`); the lease is kept meanwhile."""
        self.flush()
        self.behind = effects.Behind(op=op, checkpoint=checkpoint, call_seconds=call_seconds,
                                     heartbeat=heartbeat.begin(self.run.pk, self.worker_id, self._lease))

    def can_defer(self, checkpoint: Checkpoint) -> bool:
        """A checkpoint that may wait: a step and its one record (no sandbox books, no money)."""
        return checkpoint.one_record() and self.sandbox is None and self.replay_until is None

    def flush(self) -> None:
        """Write the checkpoint waiting behind, if any, before the engine does anything else.
        One that cannot be written rewinds the body (`Rewind`), as does anything the body
        tries while the rewind unwinds it (a `finally` that calls)."""
        if self._rewinding:
            raise Rewind(self.run.id)
        behind = self.take_behind()
        if behind is None:
            return
        try:
            effects.record(self, behind.op, behind.checkpoint, call_seconds=behind.call_seconds)
        except effects.Unrecorded as failed:
            self.unrecorded_call(behind, failed.error)
            raise Rewind(self.run.id) from None
        metrics.call_settled(behind.op, "ok")

    def take_behind(self) -> effects.Behind | None:
        """The checkpoint waiting behind (no longer waiting: the caller writes it)."""
        behind = self.behind
        if behind is not None:
            self.behind = None
            heartbeat.end(behind.heartbeat)
        return behind

    def unrecorded_call(self, behind: effects.Behind, error: SanomaError) -> None:
        """`behind` could not be written: rewind, so its call fails where the workflow made it."""
        step = behind.checkpoint.step
        assert step is not None  # only a step's checkpoint waits
        self.unrecorded[step.seq] = (behind.op.id, error)
        self._rewinding = True

    def rewind(self) -> None:
        """Start the body again from the top of its generation (see `runs.engine.effects`)."""
        self._rewinding = False
        self.next_seq = self.base + 1
        self.group = None

    # ---- the lease ----------------------------------------------------------------------------

    @contextmanager
    def guarded(self) -> Iterator[None]:
        """A transaction that renews the lease and fails if another worker took the run."""
        cancelled = False
        with transaction.atomic():
            now = clock.now()
            if not transitions.renew_lease(run_id=self.run.pk, worker_id=self.worker_id, now=now,
                                           lease_until=now + self._lease):
                # The cancel/lease handshake: see `runs.engine.transitions`.
                if transitions.lease_check(run_id=self.run.pk, worker_id=self.worker_id) is not LeaseCheck.CANCELLED:
                    raise LeaseLost(self.run.id)
                cancelled = True  # what already happened is still recorded; nothing more is done
            yield
        self._lease_renewed()
        if cancelled:
            raise Cancelled(self.run.id)

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        """Keep the lease while a slow vendor call runs, so no other worker takes the run over."""
        token = heartbeat.begin(self.run.pk, self.worker_id, self._lease)
        try:
            yield
        finally:
            heartbeat.end(token)

    def write_deadline(self, call_seconds: float = 0.0) -> float:
        """When (time.monotonic()) a write riding out a dropped connection gives up: before the lease
        could run out (see `_lease_left`)."""
        return time.monotonic() + self._lease_left(call_seconds)

    def _lease_left(self, call_seconds: float) -> float:
        """Seconds this worker may still spend writing before its lease could run out, less a margin
        so it gives up before another worker may take the run over."""
        lease = self._lease.total_seconds()
        renewed = self._renew_after - lease / 3
        if call_seconds > lease / 3:  # the heartbeat renewed the lease while the vendor answered
            renewed = max(renewed, time.monotonic() - lease / 3 - heartbeat.TICK_SECONDS)
        margin = min(2.0, lease / 10)
        return renewed + lease - margin - time.monotonic()

    def _lease_renewed(self) -> None:
        self._renew_after = time.monotonic() + self._lease.total_seconds() / 3

    # ---- writes -------------------------------------------------------------------------------

    def commit(self, checkpoint: Checkpoint, *, point: FaultPoint | None = None, call_seconds: float = 0.0) -> None:
        """Write a checkpoint in one transaction, under the lease.

        A dropped connection is ridden out (`runs.engine.reconnect.ride_out`): the write is tried
        again on a new connection until the lease would run out, after looking whether it had
        landed with only its answer lost. Past that, `Unreachable` stops the advance."""
        if self.behind is not None:  # what waits behind was first: it is written first
            self.flush()
        step, records = checkpoint.step, checkpoint.records
        if faults.any_armed():
            point = point or (WRITE_POINTS.get(LedgerKind(records[0].kind)) if records else None)
            if point is not None:
                faults.point(point)
        mark_approvals = checkpoint.approval is not None and not self.run.has_approvals
        mark_retries = checkpoint.retries and not self.run.has_retries

        def write() -> bool:
            # A try rolled back with the connection may have saved them.
            reconnect.unsaved(*records, step, checkpoint.approval)
            self._write(checkpoint, mark_approvals=mark_approvals, mark_retries=mark_retries)
            return True

        def landed() -> bool | None:
            found = Step.objects.filter(run_id=self.run.pk, seq=step.seq).first() if step is not None else None
            if found is None and (step is not None or not records
                                  or not LedgerRecord.objects.filter(record_id=records[0].record_id).exists()):
                return None
            with self.guarded():  # a run another worker took over stops here
                pass
            if found is not None:
                self.steps[found.seq] = found
            return True

        seq = step.seq if step is not None else records[0].seq if records else "-"
        what = f"run {self.run.id}: writing step {seq}"
        reconnect.ride_out(write, deadline=lambda: self.write_deadline(call_seconds), landed=landed, what=what)
        if step is not None:
            metrics.step_written(self.run.workflow, step.kind)
            if tracing.ON:
                tracing.step_written(step)
        if mark_approvals:
            self.run.has_approvals = True
        if mark_retries:
            self.run.has_retries = True

    def _write(self, checkpoint: Checkpoint, *, mark_approvals: bool, mark_retries: bool) -> None:
        """One try of `commit`'s write."""
        step, records = checkpoint.step, checkpoint.records
        if (step is not None and not mark_retries and checkpoint.one_record() and fastpath.available()
                and self.sandbox is None):  # a sandbox run's fakes' books commit with its steps
            if self._write_fast(step, records[0]):
                return
        try:
            with self.guarded():
                faults.point(FaultPoint.STEP_COMMIT)
                if step is not None:
                    step.created_at = clock.now()
                    step.save(force_insert=True)
                if checkpoint.approval is not None:
                    checkpoint.approval.save(force_insert=True)
                    grant_approver(checkpoint.approval)
                    if self.sandbox is None:  # a sandbox run's approvals stay out of the company's channel
                        announce_asked(checkpoint.approval, self.config)  # its outbox row, same transaction
                    if mark_approvals:
                        transitions.mark_has_approvals(run_id=self.run.pk)
                read = checkpoint.read
                if read is not None and step is not None:
                    marked = RunMessage.objects.filter(pk=read.pk, read_seq__isnull=True).update(
                        read_seq=step.seq, read_at=clock.now())
                    if not marked:  # only the lease holder reads messages: another worker has the run
                        raise LeaseLost(f"{self.run.id}: message {read.message_id} was read by another advance")
                for key, value in (checkpoint.tags or {}).items():
                    RunTag.objects.update_or_create(run_id=self.run.pk, key=key, defaults={"value": value})
                if mark_retries:
                    transitions.mark_has_retries(run_id=self.run.pk)
                child = checkpoint.child
                if child is not None:
                    # The child's row and its first record commit with the step that started it.
                    transitions.start(run=child)
                    ledger.build(child, kind=LedgerKind.RUN_STARTED, seq=0,
                                 body={"input": child.input, "parent": self.run.id},
                                 app=self.config.app_name).save(force_insert=True)
                    if self.sandbox is not None:
                        self.sandbox.adopt_child(child)
                if self.sandbox is not None:
                    self.sandbox.save()  # the fakes' books as this step left them, committed with it
                for record in records:
                    if record.kind in FAST_KINDS:
                        record.save(force_insert=True)  # its step's unique (run, seq) already guards it
                    else:
                        ledger.append(record)
                if checkpoint.money is not None:
                    settle_call(checkpoint.money, now=clock.now())
        except IntegrityError as err:
            # Another worker recorded this step first: the run is theirs now.
            raise LeaseLost(f"{self.run.id}: {err}") from err
        if step is not None:
            self.steps[step.seq] = step

    def write_with_end(self, checkpoint: Checkpoint, *, status: RunStatus, record: LedgerRecord, result: Any,
                       error: Any) -> bool:
        """One try of a call's checkpoint written with the run's end (`runs.engine.effects`), in one
        transaction: one statement on PostgreSQL when the end is one (no parent to wake, no
        approvals to withdraw). False when this worker no longer holds a running run (nothing
        written)."""
        step = checkpoint.step
        assert step is not None and checkpoint.one_record()
        run = self.run
        faults.point(FaultPoint.STEP_COMMIT)
        now = clock.now()
        step.created_at = now
        try:
            if fastpath.available() and transitions.ends_in_one_statement(parent_id=run.parent_id,
                                                                          has_approvals=run.has_approvals):
                return fastpath.write_step_with_end(
                    step=step, record=checkpoint.records[0], worker_id=self.worker_id, now=now, status=status,
                    result=result, error=error, end=record, after=self._taken_last_record()) is not None
            with transaction.atomic():
                if not transitions.renew_lease(run_id=run.pk, worker_id=self.worker_id, now=now,
                                               lease_until=now + self._lease):
                    return False
                step.save(force_insert=True)
                checkpoint.records[0].save(force_insert=True)  # its step's unique (run, seq) guards it
                if not transitions.end(run_id=run.pk, worker_id=self.worker_id, status=status, result=result,
                                       error=error, now=now, record=record, parent_id=run.parent_id,
                                       has_approvals=run.has_approvals):
                    raise _NotEnded  # cannot be, under the lease just renewed: nothing is kept
                return True
        except IntegrityError as err:
            # Another worker recorded this step first: the run is theirs now.
            raise LeaseLost(f"{self.run.id}: {err}") from err
        except _NotEnded:
            return False

    def _write_fast(self, step: Step, record: LedgerRecord) -> bool:
        faults.point(FaultPoint.STEP_COMMIT)
        now = clock.now()
        step.created_at = now
        renew = time.monotonic() >= self._renew_after
        try:
            linked = fastpath.write_step(step=step, record=record, worker_id=self.worker_id,
                                         lease_until=now + self._lease, now=now, renew=renew,
                                         after=self._taken_last_record())
        except IntegrityError as err:
            raise LeaseLost(f"{self.run.id}: {err}") from err
        if linked is None:
            return False
        self.steps[step.seq] = step
        if renew:
            self._lease_renewed()
        if not connection.in_atomic_block:  # committed: a caller's transaction could still roll it back
            self._last_record, self._last_mark = linked, ledger_chain.linked_elsewhere
        return True

    def _taken_last_record(self) -> fastpath.Last | None:
        """The run's last record as this advance last wrote it, while nothing else in this process
        has linked a record since (then the trigger links the next); forgotten until the write
        that uses it succeeds."""
        last, self._last_record = self._last_record, None
        return last if self._last_mark == ledger_chain.linked_elsewhere else None


class _NotEnded(Exception):
    """The end matched no row after the checkpoint was written: the transaction is rolled back."""


def shown(kind: str, name: str, group: dict[str, Any] | None = None) -> str:
    """A step as a sentence names it: `call shop.order.get`, `wait shipped (ctx.all member 2 of 3)`."""
    member = f" (ctx.all member {group['index'] + 1} of {group['size']})" if group else ""
    return f"{kind if name in ('', kind) else f'{kind} {name}'}{member}"


class DrySegment(Segment):
    """A replay of a run's record with nothing written and no vendor called: checking a fork, or
    proving a parked run on new code (`runs.engine.proof`).

    The recorded steps answer as in a live replay. `pending` holds what the run began at a seq
    but has no step for: a call held for an approval, in doubt or waiting for its next try
    (`("call", op)`), an approval asked by `ctx.approval` (`("approval", title)`) or by a policy
    (`("hold", op)`). The body stops as it reaches `until` (`ReachedStep`), or a pending call (the
    run's parked point: `ReachedStep` at its seq). Anything else the record does not have before
    then raises `Diverged`, naming the step, before any effect or write. `groups` (seq -> the
    `ctx.all` group its records carry) is checked where known: a changed fan-out diverges too.
    """

    def __init__(self, *, run: Run, config: ResolvedConfig, steps: dict[int, Replayed], until: int,
                 pending: dict[int, tuple[str, str]] | None = None,
                 groups: dict[int, dict[str, Any] | None] | None = None, base: int = 0) -> None:
        super().__init__(run=run, config=config, worker_id="dry-replay", steps=steps, segment_seconds=86400.0,
                         replay_until=until, base=base)
        self.pending = pending or {}
        self.groups = groups or {}
        self._group_sizes = {g["id"]: g["size"] for g in self.groups.values() if g}

    def take_seq(self) -> int:
        try:
            return super().take_seq()
        except ReachedStep:
            self._check_group_size(self.next_seq, "goes on")
            raise

    def replayed(self, seq: int, kind: str, name: str) -> Replayed | None:
        step = self.steps.get(seq)
        was = (step.kind, step.name) if step is not None else self.pending.get(seq)
        now = shown(kind, name, self.group)
        if was is None:
            raise Diverged(seq, None, now)
        recorded = self.groups.get(seq)
        if was[0] != kind or (was[1] != name and kind != APPROVAL):
            raise Diverged(seq, shown(was[0], was[1], recorded), now)
        if seq in self.groups and _member(recorded) != _member(self.group):
            raise Diverged(seq, shown(was[0], was[1], recorded), now)
        self._check_group_size(seq, now)
        if step is None and kind == StepKind.CALL:
            raise ReachedStep(seq)  # the call the run is parked on: held, in doubt, or due a retry
        return step

    def _check_group_size(self, seq: int, now: str) -> None:
        group = self.group
        if group is not None and self._group_sizes.get(group["id"], group["size"]) != group["size"]:
            was = self._group_sizes[group["id"]]
            raise Diverged(seq, None, now, f"the ctx.all around step {seq} had {was} members, now {group['size']}")

    def commit(self, checkpoint: Checkpoint, *, point: FaultPoint | None = None, call_seconds: float = 0.0) -> None:
        # Never reached while `replayed` guards every step; kept so nothing is ever written.
        step = checkpoint.step
        seq = step.seq if step is not None else checkpoint.records[0].seq if checkpoint.records else self.next_seq
        what = shown(step.kind, step.name) if step is not None else (
            checkpoint.records[0].kind if checkpoint.records else "a write")
        raise Diverged(seq, None, what, f"the code now writes {what} at step {seq}, which the run did not record")

    @contextmanager
    def guarded(self) -> Iterator[None]:
        raise Diverged(self.next_seq, None, "a write", "the code now writes before the run's parked point")
        yield  # pragma: no cover

    @contextmanager
    def heartbeat(self) -> Iterator[None]:
        raise Diverged(self.next_seq, None, "a call", "the code now calls a vendor before the run's parked point")
        yield  # pragma: no cover


def _member(group: dict[str, Any] | None) -> tuple[Any, ...] | None:
    return None if group is None else (group.get("id"), group.get("index"), group.get("size"))
