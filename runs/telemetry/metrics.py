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

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import transaction
from prometheus_client import Counter, Histogram

# Seconds: a vendor call, from a fast in-house API to a slow batch endpoint.
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# Seconds: a sweep pass is a few milliseconds; a slow one is a database in trouble.
SWEEP_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)
# Seconds from a deadline passing (or a decision arriving) to the run going on.
WAKE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0)

RUNS_STARTED = Counter("sanoma_runs_started_total", "Runs started", ["workflow"])
RUNS_ENDED = Counter("sanoma_runs_ended_total", "Runs ended, by outcome (finished, failed, cancelled)",
                     ["workflow", "outcome"])
CALLS = Counter("sanoma_calls_total", "Operation calls settled, by outcome (ok, failed, denied, rejected)",
                ["connector", "operation", "effect", "outcome"])
CALL_RETRIES = Counter("sanoma_call_retries_total", "Failed attempts of a call that will be tried again",
                       ["connector", "operation"])
CALLS_IN_DOUBT = Counter("sanoma_calls_in_doubt_total",
                         "Calls found in doubt (an attempt recorded with no answer) by a later advance",
                         ["connector", "operation"])
POLICY_DECISIONS = Counter("sanoma_policy_decisions_total", "The policy's decisions on calls (allow, deny, approve)",
                           ["decision"])
LEASE_TAKEOVERS = Counter("sanoma_lease_takeovers_total", "Runs taken over after their worker's lease expired")
DRIFT_FOUND = Counter("sanoma_drift_found_total", "Resources found to differ from their declared state",
                      ["resource_type"])
CHANGES_ENDED = Counter("sanoma_changes_ended_total", "Changes ended, by outcome", ["outcome"])
STEPS = Counter("sanoma_steps_total", "Steps written (replays are not counted)", ["workflow", "kind"])
CALL_DURATION = Histogram("sanoma_call_duration_seconds", "One attempt of a vendor call, as the engine waited for it",
                          ["connector", "operation", "effect"], buckets=CALL_BUCKETS)
SWEEP_DURATION = Histogram("sanoma_sweep_duration_seconds", "One pass of the deadline sweep", buckets=SWEEP_BUCKETS)
WAKE_LATENCY = Histogram("sanoma_wake_latency_seconds",
                         "From a sleep's deadline, or an approval's decision being sent, to the run going on",
                         buckets=WAKE_BUCKETS)

# The built-in workflow whose runs are changes (`changes.lifecycle.workflow.NAME`).
CHANGE_WORKFLOW = "change"

_children: dict[tuple[Any, ...], Any] = {}


def enabled() -> bool:
    return bool(settings.SANOMA_METRICS)


def _child(metric: Any, *labels: str) -> Any:
    """`metric.labels(*labels)`, kept: the hot path looks a child up in one dict."""
    key = (metric, *labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*labels)
    return found


def _after_commit(fire: Callable[[], None]) -> None:
    """Fire once the transaction around commits (at once outside one): a rolled back start counts nothing."""
    transaction.on_commit(fire)


# ---- what the engine fires -------------------------------------------------------------------------

def run_started(workflow: str) -> None:
    if enabled():
        _after_commit(_child(RUNS_STARTED, workflow).inc)


def run_ended(workflow: str, outcome: str, *, error: Any = None, after_commit: bool = False) -> None:
    """A run ended: finished, failed or cancelled. A change's run counts as a change ending too."""
    if not enabled():
        return
    fires = [_child(RUNS_ENDED, workflow, outcome).inc]
    if workflow == CHANGE_WORKFLOW:
        fires.append(_child(CHANGES_ENDED, change_outcome(outcome, error)).inc)
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
        _child(STEPS, workflow, kind).inc()


def call_settled(op: Any, outcome: str) -> None:
    if enabled():
        _child(CALLS, op.vendor, op.id, str(op.effect), outcome).inc()


def call_attempted(op: Any, seconds: float) -> None:
    if enabled():
        _child(CALL_DURATION, op.vendor, op.id, str(op.effect)).observe(seconds)


def call_retried(op: Any) -> None:
    if enabled():
        _child(CALL_RETRIES, op.vendor, op.id).inc()


def call_in_doubt(op: Any) -> None:
    if enabled():
        _child(CALLS_IN_DOUBT, op.vendor, op.id).inc()


def policy_decided(decision: str) -> None:
    if enabled():
        _child(POLICY_DECISIONS, decision).inc()


def woke(seconds: float) -> None:
    if enabled():
        WAKE_LATENCY.observe(max(seconds, 0.0))


# ---- the sweep and the changes ---------------------------------------------------------------------

def taken_over(count: int) -> None:
    if enabled() and count:
        LEASE_TAKEOVERS.inc(count)


def swept(seconds: float) -> None:
    if enabled():
        SWEEP_DURATION.observe(seconds)


def drift_found(resource_type: str, count: int = 1) -> None:
    if enabled() and count:
        _child(DRIFT_FOUND, resource_type).inc(count)


