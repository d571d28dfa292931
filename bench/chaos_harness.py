"""The chaos run's harness (`bench/chaos.py`): the workload, the worker slots, and the faults it
injects while runs go (worker kills and freezes, PostgreSQL restarts), tallying what it did."""
from __future__ import annotations

import argparse
import os
import random
import signal
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent

REPO = HERE.parent

ROOT = HERE / "chaos_company"

VERSION = "chaos"

STARTER, APPROVER, OPERATOR = "chaos-starter", "chaos-approver", "chaos-operator"

KINDS = ("honoured", "ignored", "reconciled")


def workload(rng: random.Random, n: int) -> dict[str, Any]:
    """One run's input: a vendor kind in turn, and a random mix of the rest."""
    return {
        "vendor": KINDS[n % len(KINDS)],
        "calls": rng.randint(1, 3),
        "sleep_ms": rng.choice([0, 0, rng.randint(200, 2500)]),
        "child": rng.random() < 0.3,
        "approval": rng.random() < 0.35,
        "message": rng.random() < 0.35,
    }


@dataclass
class Slot:
    """One worker process and what the harness is doing to it."""

    name: str
    worker: Any
    stopped_until: float | None = None  # SIGSTOPped: SIGCONT at this moment
    terminating_since: float | None = None  # SIGTERM sent: a new one starts when it has exited
    starts: int = 0


@dataclass
class Tally:
    faults: Counter = field(default_factory=Counter)
    pg_restarts: list[dict[str, Any]] = field(default_factory=list)
    harness_db_errors: int = 0
    worker_exits: list[str] = field(default_factory=list)
    doubts_seen: dict[str, float] = field(default_factory=dict)  # run -> first seen waiting in doubt
    operator_answers: Counter = field(default_factory=Counter)
    decided: set[int] = field(default_factory=set)
    frozen_calls: set[int] = field(default_factory=set)  # the vendor's slow requests already looked at
    messaged: set[str] = field(default_factory=set)


class Harness:
    def __init__(self, args: argparse.Namespace, pg: Any, vendor: Any, db_url: str) -> None:
        self.args = args
        self.pg = pg
        self.vendor = vendor
        self.db_url = db_url
        self.rng = random.Random(args.seed)
        self.tally = Tally()
        self.slots: list[Slot] = []
        self.restart: dict[str, Any] | None = None
        self.started = 0
        self.logs = pg.folder / "logs"
        self.timers: list[threading.Timer] = []

    # --- the workers -----------------------------------------------------------------------------

    def worker_env(self) -> dict[str, str]:
        from runs.tests.processes import worker_env

        return worker_env(db_url=self.db_url, var_dir=self.pg.folder / "var", version=VERSION, root=ROOT,
                          SANOMA_FAKES="", SANOMA_LEASE_SECONDS=self.args.lease, SANOMA_WORKERS=1,
                          CHAOS_VENDOR_URL=self.vendor.url, SANOMA_LOG_LEVEL="WARNING")

    def start_worker(self, slot: Slot) -> None:
        from runs.tests.processes import Worker

        slot.worker = Worker(self.worker_env(), self.logs / f"{slot.name}.log").start(ready_within=0)
        slot.stopped_until = slot.terminating_since = None
        slot.starts += 1

    def start_workers(self) -> None:
        for n in range(self.args.workers):
            slot = Slot(name=f"worker-{n + 1}", worker=None)
            self.start_worker(slot)
            self.slots.append(slot)

    def serving(self) -> list[Slot]:
        """The workers that are up and serving: started, not frozen, not stopping."""
        from runs.tests.processes import READY_LINE

        return [s for s in self.slots if s.stopped_until is None and s.terminating_since is None
                and s.worker.alive() and READY_LINE in s.worker.output(all_runs=False)]

    def fault(self) -> bool:
        """One fault at one serving worker; False when none may be hit. A SIGKILL or SIGTERM only while
        another worker serves (so the runs get on however slowly a new worker starts on a loaded
        machine); a freeze at any serving worker (it goes on by itself after the lease)."""
        serving = self.serving()
        kind = self.rng.choices(["sigkill", "sigterm", "sigstop"], weights=[4, 2, 3])[0]
        if not serving or (kind != "sigstop" and len(serving) < 2 and len(self.slots) > 1):
            return False
        slot = self.rng.choice(serving)
        self.tally.faults[kind] += 1
        if kind == "sigkill":
            slot.worker.kill()
            self.start_worker(slot)
        elif kind == "sigterm":
            slot.worker.proc.send_signal(signal.SIGTERM)
            slot.terminating_since = time.monotonic()
        else:  # frozen past its lease: another worker takes its runs over meanwhile
            self.freeze(slot, self.args.lease + self.rng.uniform(0.5, 2.0))
        return True

    def freeze_mid_call(self) -> None:
        """Now and then (`--freeze-mid-call`), freeze the worker whose call at a key-ignoring vendor is
        in flight and slow, past the lease: another worker takes the run over while the call can
        still land (what a reconcile read must not be fooled by)."""
        for request in self.vendor.ledger.slow_in_flight():
            if request["id"] in self.tally.frozen_calls or request["kind"] == "honoured" or not request["pid"]:
                continue
            self.tally.frozen_calls.add(request["id"])
            if self.rng.random() >= self.args.freeze_mid_call:
                continue
            try:
                group = os.getpgid(int(request["pid"]))
            except (ProcessLookupError, ValueError):
                continue
            slot = next((s for s in self.serving() if s.worker.pgid == group), None)
            if slot is None:
                continue
            self.tally.faults["sigstop mid-call"] += 1
            self.freeze(slot, self.args.lease + self.rng.uniform(1.5, 3.0))

    def freeze(self, slot: Slot, seconds: float) -> None:
        """SIGSTOP the worker's group; SIGCONT it after `seconds` on a timer of its own. Not from the
        harness's loop: a worker frozen inside a transaction holds its row locks, and the harness's
        own next query may wait on them until the worker goes on."""
        group = slot.worker.pgid
        os.killpg(group, signal.SIGSTOP)
        slot.stopped_until = time.monotonic() + seconds

        def go_on() -> None:
            try:
                os.killpg(group, signal.SIGCONT)
            except ProcessLookupError:
                pass

        timer = threading.Timer(seconds, go_on)
        timer.daemon = True
        timer.start()
        self.timers.append(timer)

    def tend_workers(self) -> None:
        now = time.monotonic()
        for slot in self.slots:
            if slot.stopped_until is not None and now >= slot.stopped_until:
                try:
                    os.killpg(slot.worker.pgid, signal.SIGCONT)  # its timer did, or does so now
                except ProcessLookupError:
                    pass
                slot.stopped_until = None
            if slot.terminating_since is not None:
                if not slot.worker.alive():
                    code = slot.worker.proc.returncode
                    if code != 0:
                        self.tally.worker_exits.append(f"{slot.name}: exit {code} after SIGTERM")
                    slot.worker.cleanup()  # its cluster's children, should any be left
                    self.start_worker(slot)
                elif now - slot.terminating_since > 60:
                    self.tally.worker_exits.append(f"{slot.name}: not stopped 60 s after SIGTERM; killed")
                    slot.worker.kill()
                    self.start_worker(slot)
            elif slot.stopped_until is None and not slot.worker.alive():
                tail = [line for line in slot.worker.output(all_runs=False).splitlines() if line.strip()][-2:]
                self.tally.worker_exits.append(f"{slot.name}: exited by itself ({slot.worker.proc.returncode}): "
                                               + " | ".join(line[:200] for line in tail))
                slot.worker.cleanup()
                self.start_worker(slot)

    def calm(self) -> None:
        """No more faults: every frozen worker continued, every stopping one replaced."""
        for timer in self.timers:
            timer.join()
        for slot in self.slots:
            if slot.stopped_until is not None:
                slot.stopped_until = 0
        deadline = time.monotonic() + 70
        while any(s.stopped_until is not None or s.terminating_since is not None for s in self.slots):
            self.tend_workers()
            if time.monotonic() > deadline:
                break
            time.sleep(0.05)

    # --- PostgreSQL --------------------------------------------------------------------------------

    def restart_pg(self) -> None:
        mode = "immediate" if self.rng.random() < self.args.immediate_share else "fast"
        self.restart = {"mode": mode, "began": time.monotonic(), "proc": self.pg.restart(mode)}

    def tend_restart(self) -> None:
        if self.restart is None or self.restart["proc"].poll() is None:
            return
        proc = self.restart["proc"]
        seconds = time.monotonic() - self.restart["began"]
        self.tally.pg_restarts.append({"mode": self.restart["mode"], "seconds": round(seconds, 2),
                                       "exit": proc.returncode,
                                       "error": (proc.stderr.read() or "")[-300:] if proc.returncode else ""})
        self.restart = None

    # --- the runs and their operator ---------------------------------------------------------------

    def feed(self, config: Any) -> None:
        from runs import services
        from runs.models import ENDED_STATUSES, Run

        if self.started >= self.args.runs:
            return
        in_flight = Run.objects.filter(workflow="chaos-mixed").exclude(status__in=ENDED_STATUSES).count()
        while in_flight < self.args.concurrency and self.started < self.args.runs:
            n = self.started
            # The same id and input again after a lost connection is the same run (an idempotent start).
            rng = random.Random(f"{self.args.seed}:{n}")
            services.start(workflow="chaos-mixed", input=workload(rng, n), started_by=STARTER,
                           run_id=f"chaos-{n:04d}", config=config)
            self.started += 1
            in_flight += 1

    def operate(self, config: Any) -> None:
        """Decide approvals, send messages, settle calls in doubt: what people would do."""
        from connectors.errors import SanomaError
        from runs import recovery, services
        from runs.approvals import services as approvals
        from runs.models import Approval, ApprovalStatus, Run, RunStatus

        for approval in Approval.objects.filter(status=ApprovalStatus.PENDING).exclude(pk__in=self.tally.decided):
            try:
                approvals.decide(run_id=approval.run_id, decision="approve", by=APPROVER,
                                 approval_id=approval.approval_id, message_id=f"chaos-{approval.pk}", timeout=0)
            except SanomaError:
                continue  # decided meanwhile, or the run ended: looked at again next round if still pending
            self.tally.decided.add(approval.pk)
        waiting = (Run.objects.filter(status=RunStatus.WAITING, waiting_for="message")
                   .exclude(pk__in=self.tally.messaged))
        for run_id in waiting.values_list("id", flat=True):
            services.send_message(run_id=run_id, topic="go", payload={}, message_id=f"go-{run_id}", by=STARTER)
            self.tally.messaged.add(run_id)
        now = time.monotonic()
        timeout = config.ops["chaos.ignored.charge"].timeout
        for run in Run.objects.filter(status=RunStatus.WAITING, waiting_for="in_doubt"):
            first = self.tally.doubts_seen.setdefault(run.pk, now)
            # A careful operator: the doubtful call can no longer land once its timeout has passed.
            if now - first < timeout + 1:
                continue
            intent = recovery.in_doubt_call(run)
            if intent is None:
                continue
            effects = self.vendor.ledger.effects_of(f"{run.pk}:{intent.seq}")
            happened = bool(effects)
            output = {"entry_id": effects[0]["entry_id"], "ref": effects[0]["ref"]} if happened else None
            try:
                recovery.resolve_in_doubt(run_id=run.pk, happened=happened, output=output, by=OPERATOR,
                                          note="chaos: from the vendor's records", config=config)
            except SanomaError:
                continue
            self.tally.operator_answers["happened" if happened else "did not happen"] += 1

    def unended(self) -> int:
        from runs.models import ENDED_STATUSES, Run

        return Run.objects.exclude(status__in=ENDED_STATUSES).count()

    # --- the loop ----------------------------------------------------------------------------------

    def step(self, config: Any) -> int | None:
        """One round of feeding and operating; the runs not ended, or None when the database was away
        (restarting: this round is given up, the next one opens a new connection)."""
        import psycopg
        from django.db import InterfaceError, OperationalError

        from runs.engine import reconnect

        try:
            self.feed(config)
            self.operate(config)
            return self.unended()
        except (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError):
            self.tally.harness_db_errors += 1
            reconnect.discard()
            time.sleep(0.2)
            return None

    def run(self, config: Any) -> dict[str, Any]:
        args = self.args
        began = time.monotonic()
        next_fault = began + self._gap(args.fault_every)
        next_pg = began + self._pg_gap(args.pg_every)
        unended: int | None = None
        while True:
            now = time.monotonic()
            unended = self.step(config)
            all_started = self.started >= args.runs
            all_ended = all_started and unended == 0
            restarts = len(self.tally.pg_restarts)
            past = now - began > args.duration and restarts >= args.min_pg_restarts
            if all_started and (all_ended or past) and self.restart is None:
                break
            if now >= next_fault and self.fault():  # none possible now: the next round tries again
                next_fault = now + self._gap(args.fault_every)
            if args.freeze_mid_call:
                self.freeze_mid_call()
            if now >= next_pg and self.restart is None:
                self.restart_pg()
                next_pg = now + self._pg_gap(args.pg_every)
            self.tend_restart()
            self.tend_workers()
            time.sleep(0.1)
        chaos_ended = time.monotonic()
        self.calm()
        while unended != 0 and time.monotonic() - chaos_ended < args.drain_timeout:
            self.tend_workers()
            unended = self.step(config)
            time.sleep(0.1)
        drained = time.monotonic()
        return {"chaos_seconds": round(chaos_ended - began, 1), "drain_seconds": round(drained - chaos_ended, 1),
                "drained": unended == 0}

    def _gap(self, mean: float) -> float:
        return self.rng.expovariate(1 / mean) if mean > 0 else float("inf")

    def _pg_gap(self, mean: float) -> float:
        """Restarts come at a steadier pace than worker faults (so a short run is sure to see some)."""
        return self.rng.uniform(0.5 * mean, 1.5 * mean) if mean > 0 else float("inf")

    def stop_workers(self) -> None:
        for slot in self.slots:
            if slot.worker is None:
                continue
            if slot.worker.alive():
                slot.worker.proc.send_signal(signal.SIGTERM)
        for slot in self.slots:
            if slot.worker is None:
                continue
            try:
                slot.worker.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            slot.worker.cleanup()
