"""The counters and histograms the engine, the sweep and the changes fire, in Prometheus' format.

Every process writes its own values; with `PROMETHEUS_MULTIPROC_DIR` set (the settings set it to
`<SANOMA_VAR_DIR>/metrics` unless the environment names another folder) they are files there, which
`/metrics` adds up over every process of the host: several workers and the web server's processes.
The settings set that variable before anything imports `prometheus_client`, which reads it once.

No label carries a run id, a user's input or a secret: workflows, operations, connectors, effects,
resource types and outcomes are names the company's config declares, and outcomes are a short list.
With `SANOMA_METRICS` off every function here returns at once.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction

# Seconds: a vendor call, from a fast in-house API to a slow batch endpoint.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Seconds: a sweep pass is a few milliseconds; a slow one is a database in trouble.
SWEEP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Seconds from a deadline passing (or a decision arriving) to the run going on.
WAKE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)


def _define() -> dict[str, Any]:
    """The metrics, made when the first one fires: a process that never counts (`manage.py check`,
    most commands) registers none (prometheus_client itself is imported by django-q2 anyway)."""
    from prometheus_client import Counter, Histogram

    return {
        "sanoma_runs_started_total": Counter("sanoma_runs_started_total", "Runs started", ["workflow"]),
        "sanoma_runs_ended_total": Counter(
            "sanoma_runs_ended_total", "Runs ended, by outcome (finished, failed, cancelled)", ["workflow", "outcome"]),
        "sanoma_calls_total": Counter(
            "sanoma_calls_total", "Operation calls settled, by outcome (ok, failed, denied, rejected)",
            ["connector", "operation", "effect", "outcome"]),
        "sanoma_call_retries_total": Counter(
            "sanoma_call_retries_total", "Failed attempts of a call that will be tried again",
            ["connector", "operation"]),
        "sanoma_calls_in_doubt_total": Counter(
            "sanoma_calls_in_doubt_total", "Calls found in doubt (an attempt recorded with no answer), settled",
            ["connector", "operation"]),
        "sanoma_policy_decisions_total": Counter(
            "sanoma_policy_decisions_total", "The policy's decisions on calls (allow, deny, approve)", ["decision"]),
        "sanoma_lease_takeovers_total": Counter(
            "sanoma_lease_takeovers_total", "Runs taken over after their worker's lease expired"),
        "sanoma_drift_found_total": Counter(
            "sanoma_drift_found_total", "Resources found drifted or gone", ["resource_type"]),
        "sanoma_changes_ended_total": Counter("sanoma_changes_ended_total", "Changes ended, by outcome", ["outcome"]),
        "sanoma_steps_total": Counter(
            "sanoma_steps_total", "Steps written (replays are not counted)", ["workflow", "kind"]),
        "sanoma_call_duration_seconds": Histogram(
            "sanoma_call_duration_seconds", "One attempt of a vendor call, as the engine waited for it",
            ["connector", "operation", "effect"], buckets=CALL_BUCKETS),
        "sanoma_sweep_duration_seconds": Histogram(
            "sanoma_sweep_duration_seconds", "One pass of the deadline sweep", buckets=SWEEP_BUCKETS),
        "sanoma_wake_latency_seconds": Histogram(
            "sanoma_wake_latency_seconds",
            "From a sleep's deadline, or an approval's decision being sent, to the run going on", buckets=WAKE_BUCKETS),
    }


# The built-in workflow whose runs are changes (`changes.lifecycle.workflow.NAME`).
CHANGE_WORKFLOW = "change"

_metrics: dict[str, Any] = {}
_children: dict[tuple[str, ...], Any] = {}


def enabled() -> bool:
    return bool(settings.SANOMA_METRICS)


def _child(name: str, *labels: str) -> Any:
    """The metric `name` with `labels` (`metric.labels(*labels)`), kept: the hot path looks it up in one dict."""
    key = (name, *labels)
    found = _children.get(key)
    if found is None:
        if not _metrics:
            _metrics.update(_define())
        metric = _metrics[name]
        found = _children[key] = metric.labels(*labels) if labels else metric
    return found


def _after_commit(fire: Callable[[], None]) -> None:
    """Fire once the transaction around commits (at once outside one): a rolled back start counts nothing."""
    transaction.on_commit(fire)


# ---- what the engine fires -------------------------------------------------------------------------

def run_started(workflow: str) -> None:
    if enabled():
        _after_commit(_child("sanoma_runs_started_total", workflow).inc)


def run_ended(workflow: str, outcome: str, *, error: Any = None, after_commit: bool = False) -> None:
    """A run ended: finished, failed or cancelled. A change's run counts as a change ending too."""
    if not enabled():
        return
    fires = [_child("sanoma_runs_ended_total", workflow, outcome).inc]
    if workflow == CHANGE_WORKFLOW:
        fires.append(_child("sanoma_changes_ended_total", change_outcome(outcome, error)).inc)
    for fire in fires:
        _after_commit(fire) if after_commit else fire()


def change_outcome(outcome: str, error: Any) -> str:
    """A change's end: deployed (its run finished), cancelled, or the code its run failed with
    (`checks_failed`, `approval_rejected`, ...: the change workflow's own codes)."""
    if outcome == "finished":
        return "deployed"
    if outcome == "failed":
        code = error.get("code") if isinstance(error, dict) else None
        return str(code) if code else "failed"
    return outcome


def step_written(workflow: str, kind: str) -> None:
    if enabled():
        _child("sanoma_steps_total", workflow, kind).inc()


def call_settled(op: Any, outcome: str) -> None:
    if enabled():
        _child("sanoma_calls_total", op.vendor, op.id, str(op.effect), outcome).inc()


def call_attempted(op: Any, seconds: float) -> None:
    if enabled():
        _child("sanoma_call_duration_seconds", op.vendor, op.id, str(op.effect)).observe(seconds)


def call_retried(op: Any) -> None:
    if enabled():
        _child("sanoma_call_retries_total", op.vendor, op.id).inc()


def call_in_doubt(op: Any) -> None:
    if enabled():
        _child("sanoma_calls_in_doubt_total", op.vendor, op.id).inc()


def policy_decided(decision: str) -> None:
    if enabled():
        _child("sanoma_policy_decisions_total", decision).inc()


def woke(seconds: float) -> None:
    if enabled():
        _child("sanoma_wake_latency_seconds").observe(max(seconds, 0.0))


# ---- the sweep and the changes ---------------------------------------------------------------------

def taken_over(count: int) -> None:
    if enabled() and count:
        _child("sanoma_lease_takeovers_total").inc(count)


def swept(seconds: float) -> None:
    if enabled():
        _child("sanoma_sweep_duration_seconds").observe(seconds)


def drift_found(resource_type: str, count: int = 1) -> None:
    if enabled() and count:
        _child("sanoma_drift_found_total", resource_type).inc(count)




def reset_folder(folder: str) -> int:
    """Empty `folder` of the values every process writes (PROMETHEUS_MULTIPROC_DIR), as a host does
    when it starts before any sanoma process: the counters start again from zero. Only when it is
    the folder this process writes to; call it only while no other process of the host writes there.
    Returns the files removed."""
    if not enabled() or not folder or os.environ.get("PROMETHEUS_MULTIPROC_DIR") != folder or not os.path.isdir(folder):
        return 0
    removed = 0
    for entry in os.scandir(folder):
        if entry.is_file() and entry.name.endswith(".db"):
            os.unlink(entry.path)
            removed += 1
    return removed
