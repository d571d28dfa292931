"""The demo's company as `manage.py demo` prepares it: its people, seeded from the company's own data
files with a password each, the secrets they name, and its example runs, one of them left in doubt
for an operator.

The people are the `sanoma.person` and `sanoma.group` declarations under the config root
(`resources/staff.py` in the example company), made real at once by `runs.seed.seed_from_datafiles`,
as an apply would make them, plus what an apply never gives: a password (the username: a local
demo, never a deployment) and the superuser flag for `admin`. A drift after seeding finds the
people and groups clean.

The run in doubt is staged as it happens for real: a `ship` run books the carrier, the carrier
answers, and the worker "dies" (the engine's fault point right after a vendor answered) before the
answer is recorded; its lease is then taken over as the sweep takes over a dead worker's run. The
carrier's lookup (the booking's `reconcile` read) is made to fail once, so the worker that picks
the run up cannot settle the doubt by asking: the run waits `in_doubt` until an operator says
what happened.
"""
from __future__ import annotations

from datetime import timedelta
from typing import Any

from connectors.errors import DriverError, ErrorCode, SanomaError
from connectors.resources import Secret
from runs import services
from runs.config.datafiles import DataFiles
from runs.config.resolution import ResolvedConfig
from runs.engine import faults, transitions
from runs.engine.advance import advance
from runs.engine.faults import FaultPoint
from runs.models import Run

# The examples `manage.py demo` starts: (workflow, input, starter).
EXAMPLE_RUNS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("refund", {"order_id": "1001", "amount_cents": 1500, "reason": "damaged in transit"}, "alice"),
    ("follow-up", {"order_id": "1002", "after_seconds": 20}, "alice"),
    ("reprice", {"prices": [{"sku": "mug", "price_cents": 1600}, {"sku": "tee", "price_cents": 2700}]}, "alice"),
    ("support.onboard-agent", {"username": "robin"}, "alice"),
)
IN_DOUBT_RUN: tuple[str, dict[str, Any], str] = ("ship", {"order_id": "1001", "carrier": "posti"}, "alice")
BOOK = "shop.shipment.book"
LOOKUP = "shop.shipment.find"


def demo_secrets(read: DataFiles) -> dict[str, str]:
    """A made-up value for each secret the data files name (`secret("SHOP_WEBHOOK_SECRET")`), so an
    apply in the demo can make what refers to one: {name: value}. The demo sets each only where
    the environment has none; a real deployment sets its own (`manage.py credentials set NAME`)."""
    names: set[str] = set()

    def collect(value: Any) -> None:
        if isinstance(value, Secret):
            names.add(value.name)
        elif isinstance(value, dict):
            for item in value.values():
                collect(item)
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    for declared in read.resources:
        collect(dict(declared.values))
    return {name: f"demo-only-{name.lower().replace('_', '-')}" for name in sorted(names)}


def start_example_runs() -> tuple[list[Run], list[str]]:
    """The example runs, started; and what could not be started, with why."""
    started, problems = [], []
    for workflow, data, who in EXAMPLE_RUNS:
        try:
            started.append(services.start(workflow=workflow, input=data, started_by=who))
        except SanomaError as err:
            problems.append(f"could not start {workflow}: {err}")
    return started, problems


class _WorkerDied(BaseException):
    """The staged crash: raised where the engine has just had the vendor's answer and recorded
    nothing, as a BaseException so the advance dies as a killed worker does."""


def stage_in_doubt(config: ResolvedConfig, *, lookup_down: bool = True) -> Run:
    """Start the `ship` example and leave it as a worker that died mid-call leaves it: the carrier
    booked the pickup, nothing recorded that it did, the run queued again for the next worker.
    With `lookup_down`, the carrier's lookup fails the next time it is asked, so that worker cannot
    settle the doubt itself and the run waits `in_doubt` for an operator (else it asks and goes on).
    Run it before any worker is started: this process advances the run itself."""
    workflow, data, who = IN_DOUBT_RUN
    if BOOK not in config.ops or workflow not in config.workflows:
        raise SanomaError(f"The company has no {workflow} workflow or no {BOOK}: nothing can be left in doubt",
                          code=ErrorCode.CONFIG_INVALID)
    fake = config.fakes.get(BOOK.split(".")[0])
    if fake is None:
        raise SanomaError("The demo leaves a run in doubt only on the shop's fake (SANOMA_FAKES=instance)",
                          code=ErrorCode.CONFIG_INVALID)
    run = services.start(workflow=workflow, input=data, started_by=who, config=config)
    worker = f"demo-staging-{run.id}"
    if lookup_down:
        fake.fail_next(LOOKUP, DriverError("the carrier's booking lookup is down", retryable=False, status=503))
    faults.arm(FaultPoint.AFTER_DRIVER_CALL, _WorkerDied())
    try:
        advance(run.id, worker_id=worker, config=config)
    except _WorkerDied:
        pass
    finally:
        faults.clear()
    run.refresh_from_db()
    if run.lease_until is not None:  # the lease it held runs out: the run is queued for the next worker
        transitions.take_over(run_id=run.id, owner=worker, now=run.lease_until + timedelta(milliseconds=1))
        run.refresh_from_db()
    return run


__all__ = ["EXAMPLE_RUNS", "IN_DOUBT_RUN", "demo_secrets", "stage_in_doubt", "start_example_runs"]
