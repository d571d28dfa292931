"""Chaos: runs under random worker crashes, freezes and PostgreSQL restarts. Prints figures; exits
non-zero on a lost run or a duplicate effect.

Usage (needs PostgreSQL's initdb and pg_ctl, e.g. Debian's /usr/lib/postgresql/15/bin; never
touches another server: it starts its own in a temporary folder, on a free port, and removes it):

    .venv/bin/python bench/chaos.py --short            # about a minute: 60 runs
    nice -n 10 .venv/bin/python bench/chaos.py --long  # 600 runs, at least 20 PostgreSQL restarts
    .venv/bin/python bench/chaos.py --runs 200 --workers 3 --fault-every 2 --pg-every 10 --json report.json

What it does:

- a private PostgreSQL cluster (`bench/chaos_postgres.py`), the schema migrated into it;
- a vendor server in this process (`bench/chaos_vendor.py`), reached by a real HTTP driver
  (`bench/chaos_company/`): one kind honours idempotency keys, one ignores them, one ignores them
  and has a reconcile read;
- `--workers` real `manage.py worker` processes (each a django-q2 cluster and the sweep, its own
  process group) with a short lease (`--lease`);
- `--runs` runs of `chaos-mixed`, at most `--concurrency` at once, each at one vendor kind, with a
  random mix of calls, a sleep, a child run, an approval (this harness decides it as
  `chaos-approver`), a message (this harness sends it) and more calls;
- while runs are started and until `--duration` has passed: every `--fault-every` seconds on
  average, one serving worker is SIGKILLed (its whole group, then a new one started) or SIGTERMed
  (a new one started once it has stopped), while another one serves, or SIGSTOPped for longer than
  the lease, then SIGCONTed; every `--pg-every` seconds on average, the cluster restarts (`pg_ctl
  restart -m fast`, or `-m immediate`, a crash and its recovery, for `--immediate-share` of them);
- and, for `--freeze-mid-call` of the vendor's slow answers at a key-ignoring kind, the worker
  that sent the call is frozen past the lease while the call is still in flight;
- an operator (this harness as `chaos-operator`) settles each run left waiting in doubt from the
  vendor's own records, once the doubtful call's timeout has passed since it was seen in doubt;
- then no more faults: the drain, until every run has ended or `--drain-timeout` passed.

It reports: runs lost (not ended after the drain), failed (with their errors), per vendor kind the
requests, effects, re-sends (requests whose key the vendor had already received) and duplicate
effects (one key, more than one effect), the calls in doubt and how they were settled, calls
recorded with an output the vendor never gave, django-q2 task failures, `manage.py ledger verify`
and the drain time. Exit status: 0, or 1 on a lost run or a duplicate effect at any vendor kind,
2 when it could not run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
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
PRESETS = {
    "short": {"runs": 50, "workers": 3, "concurrency": 50, "fault_every": 2.0, "pg_every": 6.0, "duration": 30.0},
    "long": {"runs": 600, "workers": 3, "concurrency": 24, "fault_every": 3.0, "pg_every": 12.0, "duration": 900.0,
             "min_pg_restarts": 20},
}


def parse(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--short", action="store_true", help="about a minute: " + json.dumps(PRESETS["short"]))
    size.add_argument("--long", action="store_true", help="the long run: " + json.dumps(PRESETS["long"]))
    parser.add_argument("--runs", type=int, help="runs to start (default 50)")
    parser.add_argument("--workers", type=int, help="worker processes (default 3)")
    parser.add_argument("--concurrency", type=int, help="runs in flight at most (default 50)")
    parser.add_argument("--fault-every", type=float, help="mean seconds between worker faults (default 2; 0: none)")
    parser.add_argument("--pg-every", type=float,
                        help="mean seconds between PostgreSQL restarts, each 0.5-1.5 times it (default 6; 0: none)")
    parser.add_argument("--duration", type=float, help="faults stop after this many seconds (default 30), or "
                        "once every run has ended")
    parser.add_argument("--min-pg-restarts", type=int, help="faults go on, runs permitting, until this many "
                        "PostgreSQL restarts (default 0)")
    parser.add_argument("--immediate-share", type=float, default=0.4,
                        help="the share of PostgreSQL restarts that are immediate (a crash), 0-1 (default 0.4)")
    parser.add_argument("--freeze-mid-call", type=float, default=0.5,
                        help="the share of slow calls at a key-ignoring vendor whose worker is frozen past the "
                        "lease while the call is in flight, 0-1 (default 0.5)")
    parser.add_argument("--slow-share", type=float, default=0.05,
                        help="the share of the vendor's answers taking 4-7 s before the effect, 0-1 (default 0.05)")
    parser.add_argument("--lease", type=float, default=3.0, help="the workers' lease in seconds (default 3)")
    parser.add_argument("--drain-timeout", type=float, default=240.0,
                        help="seconds the drain may take before the runs not ended count as lost (default 240)")
    parser.add_argument("--seed", type=int, default=None, help="the random seed (default: from the clock)")
    parser.add_argument("--json", type=Path, help="also write the report as JSON to this file")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (server, logs)")
    args = parser.parse_args(argv)
    preset = PRESETS["long" if args.long else "short"]
    defaults = {"min_pg_restarts": 0, **preset}
    for name, value in defaults.items():
        if getattr(args, name, None) is None:
            setattr(args, name, value)
    problems = []
    if args.runs < 1:
        problems.append("--runs must be at least 1")
    if args.workers < 1:
        problems.append("--workers must be at least 1")
    if args.concurrency < 1:
        problems.append("--concurrency must be at least 1")
    for name in ("fault_every", "pg_every", "duration", "lease", "drain_timeout"):
        if getattr(args, name) < 0:
            problems.append(f"--{name.replace('_', '-')} must not be negative")
    if not 0 <= args.immediate_share <= 1:
        problems.append("--immediate-share must be between 0 and 1")
    if not 0 <= args.slow_share <= 1:
        problems.append("--slow-share must be between 0 and 1")
    if not 0 <= args.freeze_mid_call <= 1:
        problems.append("--freeze-mid-call must be between 0 and 1")
    if problems:
        parser.error("; ".join(problems))
    if args.seed is None:
        args.seed = int(time.time())
    return args


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


def findings(harness: Harness, timing: dict[str, Any]) -> dict[str, Any]:
    """Everything the report says, read from the database and the vendor after the workers stopped."""
    from django_q.models import Failure

    from runs.models import ENDED_STATUSES, LedgerKind, LedgerRecord, Run, RunStatus, Step, StepKind

    runs = list(Run.objects.values("id", "workflow", "status", "error", "input", "parent_id"))
    lost = [r["id"] for r in runs if r["status"] not in ENDED_STATUSES]
    failed = [r for r in runs if r["status"] == RunStatus.FAILED]
    errors = Counter(
        f"{error.get('code') or error.get('name') or '?'}: {' '.join(str(error.get('message', '')).split())[:100]}"
        for error in (r["error"] or {} for r in failed))
    vendor = harness.vendor.ledger.figures()
    given = {e["entry_id"] for e in harness.vendor.ledger.effects}
    recorded = Step.objects.filter(kind=StepKind.CALL, name__startswith="chaos.", error__isnull=True)
    phantoms = [f"{run_id}:{seq}" for run_id, seq, output in recorded.values_list("run_id", "seq", "output")
                if output is not None and "entry_id" in output and output["entry_id"] not in given]
    resolved: Counter[str] = Counter()
    for body in LedgerRecord.objects.filter(kind=LedgerKind.OP_RESOLVED).values_list("body", flat=True):
        by = "reconcile" if body.get("by") == "reconcile" else "operator"
        resolved[f"{by}: {'happened' if body.get('happened') else 'did not happen'}"] += 1
    intents = LedgerRecord.objects.filter(kind=LedgerKind.OP_INTENT).count()
    doubted_runs = set(LedgerRecord.objects.filter(kind=LedgerKind.OP_RESOLVED).values_list("run_id", flat=True))
    verify = subprocess.run([sys.executable, str(REPO / "manage.py"), "ledger", "verify"], cwd=REPO,
                            env=harness.worker_env(), capture_output=True, text=True, timeout=600)
    restarts = harness.tally.pg_restarts
    return {
        "seed": harness.args.seed,
        "runs": {"started": harness.started, "children": sum(1 for r in runs if r["parent_id"]), "total": len(runs),
                 "finished": sum(1 for r in runs if r["status"] == RunStatus.FINISHED), "failed": len(failed),
                 "cancelled": sum(1 for r in runs if r["status"] == RunStatus.CANCELLED), "lost": len(lost)},
        "lost": lost[:50],
        "failed_errors": dict(errors),
        "failed_where": [where_failed(r["id"]) for r in failed[:10]],
        "vendor": vendor,
        "duplicate_effects": {kind: figures["duplicate_effects"] for kind, figures in vendor.items()},
        "in_doubt": {"intents": intents, "runs_settled": len(doubted_runs),
                     "runs_seen_waiting": len(harness.tally.doubts_seen), "settled": dict(resolved)},
        "recorded_outputs_not_at_vendor": phantoms[:50],
        "faults": dict(harness.tally.faults),
        "pg_restarts": {"total": len(restarts), "fast": sum(1 for r in restarts if r["mode"] == "fast"),
                        "immediate": sum(1 for r in restarts if r["mode"] == "immediate"),
                        "failed": [r for r in restarts if r["exit"]],
                        "longest_seconds": max((r["seconds"] for r in restarts), default=0)},
        "worker_exits": harness.tally.worker_exits,
        "worker_starts": sum(s.starts for s in harness.slots),
        "harness_db_errors": harness.tally.harness_db_errors,
        "operator_answers": dict(harness.tally.operator_answers),
        "django_q_failures": Failure.objects.count(),
        "django_q_failure_frames": dict(Counter(
            innermost_frame(result or "") for result in Failure.objects.values_list("result", flat=True))),
        "django_q_failure_kinds": dict(Counter(
            f"{func}: {([line for line in (result or '').splitlines() if line.strip()] or ['?'])[0][:160]}".strip()
            for func, result in Failure.objects.values_list("func", "result"))),
        "ledger_verify": {"exit": verify.returncode, "output": (verify.stdout + verify.stderr).strip()[-2000:]},
        **timing,
    }


def where_failed(run_id: str) -> str:
    """Where a failed run was when it failed: its last step and its last ledger records."""
    from runs.models import LedgerRecord, Step

    step = Step.objects.filter(run_id=run_id).order_by("-seq").values("seq", "kind", "name", "error").first()
    last = (f"step {step['seq']} {step['kind']} {step['name']}{' (error)' if step['error'] else ''}"
            if step else "no step")
    kinds = list(LedgerRecord.objects.filter(run_id=run_id).order_by("-chain_index")
                 .values_list("seq", "kind")[:4])
    return f"{run_id}: {last}; last records {', '.join(f'{kind}@{seq}' for seq, kind in reversed(kinds))}"


def innermost_frame(traceback: str) -> str:
    """The project's innermost frame in a task's traceback ("runs/engine/x.py:12 in f"), or '?'."""
    frames = re.findall(r'File "[^"]*?/((?:runs|connectors|sanoma_site|bench)[^"]*)", line (\d+), in (\S+)', traceback)
    return f"{frames[-1][0]}:{frames[-1][1]} in {frames[-1][2]}" if frames else "?"


def report(found: dict[str, Any]) -> str:
    runs, doubt, pg = found["runs"], found["in_doubt"], found["pg_restarts"]
    lines = [
        f"chaos (seed {found['seed']}): {runs['started']} runs and {runs['children']} child runs; "
        f"{runs['finished']} finished, {runs['failed']} failed, {runs['cancelled']} cancelled, {runs['lost']} LOST",
        f"  faults: {', '.join(f'{n} {k}' for k, n in sorted(found['faults'].items())) or 'none'}; "
        f"PostgreSQL restarts: {pg['total']} ({pg['fast']} fast, {pg['immediate']} immediate, longest "
        f"{pg['longest_seconds']} s{', ' + str(len(pg['failed'])) + ' FAILED' if pg['failed'] else ''}); "
        f"{found['worker_starts']} worker starts",
        f"  set up in {found['setup_seconds']} s; chaos {found['chaos_seconds']} s, then drained in "
        f"{found['drain_seconds']} s"
        f"{'' if found['drained'] else ' (NOT drained: runs left are counted lost)'}",
    ]
    for kind, v in found["vendor"].items():
        lines.append(f"  vendor {kind:<10}: {v['requests']} requests, {v['effects']} effects over {v['keys']} keys, "
                     f"{v['resends']} re-sends with a key it had seen, {v['duplicate_effects']} duplicate effects "
                     f"({v['duplicate_keys']} keys)")
    lines.append(f"  in doubt: {doubt['intents']} intents recorded; {doubt['runs_settled']} runs had a call settled "
                 f"({', '.join(f'{n} {k}' for k, n in sorted(doubt['settled'].items())) or 'none'}); "
                 f"{doubt['runs_seen_waiting']} seen waiting for an operator")
    if found["failed_errors"]:
        lines.append("  failed runs' errors: " + "; ".join(f"{n} x {e}" for e, n in found["failed_errors"].items()))
    for where in found["failed_where"]:
        lines.append(f"    failed at {where}")
    if found["recorded_outputs_not_at_vendor"]:
        lines.append(f"  RECORDED OUTPUTS THE VENDOR NEVER GAVE: {found['recorded_outputs_not_at_vendor']}")
    if found["worker_exits"]:
        lines.append(f"  worker exits: {found['worker_exits']}")
    lines.append(f"  django-q2 task failures: {found['django_q_failures']}; harness queries lost to restarts: "
                 f"{found['harness_db_errors']}")
    for kind, n in sorted(found["django_q_failure_kinds"].items(), key=lambda item: -item[1])[:8]:
        lines.append(f"    {n} x {kind}")
    for frame, n in sorted(found["django_q_failure_frames"].items(), key=lambda item: -item[1])[:8]:
        lines.append(f"    {n} x raised in {frame}")
    lines.append(f"  ledger verify: exit {found['ledger_verify']['exit']}: {found['ledger_verify']['output']}")
    if found["lost"]:
        lines.append(f"  LOST: {found['lost']}")
    duplicates = {k: n for k, n in found["duplicate_effects"].items() if n}
    verdict = []
    if runs["lost"]:
        verdict.append(f"{runs['lost']} lost run(s)")
    if duplicates:
        verdict.append("duplicate effects at " + ", ".join(f"{k} ({n})" for k, n in duplicates.items()))
    lines.append("FAIL: " + "; ".join(verdict) if verdict else "OK: 0 lost, 0 duplicate effects")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    sys.path.insert(0, str(HERE))
    from chaos_postgres import PrivatePostgres, find_bin
    from chaos_vendor import VendorServer

    # `timeout` or a supervisor stopping the harness: clean up (workers, server, folder) as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    bin_dir = find_bin()
    if bin_dir is None:
        print("chaos: PostgreSQL's initdb and pg_ctl were not found (set PG_BIN to their folder)", file=sys.stderr)
        return 2
    pg = PrivatePostgres(bin_dir, keep=args.keep)
    vendor = VendorServer(seed=args.seed, slow_share=args.slow_share).start()
    harness: Harness | None = None
    began = time.monotonic()
    try:
        pg.init().start()
        db_url = pg.create_database("sanoma_chaos")
        (pg.folder / "var").mkdir()
        os.environ.update(DATABASE_URL=db_url, DJANGO_SETTINGS_MODULE="sanoma_site.settings", SANOMA_ROOT=str(ROOT),
                          SANOMA_FAKES="", SANOMA_APP_VERSION=VERSION, SANOMA_VAR_DIR=str(pg.folder / "var"),
                          SANOMA_LOG_LEVEL="WARNING")
        sys.path.insert(0, str(REPO))
        import django

        django.setup()
        from django.core.management import call_command

        from runs.config.registry import get_config
        from runs.testing import make_user

        call_command("migrate", verbosity=0)
        make_user(STARTER, perms=["runs.start_workflow"])
        make_user(APPROVER)
        make_user(OPERATOR, perms=["runs.view_any_run", "runs.operate_runs"])
        config = get_config()
        harness = Harness(args, pg, vendor, db_url)
        print(f"chaos: PostgreSQL on port {pg.port} in {pg.folder}; vendor at {vendor.url}; seed {args.seed}; "
              f"{args.runs} runs, {args.workers} workers, a fault every {args.fault_every} s, a restart every "
              f"{args.pg_every} s (means)", flush=True)
        harness.start_workers()
        setup = time.monotonic() - began
        timing = {"setup_seconds": round(setup, 1), **harness.run(config)}
        harness.stop_workers()
        found = findings(harness, timing)
    finally:
        if harness is not None:
            harness.stop_workers()
        vendor.stop()
        pg.cleanup()
    print(report(found))
    if args.json:
        args.json.write_text(json.dumps(found, indent=2, default=str))
    failed = found["runs"]["lost"] or any(found["duplicate_effects"].values())
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
