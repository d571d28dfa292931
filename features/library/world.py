"""One scenario running: the fakes, the people, the run, and each step's action at its turn.

Used by behave (`features.library.behave_support`) and usable from a test: `prepare()` once the
database is ready, then `execute(i)` for each step in order.
"""
from __future__ import annotations

import json
from typing import Any

from connectors.drivers import CallContext
from features.library import model as m
from features.library.checks import (
    check_call,
    check_ledger,
    check_order,
    check_outcome,
    describe_calls,
    describe_end,
)
from features.library.drive import Driver
from features.library.errors import DriveError, StepFailed
from features.library.values import check_settable, contains, get_path, put_path, short
from runs import selectors, services
from runs.approvals.selectors import approvals_of
from runs.collections.definition import DATA_VENDOR
from runs.engine import clock, faults
from runs.engine.drain import family_of
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Run, RunStatus
from runs.seed import seed_person

DEFAULT_STARTER = "scenario"


class ScenarioWorld:
    def __init__(self, config: Any, scenario: m.Scenario) -> None:
        self.config = config
        self.scenario = scenario
        self.run_id: str | None = None
        self.driver: Driver | None = None
        self.calls_before: dict[str, int] = {}
        self.step: m.ScenarioStep | None = None
        self.text: str | None = None  # the current step's doc string
        self.table: Any = None  # the current step's table
        # Seeding a sandbox run (runs.sandbox), not running a scenario: a config's own steps that
        # would write to the site's tables refuse.
        self.sandbox = False

    # -- setup -------------------------------------------------------------------------------------

    def prepare(self) -> None:
        """Fresh fakes and clock; the people the scenario names, in their groups; the starter may start runs."""
        for fake in self.config.fakes.values():
            fake.reset()
        clock.reset()
        faults.clear()
        starter = self.starter
        people = self.scenario.people
        people.setdefault(starter, ())
        for who, groups in people.items():
            seed_person(username=who, groups=groups, perms=("runs.start_workflow",) if who == starter else ())

    def finish(self) -> None:
        clock.reset()
        faults.clear()

    @property
    def starter(self) -> str:
        return self.scenario.starter or DEFAULT_STARTER

    # -- what a step function may use ----------------------------------------------------------------

    def fake(self, vendor: str) -> Any:
        try:
            return self.config.fakes[vendor]
        except KeyError:
            fakes = ", ".join(sorted(self.config.fakes))
            raise StepFailed(f"no fake for vendor {vendor}; the fakes are {fakes}") from None

    @property
    def run(self) -> Run | None:
        return Run.objects.filter(pk=self.run_id).first() if self.run_id else None

    def records(self) -> list[dict[str, Any]]:
        return selectors.ledger_of(run_id=self.run_id) if self.run_id else []

    def family_records(self) -> list[dict[str, Any]]:
        """The records of the run and of every run it started (and theirs): the scenario drives them all."""
        if not self.run_id:
            return []
        return [record for run_id in family_of(self.run_id) for record in selectors.ledger_of(run_id=run_id)]

    # -- running a step ----------------------------------------------------------------------------

    def execute(self, index: int, *, text: str | None = None, table: Any = None) -> None:
        step = self.scenario.steps[index]
        self.step, self.text, self.table = step, text, table
        handler = getattr(self, f"_do_{type(step.action).__name__}", None)
        try:
            if handler is None:
                raise StepFailed(f"no way to run a {type(step.action).__name__} step")
            handler(step.action)
            if index == len(self.scenario.steps) - 1:
                self._check_decisions_used()
        except StepFailed as failure:
            if failure.file is None:
                raise StepFailed(str(failure), file=self.scenario.location, line=step.line) from None
            raise
        except DriveError as err:
            raise StepFailed(f"{err}\n{describe_calls(self.records())}", file=self.scenario.location,
                             line=step.line) from None

    def _fail(self, detail: str) -> None:
        step = self.step
        text = step.describe() if step else ""
        raise StepFailed(f"{text}\n{detail}", file=self.scenario.location, line=step.line if step else None)

    def _need_run(self) -> Run:
        run = self.run
        if run is None:
            self._fail("there is no run yet: the step that runs the workflow (When ... runs) comes first")
        return run  # type: ignore[return-value]

    # setup steps

    def _do_Seed(self, action: m.Seed) -> None:
        fake = self._fake_of(action.op)
        context = CallContext(idempotency_key=f"seed:{self.scenario.name}:{self.step.line if self.step else 0}",
                              run_id="", op_id=action.op, by=self.starter)
        try:
            fake.call(action.op, action.input, context)
        except Exception as err:
            self._fail(f"seeding the fake by calling {action.op} with {short(action.input)} failed: {err}")

    def _do_Fault(self, action: m.Fault) -> None:
        pass  # injected when the run starts, after every seed: a fault is for the run's calls

    def _do_Person(self, action: m.Person) -> None:
        pass  # made in prepare(), before anything runs

    def _do_Starter(self, action: m.Starter) -> None:
        pass

    def _do_SetState(self, action: m.SetState) -> None:
        def change(state: dict[str, Any]) -> None:
            put_path(state, action.path, action.value)

        fake = self.fake(action.vendor)
        try:
            check_settable(fake.state, action.path)
        except LookupError as err:  # a typo would set a place nothing reads: the scenario would test nothing
            self._fail(f"{action.vendor}'s state has no {action.path!r}: {err}")
        try:
            fake.update(change)
        except (KeyError, IndexError, TypeError, ValueError) as err:
            self._fail(f"cannot set {action.vendor}'s state at {action.path!r}: {err}")

    def _do_Decision(self, action: m.Decision) -> None:
        # Spent by the driver when the run asks. A run that has already ended never will: say so here.
        run = self.run
        if self.driver is not None and run is not None and run.status in ENDED_STATUSES:
            self._check_decisions_used()

    def _check_decisions_used(self) -> None:
        """A decision no run of the scenario asked for fails it: the approval it names was never
        requested (a policy that does not apply, a title misspelt), so the scenario proves nothing."""
        left = list(self.driver.left) if self.driver is not None else list(self.scenario.decisions)
        if not left:
            return
        decision = left[0]
        asked = [a for run_id in (family_of(self.run_id) if self.run_id else [])
                 for a in approvals_of(run_id=run_id)]
        shown = "; ".join(f'"{a["title"]}" ({a["id"]}, approver {a["approver"]}, {a["status"]})' for a in asked)
        raise StepFailed(
            f"{decision.step or decision.describe()}\n"
            f"the decision {decision.describe()} was never used: "
            f'no run of this scenario asked for "{decision.approval}". '
            + (f"The approvals asked for: {shown}" if asked else "No run asked for any approval")
            + ". Check that the policy holds the call (manage.py policy explain), and the approval's title",
            file=self.scenario.location, line=decision.line or None)

    def _do_Message(self, action: m.Message) -> None:
        pass  # sent by the driver when the run waits on its topic

    def _do_Custom(self, action: m.Custom) -> None:
        try:
            action.function(self, *action.values)
        except StepFailed:
            raise
        except AssertionError as err:
            self._fail(str(err) or f"an assertion in {action.origin} failed")

    # the run

    def _do_Runs(self, action: m.Runs) -> None:
        for fault in self.scenario.actions(m.Fault):
            getattr(self._fake_of(fault.op), fault.fault)(fault.op)
        self.calls_before = {vendor: len(fake.calls) for vendor, fake in self.config.fakes.items()}
        try:
            run = services.start(workflow=action.workflow, input=action.input, started_by=self.starter,
                                 config=self.config)
        except Exception as err:
            self._fail(f"the run could not start: {err}")
        self.run_id = run.id
        waits = any(isinstance(s.action, m.ExpectWaiting) for s in self.scenario.steps)
        self.driver = Driver(self.scenario, self.config, run.id, skip_sleeps=not (self.scenario.moves_clock or waits),
                             stop_when_undecided=waits, sender=self.starter)
        self._drive()

    def _drive(self) -> None:
        assert self.driver is not None
        run = self.driver.advance()
        if run.status in ENDED_STATUSES:
            return
        if run.status == RunStatus.WAITING and (self.scenario.moves_clock or self.driver.stop_when_undecided):
            return
        what = run.waiting_for or run.status
        raise DriveError(f"the run has not ended: it is {run.status}" + (f" for {what}" if run.waiting_for else ""),
                         code=RunCode.RUN_RUNNING)

    def _do_Passes(self, action: m.Passes) -> None:
        clock.advance(action.delta)
        if self.driver is not None and self.run is not None and self.run.status not in ENDED_STATUSES:
            self._drive()

    # expectations

    def _check(self, result: Any) -> None:
        if not result.ok:
            self._fail(result.detail)

    def _do_ExpectCall(self, action: m.ExpectCall) -> None:
        self._need_run()
        self._check(check_call(action, self.family_records(), root=self.run_id))

    def _do_ExpectOutcome(self, action: m.ExpectOutcome) -> None:
        self._need_run()
        self._check(check_outcome(action, self.records()))

    def _do_ExpectWaiting(self, action: m.ExpectWaiting) -> None:
        run = self._need_run()
        if run.status in ENDED_STATUSES:
            self._fail(describe_end(self.records()))

    def _do_ExpectOutput(self, action: m.ExpectOutput) -> None:
        run = self._need_run()
        if run.status != RunStatus.FINISHED:
            self._fail(describe_end(self.records()))
        if not contains(run.result, action.output):
            self._fail(f"the output {short(run.result, 400)} does not contain {short(action.output, 400)}")

    def _do_ExpectLedger(self, action: m.ExpectLedger) -> None:
        self._need_run()
        self._check(check_ledger(action, self.records()))

    def _do_ExpectLedgerOrder(self, action: m.ExpectLedgerOrder) -> None:
        self._need_run()
        self._check(check_order(action, self.records()))

    def _do_ExpectState(self, action: m.ExpectState) -> None:
        state = self.fake(action.vendor).state
        if action.how == "contains":
            if not contains(state, action.value):
                self._fail(f"{action.vendor}'s state does not contain {short(action.value, 400)}; "
                           f"it is {short(state, 600)}")
            return
        try:
            found = get_path(state, action.path)
        except LookupError as err:
            self._fail(f"{action.vendor}'s state has nothing at {action.path!r}: {err}")
        if action.how == "count":
            if not isinstance(found, (list, dict)) or len(found) != action.value:
                size = len(found) if isinstance(found, (list, dict)) else "no items (it is not a list)"
                self._fail(f"{action.vendor}'s state at {action.path!r} has {size}, not {action.value}: "
                           f"{short(found, 400)}")
            return
        if found != action.value or type(found) is bool and type(action.value) is not bool:
            self._fail(f"{action.vendor}'s state at {action.path!r} is {json.dumps(found, default=str)}, "
                       f"not {json.dumps(action.value, default=str)}")

    def _do_ExpectCollection(self, action: m.ExpectCollection) -> None:
        try:
            records = get_path(self.fake(DATA_VENDOR).state, action.collection)
        except LookupError:
            records = {}
        if action.count is not None:
            if len(records) != action.count:
                self._fail(f"collection {action.collection} has {len(records)} record(s), not {action.count}: "
                           f"{short(sorted(records), 400)}")
            return
        assert action.key is not None
        stored = records.get(action.key)
        if action.absent:
            if stored is not None:
                self._fail(f"collection {action.collection} has a record {action.key!r}: "
                           f"{short(stored['record'], 400)} (version {stored['version']})")
            return
        if stored is None:
            self._fail(f"collection {action.collection} has no record {action.key!r}; "
                       f"its keys are {short(sorted(records), 400)}")
        if action.record is not None and not contains(stored["record"], action.record):
            self._fail(f"the record {action.key!r} of {action.collection} is {short(stored['record'], 600)}, "
                       f"which does not contain {short(action.record, 400)}")

    def _do_ExpectVendorCalls(self, action: m.ExpectVendorCalls) -> None:
        self._need_run()
        fake = self._fake_of(action.op)
        vendor = self.config.ops[action.op].vendor
        calls = [c for c in fake.calls[self.calls_before.get(vendor, 0):] if c.get("op") == action.op]
        if len(calls) != action.count:
            seen = "; ".join(f"attempt {c.get('attempt')} {c.get('outcome')}"
                             + (f" ({c['error']})" if c.get("error") else "") for c in calls) or "none"
            self._fail(f"{action.op} reached the vendor {len(calls)} time(s), not {action.count}: {seen}")

    def _fake_of(self, op_id: str) -> Any:
        return self.fake(self.config.ops[op_id].vendor)

