"""What a chaos run found (`bench/chaos.py`): lost runs, duplicate effects at the vendor, the failed
runs with where they failed, and the report printed at the end."""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from typing import Any

from chaos_harness import REPO, Harness


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
