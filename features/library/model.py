"""What a scenario says, read from its feature file: plain data, no database.

A `Scenario` holds its steps in order; each step carries an action (what it does when run) and
the parts of a scenario object are views over them: `given` (seeds and faults),
`input`, `decisions`, `approvals` (the workflow's literal approval titles) and `expect`.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, Literal

# -- actions: what a step does --------------------------------------------------------------------


@dataclass(frozen=True)
class Seed:
    """Call an operation on its fake before the run, to put the vendor in a state."""

    op: str
    input: dict[str, Any]


FaultKind = Literal["fail_next", "rate_limit", "lose_reply"]


@dataclass(frozen=True)
class Fault:
    """Make the fake's next call of `op` fail, be rate limited, or lose its reply."""

    op: str
    fault: FaultKind


@dataclass(frozen=True)
class Person:
    """A person the scenario names, in these groups."""

    who: str
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class Starter:
    who: str


@dataclass(frozen=True)
class Runs:
    workflow: str
    input: dict[str, Any]


@dataclass(frozen=True)
class Decision:
    """How one approval is decided; `approval` is its title or its id (`approval-2`)."""

    approval: str
    decision: Literal["approve", "reject"]
    by: str
    note: str | None = None
    step: str = ""
    line: int = 0

    def describe(self) -> str:
        verb = "approved" if self.decision == "approve" else "rejected"
        note = f' with note "{self.note}"' if self.note is not None else ""
        return f'"{self.approval}" {verb} by {self.by}{note}'


@dataclass(frozen=True)
class Message:
    """A message the scenario sends to the run (or a run it started) once one waits on its topic."""

    topic: str
    payload: dict[str, Any]
    line: int = 0


@dataclass(frozen=True)
class Passes:
    """The scenario's clock moves forward; due sleeps wake."""

    delta: timedelta
    text: str


@dataclass(frozen=True)
class ExpectCall:
    """The run called `op` (with at least this input, at any depth), or did not."""

    op: str
    input: dict[str, Any] | None
    called: bool


@dataclass(frozen=True)
class ExpectOutcome:
    outcome: Literal["finished", "failed"]
    code: str | None = None


@dataclass(frozen=True)
class ExpectWaiting:
    pass


@dataclass(frozen=True)
class ExpectOutput:
    output: dict[str, Any]


@dataclass(frozen=True)
class ExpectLedger:
    """Records of a type: present (`count` None: at least one), absent, or exactly `count`;
    with `body`, only records whose body contains it count."""

    type: str
    count: int | None = None
    absent: bool = False
    body: dict[str, Any] | None = None


@dataclass(frozen=True)
class ExpectLedgerOrder:
    types: tuple[str, ...]


@dataclass(frozen=True)
class SetState:
    vendor: str
    path: str
    value: Any


@dataclass(frozen=True)
class ExpectState:
    vendor: str
    path: str
    how: Literal["is", "count", "contains"]
    value: Any


@dataclass(frozen=True)
class ExpectCollection:
    """A collection's records (on the `data` vendor's fake): `count` records; or the record at
    `key` there (`record`: containing these fields) or, with `absent`, not there."""

    collection: str
    key: str | None = None
    count: int | None = None
    record: dict[str, Any] | None = None
    absent: bool = False


@dataclass(frozen=True)
class ExpectVendorCalls:
    """How many times the vendor saw `op` since the run started: every attempt, failed or repeated."""

    op: str
    count: int


@dataclass(frozen=True)
class Custom:
    """A step from a step set: `function(world, *values)` runs at the step's turn."""

    function: Callable[..., Any]
    values: tuple[Any, ...]
    origin: str


Action = Any
Expectation = ExpectCall | ExpectOutcome


# -- the scenario ---------------------------------------------------------------------------------


@dataclass
class ScenarioStep:
    text: str  # as written, without its keyword
    kind: Literal["given", "when", "then"]
    keyword: str  # as written: Given, And, ...
    line: int
    action: Action
    op: str | None = None
    source: str = ""  # the step definition it matched, as listed in errors

    def describe(self) -> str:
        return f"{self.keyword} {self.text}"

    @property
    def called(self) -> bool | None:
        return self.action.called if isinstance(self.action, ExpectCall) else None


@dataclass
class Scenario:
    name: str
    file: str  # the feature file's path from the config root (or from the working directory)
    location: str  # the file as a writer opens it, for messages
    line: int
    workflow: str
    text: str  # the scenario's own lines
    steps: list[ScenarioStep]
    input: dict[str, Any]
    approvals: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    model: Any = field(default=None, repr=False, compare=False)  # the behave Scenario, when read through behave

    @property
    def where(self) -> str:
        return f"{self.location}:{self.line}"

    def actions(self, *kinds: type) -> list[Any]:
        return [s.action for s in self.steps if isinstance(s.action, kinds)]

    @property
    def given(self) -> list[Seed | Fault]:
        return self.actions(Seed, Fault)

    @property
    def decisions(self) -> list[Decision]:
        return self.actions(Decision)

    @property
    def expect(self) -> list[Expectation]:
        return self.actions(ExpectCall, ExpectOutcome)

    @property
    def people(self) -> dict[str, tuple[str, ...]]:
        """Everyone the scenario names, with the groups it puts them in."""
        found: dict[str, list[str]] = {}
        for action in self.actions(Person, Starter, Decision):
            who = action.by if isinstance(action, Decision) else action.who
            groups = found.setdefault(who, [])
            if isinstance(action, Person):
                groups.extend(g for g in action.groups if g not in groups)
        return {who: tuple(groups) for who, groups in found.items()}

    @property
    def starter(self) -> str | None:
        starters = self.actions(Starter)
        return starters[-1].who if starters else None

    @property
    def moves_clock(self) -> bool:
        """True when a step moves the clock: the scenario then decides when sleeps end."""
        return bool(self.actions(Passes))

    def plain(self) -> dict[str, Any]:
        """The scenario as JSON-friendly data."""

        def step_of(s: ScenarioStep) -> dict[str, Any]:
            out: dict[str, Any] = {"text": s.text, "kind": s.kind}
            if s.op:
                out["op"] = s.op
            if s.called is not None:
                out["called"] = s.called
            return out

        given: list[dict[str, Any]] = []
        for action in self.given:
            if isinstance(action, Seed):
                given.append({"op": action.op, "input": action.input})
            else:
                given.append({"op": action.op, "fault": action.fault})
        expect: list[dict[str, Any]] = []
        for expectation in self.expect:
            if isinstance(expectation, ExpectCall):
                item: dict[str, Any] = {"op": expectation.op, "called": expectation.called}
                if expectation.input is not None:
                    item["input"] = expectation.input
                expect.append(item)
            else:
                expect.append({"outcome": expectation.outcome,
                               **({"code": expectation.code} if expectation.code else {})})
        return {
            "name": self.name,
            "file": self.file,
            "workflow": self.workflow,
            "text": self.text,
            "steps": [step_of(s) for s in self.steps],
            "given": given,
            "input": self.input,
            "decisions": [
                {"approval": d.approval, "decision": d.decision, "by": d.by,
                 **({"note": d.note} if d.note is not None else {})}
                for d in self.decisions
            ],
            "approvals": list(self.approvals),
            "expect": expect,
        }

