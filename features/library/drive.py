"""Driving a run in-process as a scenario says, on the scenario's clock.

`Driver.advance()` advances every runnable run (`runs.engine.drain.drain`), decides the approvals the
run waits for with the scenario's decisions, and, unless the scenario moves the clock itself,
jumps the clock to the end of each sleep (the ledger still shows `sleep.started`), until the run
ends or waits on something the scenario does not decide.

Which decision an approval takes: the one naming its title or its id; otherwise the next one left
that names no approval the run asked for, none of the workflow's literal titles and no approval
id, so a decision meant for a later approval is never spent early. Decisions are made by a person
(`approvals.decide(by=<username>)`); a group approver's decision needs a member of the group.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from connectors.errors import SanomaError
from features.library import model as m
from features.library.errors import DriveError
from runs.approvals.selectors import approvals_of
from runs.approvals.services import decide
from runs.engine import clock
from runs.engine.drain import drain
from runs.models import ENDED_STATUSES, Run, RunStatus

_APPROVAL_ID = re.compile(r"^approval-\d+$")


def choose_decision(
    approval: dict[str, Any], left: Sequence[m.Decision], asked: set[str], literal: Sequence[str]
) -> m.Decision | None:
    """The decision `approval` takes from `left`, or None."""
    for decision in left:
        if decision.approval in (approval.get("title"), approval.get("id")):
            return decision
    for decision in left:
        name = decision.approval
        if name in asked or name in literal or _APPROVAL_ID.match(name):
            continue
        return decision
    return None


def describe_left(left: Sequence[m.Decision]) -> str:
    return "; ".join(d.describe() for d in left) if left else "none"


class Driver:
    def __init__(self, scenario: m.Scenario, config: Any, run_id: str, *, skip_sleeps: bool,
                 stop_when_undecided: bool = False, rounds: int = 500) -> None:
        self.scenario = scenario
        self.config = config
        self.run_id = run_id
        self.skip_sleeps = skip_sleeps
        self.stop_when_undecided = stop_when_undecided
        self.rounds = rounds
        self.left: list[m.Decision] = list(scenario.decisions)
        self.spent: dict[str, m.Decision] = {}  # approval id -> the decision sent to it
        self.slept = timedelta(0)

    def run(self) -> Run:
        return Run.objects.get(pk=self.run_id)

    def advance(self) -> Run:
        """Drive until the run ends or waits on something the scenario leaves alone."""
        for _ in range(self.rounds):
            drain(self.config)
            run = self.run()
            if run.status in ENDED_STATUSES:
                return run
            pending = [a for a in approvals_of(run_id=self.run_id) if a["status"] == "pending"]
            if pending:
                if not self._decide(pending):
                    return run
                continue
            if run.status == RunStatus.WAITING and run.waiting_for == "sleep" and run.wake_at is not None:
                if not self.skip_sleeps:
                    return run
                gap = run.wake_at - clock.now()
                if gap > timedelta(0):
                    clock.advance(gap)
                    self.slept += gap
                continue
            return run
        raise DriveError(f"Run {self.run_id} kept asking for more after {self.rounds} rounds", code="run_running",
                         data={"run_id": self.run_id})

    def _decide(self, pending: list[dict[str, Any]]) -> bool:
        everything = approvals_of(run_id=self.run_id)
        asked = {a["title"] for a in everything} | {a["id"] for a in everything}
        for approval in pending:
            sent = self.spent.get(approval["id"])
            if sent is not None:
                raise DriveError(
                    f'Run {self.run_id} did not read the decision {sent.describe()} for "{approval["title"]}" '
                    f'({approval["id"]}); it is still pending',
                    code="run_running", data={"run_id": self.run_id, "approval_id": approval["id"]},
                )
            decision = choose_decision(approval, self.left, asked, self.scenario.approvals)
            if decision is None:
                if self.stop_when_undecided:
                    return False
                raise DriveError(
                    f'the run waits for "{approval["title"]}" ({approval["id"]}, approver {approval["approver"]}) '
                    f"and no decision is left for it; the decisions left: {describe_left(self.left)}. "
                    f'Add a step such as `And "{approval["title"]}" is approved by <person>`',
                    code="invalid_input", data={"run_id": self.run_id, "approval_id": approval["id"]},
                )
            self.left.remove(decision)
            try:
                decide(run_id=self.run_id, decision=decision.decision, by=decision.by, note=decision.note or "",
                       approval_id=approval["id"], timeout=0)
            except SanomaError as err:
                raise DriveError(
                    f'the decision on line {decision.line} ({decision.describe()}) was refused for '
                    f'"{approval["title"]}": {err}', code=err.code or "invalid_input", data={"run_id": self.run_id},
                ) from None
            self.spent[approval["id"]] = decision
        return True
