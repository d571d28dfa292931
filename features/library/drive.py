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

from connectors.errors import ErrorCode, SanomaError
from features.library import model as m
from features.library.errors import DriveError
from runs.approvals.selectors import approvals_of
from runs.approvals.services import decide
from runs.engine import clock
from runs.engine.drain import drain
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Run, RunStatus
from runs.selectors import waiting_on
from runs.services import send_message

# Waits that end at a deadline the scenario's clock can jump to: sleeps, retry waits, and message
# or child waits with a timeout.
CLOCK_WAITS = ("sleep", "retry", "message", "run")

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
                 stop_when_undecided: bool = False, rounds: int = 500, sender: str | None = None) -> None:
        self.scenario = scenario
        self.config = config
        self.run_id = run_id
        self.skip_sleeps = skip_sleeps
        self.stop_when_undecided = stop_when_undecided
        self.rounds = rounds
        self.left: list[m.Decision] = list(scenario.decisions)
        self.spent: dict[tuple[str, str], m.Decision] = {}  # (run id, approval id) -> the decision sent to it
        self.slept = timedelta(0)
        self.messages: list[m.Message] = list(scenario.actions(m.Message))
        self.sender = sender or scenario.starter or "alice"

    def run(self) -> Run:
        return Run.objects.get(pk=self.run_id)

    def advance(self) -> Run:
        """Drive until the run ends or waits on something the scenario leaves alone.

        The run's child runs (and theirs) are driven with it: their approvals are decided from
        the same decisions, and a message the scenario sends goes to whichever of them waits on
        its topic."""
        for _ in range(self.rounds):
            drain(self.config)
            run = self.run()
            if run.status in ENDED_STATUSES:
                return run
            family = self._family()
            pending = [a for member in family for a in approvals_of(run_id=member.id) if a["status"] == "pending"]
            if pending:
                if not self._decide(pending):
                    return run
                continue
            if self._send_messages(family):
                continue
            due = [m.wake_at for m in family if m.status == RunStatus.WAITING and m.wake_at is not None
                   and m.waiting_for in CLOCK_WAITS]
            if due:
                if not self.skip_sleeps:
                    return run
                gap = min(due) - clock.now()
                if gap > timedelta(0):
                    clock.advance(gap)
                    self.slept += gap
                continue
            return run
        raise DriveError(f"Run {self.run_id} kept asking for more after {self.rounds} rounds", code=RunCode.RUN_RUNNING,
                         data={"run_id": self.run_id})

    def _family(self) -> list[Run]:
        """The run and every run it started, and theirs."""
        family = [self.run()]
        parents = [self.run_id]
        while parents:
            children = list(Run.objects.filter(parent_id__in=parents).order_by("created_at", "id"))
            family += children
            parents = [child.id for child in children]
        return family

    def _send_messages(self, family: list[Run]) -> bool:
        """Send the next scenario message on a topic a run of the family waits for; True if one was sent."""
        for member in family:
            if member.status != RunStatus.WAITING or member.waiting_for != "message":
                continue
            waiting = waiting_on(member) or {}
            message = next((m for m in self.messages if m.topic == waiting.get("topic")), None)
            if message is None:
                continue
            self.messages.remove(message)
            try:
                send_message(run_id=member.id, topic=message.topic, payload=message.payload, by=self.sender)
            except SanomaError as err:
                raise DriveError(f'the message on "{message.topic}" (line {message.line}) was refused: {err}',
                                 code=err.code or ErrorCode.INVALID_INPUT, data={"run_id": member.id}) from None
            return True
        return False

    def _decide(self, pending: list[dict[str, Any]]) -> bool:
        everything = [a for member in {a["run_id"] for a in pending} | {self.run_id}
                      for a in approvals_of(run_id=member)]
        asked = {a["title"] for a in everything} | {a["id"] for a in everything}
        decided = 0
        for approval in pending:
            sent = self.spent.get((approval["run_id"], approval["id"]))
            if sent is not None:
                raise DriveError(
                    f'Run {self.run_id} did not read the decision {sent.describe()} for "{approval["title"]}" '
                    f'({approval["id"]}); it is still pending',
                    code=RunCode.RUN_RUNNING, data={"run_id": self.run_id, "approval_id": approval["id"]},
                )
            decision = choose_decision(approval, self.left, asked, self.scenario.approvals)
            if decision is None:
                if decided:  # let the runs read what was decided first: they may not need this one
                    return True
                if self.stop_when_undecided:
                    return False
                raise DriveError(
                    f'the run waits for "{approval["title"]}" ({approval["id"]}, approver {approval["approver"]}) '
                    f"and no decision is left for it; the decisions left: {describe_left(self.left)}. "
                    f'Add a step such as `And "{approval["title"]}" is approved by <person>`',
                    code=ErrorCode.INVALID_INPUT, data={"run_id": self.run_id, "approval_id": approval["id"]},
                )
            self.left.remove(decision)
            try:
                decide(run_id=approval["run_id"], decision=decision.decision, by=decision.by,
                       note=decision.note or "", approval_id=approval["id"], timeout=0)
            except SanomaError as err:
                raise DriveError(
                    f'the decision on line {decision.line} ({decision.describe()}) was refused for '
                    f'"{approval["title"]}": {err}', code=err.code or ErrorCode.INVALID_INPUT,
                    data={"run_id": self.run_id},
                ) from None
            self.spent[(approval["run_id"], approval["id"])] = decision
            decided += 1
        return True
