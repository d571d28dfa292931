"""The counters and histograms the engine, the sweep and the changes fire, in Prometheus' format.

Every process writes its own values; with `PROMETHEUS_MULTIPROC_DIR` set (the settings set it to
`<SANOMA_VAR_DIR>/metrics` unless the environment names another folder) they are files there, which
`/metrics` adds up over every process of the host: several workers and the web server's processes.
The settings set that variable before anything imports `prometheus_client`, which reads it once.

No label carries a run id, a user's input or a secret: workflows, operations, connectors, effects,
resource types and outcomes are names the company's config declares, and outcomes are a short list.
With `SANOMA_METRICS` off every function here returns at once.

What a step fires (the step, the policy's decision, the call's attempt and outcome) is added up in
this process and written to the files in one go: when the run's advance ends (`flush()`), when a
request ends, when the process exits, and within a few steps once a second has passed. Writing each
value to its file as it happens cost a step about 4 % of its instructions; added up, a segment of
ten steps writes each value once. A scrape sees a step's values once its segment has ended, or a
second later in a long one; a worker killed outright loses at most that second's counts.
"""
from __future__ import annotations

import atexit
import os
import time
from bisect import bisect_left
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.core.signals import request_finished, setting_changed
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
_on: list[bool] = []  # SANOMA_METRICS as read once (the hot path asks per step); empty: not read yet


def enabled() -> bool:
    return _on[0] if _on else _read_setting()


def _read_setting() -> bool:
    _on.append(bool(settings.SANOMA_METRICS))
    return _on[0]


def reread_setting(**changed: Any) -> None:
    """Read SANOMA_METRICS again at the next fire (tests and benches that change it call this)."""
    if changed.get("setting") in (None, "SANOMA_METRICS"):
        _on.clear()


setting_changed.connect(reread_setting)


# ---- values added up in this process, written in one go ----------------------------------------

FLUSH_SECONDS = 1.0  # the longest a value waits in this process while steps go on firing (checked every
CHECK_EVERY = 8  # this many fires: reading the clock at each would cost more than the rest of a fire)

# What the hot path fired since the last write: a counter's child (once per one added) and (a
# histogram's child, the seconds). Appending to a list is one step under the GIL, so firing takes no
# lock; a write takes what was there and removes just that (`del fired[:n]`), keeping what came meanwhile.
_counted: list[Any] = []
_observed: list[tuple[Any, float]] = []
_written = [time.monotonic()]  # when this process last wrote its values


def _due() -> None:
    if time.monotonic() - _written[0] >= FLUSH_SECONDS:
        flush()


def flush() -> None:
    """Write every value fired in this process since the last write to its file (or this process's registry)."""
    _written[0] = time.monotonic()
    counted, observed = _counted.copy(), _observed.copy()
    del _counted[:len(counted)]
    del _observed[:len(observed)]
    totals: dict[Any, float] = {}
    for child in counted:
        totals[child] = totals.get(child, 0.0) + 1.0
    for child, total in totals.items():
        child.inc(total)
    # A value lands in the first bucket whose bound is at or above it, as `Histogram.observe` places it.
    buckets: dict[Any, list[float]] = {}
    for child, seconds in observed:
        pending = buckets.get(child)
        if pending is None:
            pending = buckets[child] = [0.0] * (len(child._upper_bounds) + 1)  # each bucket's count, then the sum
        pending[bisect_left(child._upper_bounds, seconds)] += 1
        pending[-1] += seconds
    for child, pending in buckets.items():
        for bucket, count in zip(child._buckets, pending[:-1], strict=True):
            if count:
                bucket.inc(count)
        child._sum.inc(pending[-1])


def _forget_in_child() -> None:
    """A forked process starts with nothing waiting: its parent writes what it had added up."""
    _counted.clear()
    _observed.clear()


os.register_at_fork(after_in_child=_forget_in_child)
atexit.register(flush)
request_finished.connect(lambda **_: flush() if _counted or _observed else None, weak=False)


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


# The hot fires' children by what tells them apart, each in its own dict (a shorter key than `_child`'s).
_steps: dict[Any, Any] = {}
_calls: dict[Any, Any] = {}
_durations: dict[Any, Any] = {}
_decisions: dict[Any, Any] = {}


def _kept(cache: dict[Any, Any], key: Any, name: str, *labels: str) -> Any:
    found = cache[key] = _child(name, *labels)
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
    # The hot path: one dict lookup and one append, the clock read every CHECK_EVERY fires.
    if _on[0] if _on else _read_setting():
        child = _steps.get((workflow, kind)) or _kept(_steps, (workflow, kind), "sanoma_steps_total", workflow, kind)
        _counted.append(child)
        if not len(_counted) % CHECK_EVERY:
            _due()


def call_settled(op: Any, outcome: str) -> None:
    if _on[0] if _on else _read_setting():
        child = _calls.get((op.id, outcome)) or _kept(_calls, (op.id, outcome), "sanoma_calls_total", op.vendor,
                                                        op.id, str(op.effect), outcome)
        _counted.append(child)
        if not len(_counted) % CHECK_EVERY:
            _due()


def call_attempted(op: Any, seconds: float) -> None:
    if _on[0] if _on else _read_setting():
        child = _durations.get(op.id) or _kept(_durations, op.id, "sanoma_call_duration_seconds", op.vendor, op.id,
                                               str(op.effect))
        _observed.append((child, seconds))


def call_retried(op: Any) -> None:
    if enabled():
        _counted.append(_child("sanoma_call_retries_total", op.vendor, op.id))


def call_in_doubt(op: Any) -> None:
    if enabled():
        _child("sanoma_calls_in_doubt_total", op.vendor, op.id).inc()


def policy_decided(decision: str) -> None:
    if _on[0] if _on else _read_setting():
        child = _decisions.get(decision) or _kept(_decisions, decision, "sanoma_policy_decisions_total", decision)
        _counted.append(child)


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
