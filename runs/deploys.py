"""The deploy: when a worker starts on new code, every parked run is proven, then moved or pinned.

`deploy(config=...)` runs at every worker's start (and as `manage.py deploy`):

1. The deploy version is registered (`AppVersion`: its workflow versions, policy version, commit
   and root; no commit when files under the root are uncommitted, see runs.versions). A deploy of
   an older version than the latest deploys nothing and leaves its row as it was, unless promoted.
2. Every unfinished run whose version is not one of the new code's workflow versions (waiting on
   an approval, a sleep, a message or a child; queued; in doubt; running on a worker that died) is
   proven against the new code (`runs.engine.proof.prove_runs`: a replay with no effects).
3. A run that **migrates** is moved in one transaction: a conditional UPDATE of its version (the
   WHERE holds the old version and the row as it was read, so a run is never moved twice, nor one
   that moved on since it was proven) and its `run.migrated` record {from, to, steps}. A queued
   one is enqueued again in that transaction, so the new worker advances it.
4. A run that stays **pinned** gets a `run.pinned` record {version, deploy, reason, step}, once
   per run and deploy version (its record id holds the deploy version). It keeps its version: a
   worker of that version finishes it.
5. When the policy version differs from the previous deploy's (the one promoted before this one;
   the first deploy has none to differ from, and deploying the latest version again changes
   nothing), every call a policy held is judged again (`runs.approvals.rejudge.rejudge_held`):
   released, reassigned or refused.

A run that an old worker is still advancing (running, its lease fresh) is not moved under it: it
is pinned with that reason, and proven again at the next deploy.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction

from runs import ledger
from runs.approvals.rejudge import Rejudged, rejudge_held
from runs.config.resolution import ResolvedConfig
from runs.engine import clock, reconnect
from runs.engine.dispatch import enqueue
from runs.engine.proof import Proof, parked_runs, prove_runs
from runs.models import AppVersion, LedgerKind, LedgerRecord, Run, RunStatus
from runs.versions import register_version

log = logging.getLogger("sanoma.deploy")

DEPLOY_ACTOR = "sanoma:deploy"
UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING, RunStatus.WAITING)
RIDE_OUT_SECONDS = 60.0  # how long a lost database connection is waited out before the deploy fails
PASSES = 2  # a run that moved on while it was proven is proven once more, then left to the next deploy
BUSY = "it was running on a worker of its version during the deploy (proven again at the next deploy)"


@dataclass
class DeployReport:
    """What a deploy did: its version, the runs it moved and pinned, the held calls judged again
    (None when the policy did not change), and `note` when it deployed nothing (and why)."""

    version: str
    migrated: list[Proof] = field(default_factory=list)
    pinned: list[Proof] = field(default_factory=list)
    rejudged: Rejudged | None = None
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        """What `manage.py deploy --json` prints."""
        rejudged = self.rejudged or Rejudged()
        return {"version": self.version, "migrated": [p.as_json() for p in self.migrated],
                "pinned": [p.as_json() for p in self.pinned], "released": len(rejudged.released),
                "reassigned": len(rejudged.reassigned), "refused": len(rejudged.refused)}

    def lines(self, *, shown: int = 3) -> list[str]:
        """The deploy in a few lines: a worker's banner, the command's output."""
        if self.note:
            return [f"deploy {self.version}: {self.note}"]
        found = [f"deploy {self.version}: migrated {len(self.migrated)} run(s){_first(self.migrated, shown)}, "
                 f"pinned {len(self.pinned)}{_first(self.pinned, shown, why=True)}"]
        if self.rejudged is not None:
            r = self.rejudged
            found.append(f"deploy {self.version}: the policy changed: released {len(r.released)} held call(s), "
                         f"reassigned {len(r.reassigned)}, refused {len(r.refused)}")
        return found


def _first(proofs: list[Proof], shown: int, *, why: bool = False) -> str:
    if not proofs:
        return ""
    named = ", ".join(f"{p.run_id}" + (f" ({p.reason})" if why and p.reason else "") for p in proofs[:shown])
    more = f" and {len(proofs) - shown} more" if len(proofs) > shown else ""
    return f": {named}{more}"


def deploy(*, config: ResolvedConfig, promote: bool = False) -> DeployReport:
    """Register `config`'s version and prove, move or pin every parked run of other versions; see
    the module. `promote` makes an older version the latest again (as `worker --promote`).

    A database connection lost on the way (a restart, a failover) is ridden out: the deploy starts
    over on a new connection, which is safe because every step of it is conditional (a moved run
    is on a live version and is not proven again; a pin's record id holds the deploy version)."""
    report = DeployReport(version=config.version)
    backoff: reconnect.Backoff | None = None
    while True:
        try:
            _deploy(config=config, promote=promote, report=report)
            break
        except Exception as err:
            if not (reconnect.connection_lost(err) and reconnect.can_reconnect()):
                raise
            log.warning("deploy %s: the database connection was lost (%s); deploying again on a new one",
                        config.version, str(err).strip().split("\n")[0])
            reconnect.discard()
            backoff = backoff or reconnect.Backoff(deadline=time.monotonic() + RIDE_OUT_SECONDS)
            delay = backoff.next_delay()
            if delay is None:
                raise
            clock.sleep(delay)
    report.pinned = list({p.run_id: p for p in report.pinned if p.run_id not in
                          {m.run_id for m in report.migrated}}.values())
    return report


def _deploy(*, config: ResolvedConfig, promote: bool, report: DeployReport) -> None:
    # The deploy promoted before this one, read before this one registers (else it would be this
    # deploy's own row, or the version before it when this one was already the latest).
    previous = AppVersion.objects.order_by("-promoted_at").values_list("version", "policy_version").first()
    latest, newest = register_version(version=config.version, promote=promote, config=config)
    if not latest:
        report.note = (f"not the latest version ({newest} is): nothing deployed, no run moved, the version's "
                       "row left as it was; run with --promote to make it the latest")
        return
    live = list(config.owned_versions)
    candidates = list(parked_runs(exclude_versions=live))
    for _ in range(PASSES):
        if not candidates:
            break
        seen = {run.pk: run.updated_at for run in candidates}
        changed: list[str] = []
        for proof in prove_runs(config=config, runs=candidates):
            outcome = _settle(proof, config=config, seen=seen.get(proof.run_id))
            if outcome == "changed":
                changed.append(proof.run_id)
            elif outcome == "migrated":
                report.migrated.append(proof)
            elif outcome == "busy":
                report.pinned.append(_busy(proof))
            else:
                report.pinned.append(proof)
        candidates = list(Run.objects.filter(pk__in=changed, status__in=UNFINISHED).exclude(app_version__in=live))
    if (previous is not None and previous[0] != config.version and previous[1] != config.policy_version
            and report.rejudged is None):
        report.rejudged = rejudge_held(config=config)


def _busy(proof: Proof) -> Proof:
    return Proof(run_id=proof.run_id, workflow=proof.workflow, from_version=proof.from_version,
                 to_version=proof.to_version, outcome="pinned", reason=BUSY, steps_replayed=proof.steps_replayed,
                 step=proof.step)


def _settle(proof: Proof, *, config: ResolvedConfig, seen: datetime | None) -> str:
    """Move or pin one proven run, in one transaction: "migrated", "pinned", "busy" (pinned: an old
    worker holds it), or "changed" (it moved on, or moved, since it was read: nothing written)."""
    now = clock.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=proof.run_id).first()
        if (run is None or run.app_version != proof.from_version or run.status not in UNFINISHED
                or (seen is not None and run.updated_at != seen)):
            return "changed"
        busy = run.status == RunStatus.RUNNING and run.lease_until is not None and run.lease_until >= now
        if proof.outcome == "migrates" and not busy:
            moved = (Run.objects.filter(pk=run.pk, app_version=proof.from_version, status__in=UNFINISHED)
                     .update(app_version=proof.to_version, updated_at=now))
            if not moved:
                return "changed"
            count = LedgerRecord.objects.filter(run_id=run.pk, kind=LedgerKind.RUN_MIGRATED).count()
            ledger.append(ledger.build(
                run, kind=LedgerKind.RUN_MIGRATED, seq=proof.steps_replayed, key=f"{proof.to_version}:{count + 1}",
                app=config.app_name, actor=DEPLOY_ACTOR,
                body={"from": proof.from_version, "to": proof.to_version, "steps": proof.steps_replayed,
                      "deploy": config.version}))
            if run.status == RunStatus.QUEUED:
                enqueue(run.pk)  # its task may have gone to a worker that left it alone
            return "migrated"
        reason = BUSY if busy else proof.reason
        ledger.append(ledger.build(
            run, kind=LedgerKind.RUN_PINNED, seq=proof.steps_replayed, key=config.version, app=config.app_name,
            actor=DEPLOY_ACTOR, body={"version": proof.from_version, "deploy": config.version, "reason": reason,
                                      "step": proof.step}))
        return "busy" if busy else "pinned"


__all__ = ["DEPLOY_ACTOR", "DeployReport", "deploy"]
