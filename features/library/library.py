"""The steps a feature file may use: the generic ones, each
operation's `given`/`expect` phrases, and the step sets of the connectors and the config.

`StepLibrary.of(config)` builds them once per resolved config; `match(kind, text)` finds the one
rule a step's text matches (none or two are errors that list the steps or name both matches).
"""
from __future__ import annotations

import json
import re
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from features.library import model as m
from features.library.errors import ScenarioConfigError, ScenarioProblem
from features.library.expressions import (
    Argument,
    ExpressionError,
    ParameterTypeRegistry,
    StepExpression,
    compile_expression,
    parameter_type,
    phrase_expression,
    regex_expression,
    step_types,
    unquote,
)
from features.library.inputs import Maker
from features.library.stepsets import StepSet, as_step_set
from features.library.values import TAKES_OBJECT, Fields, doc_object, plain_value, step_object, table_rows, validate
from runs.approvals.approver import Approver
from runs.collections.definition import DATA_VENDOR
from runs.collections.fake import data_fake

OBJECT = TAKES_OBJECT
JSON_VALUE = "a JSON doc string"
TYPE_LIST = "a one-column table (or a doc string) of record types"

_UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800}
DURATION_REGEX = r"(?:an?|\d+(?:\.\d+)?) (?:second|minute|hour|day|week)s?"
VENDOR_REGEX = r"[a-z][a-z0-9_-]*"


def parse_duration(text: str) -> timedelta:
    amount, unit = text.split(" ", 1)
    number = 1.0 if amount in ("a", "an") else float(amount)
    return timedelta(seconds=number * _UNITS[unit.rstrip("s")])


@dataclass
class StepText:
    """One step as written: its text, doc string, table and line (a behave Step fits)."""

    name: str
    step_type: str
    keyword: str = ""
    line: int = 0
    text: str | None = None
    table: Any = None


@dataclass
class Draft:
    """A scenario while its steps are read."""

    name: str
    library: StepLibrary
    maker: Maker
    workflow: str | None = None
    input: dict[str, Any] | None = None
    runs_line: int = 0


@dataclass
class Rule:
    kind: str  # given | when | then | any
    source: str  # the expression, as listed in errors
    expression: StepExpression
    apply: Callable[[Draft, list[Any], StepText], Any]  # -> action
    takes: str | None = None  # what must follow the step (doc string / table), if anything
    group: str = ""  # "" for generic steps, else "<op id>" (phrases) or "step set <name>"
    optional_argument: bool = False  # the step may take a doc string or table, or not

    def listing(self) -> str:
        keyword = "Given/When/Then" if self.kind == "any" else self.kind.capitalize()
        takes = f" (and {self.takes})" if self.takes else ""
        return f"{keyword} {self.source}{takes}"


_LIBRARIES: weakref.WeakKeyDictionary[Any, StepLibrary] = weakref.WeakKeyDictionary()


def scenario_fakes(config: Any) -> dict[str, Any]:
    """The vendors a scenario runs on fakes of: the config's fakes, and the collections (`data`),
    which scenarios always run on a fake of their own even where the site keeps them on the
    database. A site's config (the desk's catalog, `GET /api/scenarios`) reads its scenarios as
    behave runs them: a step naming `data` is not "no fake for vendor data" there."""
    fakes = dict(config.fakes)
    connector = next((c for c in getattr(config, "connectors", ()) if getattr(c, "vendor", None) == DATA_VENDOR),
                     None)
    if DATA_VENDOR not in fakes and connector is not None:
        fakes[DATA_VENDOR] = data_fake(connector, list((getattr(config, "collections", None) or {}).values()))
    return fakes


class StepLibrary:
    """Every step the config's scenarios may use."""

    def __init__(self, config: Any) -> None:
        self.config = config
        self.ops = dict(config.ops)
        self.workflows = dict(config.workflows)
        self.fakes = scenario_fakes(config)
        self._fields: dict[tuple[str, str], Fields] = {}
        self.types: ParameterTypeRegistry = step_types(
            parameter_type("op", r"\S+", self._known_op),
            parameter_type("workflow", r"\S+", self._known_workflow),
            parameter_type("who", r"\S+", self._person),
            parameter_type("vendor", VENDOR_REGEX, self._known_vendor),
            parameter_type("value", r".+", plain_value),
            parameter_type("duration", DURATION_REGEX, parse_duration),
        )
        self.rules: list[Rule] = []
        problems: list[str] = []
        self._generic()
        self._phrases(problems)
        self._step_sets(problems)
        if problems:
            raise ScenarioConfigError(problems)

    @classmethod
    def of(cls, config: Any) -> StepLibrary:
        found = _LIBRARIES.get(config)
        if found is None:
            found = _LIBRARIES[config] = cls(config)
        return found

    # -- parameter values --------------------------------------------------------------------------

    def _known_op(self, name: str) -> str:
        if name not in self.ops:
            raise ScenarioProblem(f'no operation "{name}"; the config has {", ".join(sorted(self.ops)) or "none"}')
        return name

    def _known_workflow(self, name: str) -> str:
        if name not in self.workflows:
            raise ScenarioProblem(f'no workflow "{name}"; the config has {", ".join(sorted(self.workflows)) or "none"}')
        return name

    def _known_vendor(self, name: str) -> str:
        if name not in self.fakes:
            fakes = ", ".join(sorted(self.fakes)) or "none"
            raise ScenarioProblem(f'no fake for vendor "{name}"; the fakes are {fakes}')
        return name

    @staticmethod
    def _person(who: str) -> str:
        who = unquote(who)
        group = Approver.parse(who).group
        if group is not None:
            raise ScenarioProblem(
                f"{who} is a group; a scenario acts as a person: name a member "
                f'(and say `Given <person> is in group "{group}"`)'
            )
        return who

    def fields(self, kind: str, name: str) -> Fields:
        key = (kind, name)
        if key not in self._fields:
            if kind == "op":
                self._fields[key] = Fields(self.ops[name].input, f"the input of {name}")
            else:
                self._fields[key] = Fields(self.workflows[name].input, f"the input of workflow {name}")
        return self._fields[key]

    def fake_of(self, op_id: str) -> Any:
        vendor = self.ops[op_id].vendor
        fake = self.fakes.get(vendor)
        if fake is None:
            raise ScenarioProblem(f"{op_id} has no fake: its connector {vendor} declares none")
        return fake

    # -- building rules ----------------------------------------------------------------------------

    def add(self, kind: str, source: str, apply: Callable[..., Any], *, takes: str | None = None, group: str = "",
            optional_argument: bool = False, expression: StepExpression | None = None) -> None:
        """A rule for steps of `kind` (given, when, then, any) whose text `source` matches; `source` is
        read over the library's parameter types unless its `expression` is given."""
        if expression is None:
            expression = compile_expression(source, self.types)
        self.rules.append(Rule(kind=kind, source=source, expression=expression, apply=apply, takes=takes, group=group,
                               optional_argument=optional_argument))

    def _generic(self) -> None:
        add = self.add
        # Given: the vendors' state, faults, people.
        add("given", "{op} was called with", self._seed, takes=OBJECT)
        for words, fault in (("fails once", "fail_next"), ("is rate limited once", "rate_limit"),
                             ("loses its reply once", "lose_reply")):
            add("given", "{op} " + words, self._fault(fault))
        add("given", "{who} is in group {string}", lambda d, v, s: m.Person(v[0], (v[1],)))
        add("given", "{who} is in groups {string}",
            lambda d, v, s: m.Person(v[0], tuple(g for g in re.split(r"\s*(?:,|\band\b)\s*", v[1]) if g)))
        add("given", "the run is started by {who}", lambda d, v, s: m.Starter(v[0]))
        add("given", "(the ){vendor}'s state at {string} is", self._set_state_doc, takes=JSON_VALUE)
        add("given", "(the ){vendor}'s state at {string} is {value}", lambda d, v, s: m.SetState(v[0], v[1], v[2]))
        # When: the run, exactly once.
        add("when", "{workflow} runs with", self._runs_with, takes=OBJECT)
        add("when", "{workflow} runs", lambda d, v, s: self._runs(d, v[0], {}, s))
        # Any keyword: decisions and time.
        for decision, verb in (("approve", "approved"), ("reject", "rejected")):
            add("any", f"{{string}} is {verb} by {{who}}", self._decide(decision))
            add("any", f"{{string}} is {verb} by {{who}} with note {{string}}", self._decide(decision))
        add("any", "{duration} pass/passes", lambda d, v, s: m.Passes(v[0], s.name))
        add("any", "the run receives a message on {string} with", self._message, takes=OBJECT)
        add("any", "the run receives a message on {string}", lambda d, v, s: m.Message(v[0], {}, s.line))
        # Then: calls, outcome, ledger, the vendors' state.
        add("then", "{op} was called with", self._expect_call_with, takes=OBJECT)
        add("then", "{op} was called", lambda d, v, s: m.ExpectCall(v[0], None, True))
        add("then", "{op} was not called", lambda d, v, s: m.ExpectCall(v[0], None, False))
        add("then", "the run succeeds", lambda d, v, s: m.ExpectOutcome("finished"))
        add("then", "the run fails", lambda d, v, s: m.ExpectOutcome("failed"))
        add("then", "the run fails with {string}", lambda d, v, s: m.ExpectOutcome("failed", v[0]))
        add("then", "the run is waiting", lambda d, v, s: m.ExpectWaiting())
        add("then", "the run's output contains", self._expect_output, takes=OBJECT)
        add("then", "the ledger shows {string}", lambda d, v, s: m.ExpectLedger(v[0]))
        add("then", "the ledger shows {string} {int} time(s)", lambda d, v, s: m.ExpectLedger(v[0], count=v[1]))
        add("then", "the ledger does not show {string}", lambda d, v, s: m.ExpectLedger(v[0], absent=True))
        add("then", "the ledger shows {string} with", self._expect_record_with, takes=OBJECT)
        add("then", "the ledger shows, in order:", self._expect_order, takes=TYPE_LIST)
        add("then", "(the ){vendor}'s state at {string} is", self._expect_state_doc, takes=JSON_VALUE)
        add("then", "(the ){vendor}'s state at {string} is {value}",
            lambda d, v, s: m.ExpectState(v[0], v[1], "is", v[2]))
        add("then", "(the ){vendor}'s state at {string} has {int} item(s)",
            lambda d, v, s: m.ExpectState(v[0], v[1], "count", v[2]))
        add("then", "(the ){vendor}'s state contains", self._expect_state_contains, takes=JSON_VALUE)
        add("then", "{op} reached the vendor {int} time(s)", lambda d, v, s: m.ExpectVendorCalls(v[0], v[1]))
        # The company's collections (the `data` vendor's fake), by name and key.
        add("given", "the collection {string} holds", self._collection_holds, takes=OBJECT)
        add("then", "the collection {string} has {int} record(s)",
            lambda d, v, s: m.ExpectCollection(self._collection(v[0]).name, count=v[1]))
        add("then", "the collection {string} has a record {string}",
            lambda d, v, s: m.ExpectCollection(self._collection(v[0]).name, key=v[1]))
        add("then", "the collection {string} has a record {string} with", self._expect_record_in, takes=OBJECT)
        add("then", "the collection {string} has no record {string}",
            lambda d, v, s: m.ExpectCollection(self._collection(v[0]).name, key=v[1], absent=True))

    def _phrases(self, problems: list[str]) -> None:
        for op_id in sorted(self.ops):
            op = self.ops[op_id]
            phrases = getattr(op, "phrases", None)
            for kind, template in (("given", getattr(phrases, "given", None)),
                                   ("then", getattr(phrases, "expect", None))):
                if not template:
                    continue
                word = "given" if kind == "given" else "expect"
                try:
                    expression, names = phrase_expression(template)
                except ExpressionError as err:
                    problems.append(f"{op_id}: its {word} phrase cannot be read: {err}")
                    continue
                fields = Fields(op.input, f"the input of {op_id}")
                missing = [n for n in dict.fromkeys(names) if n not in fields.properties]
                for name in missing:
                    problems.append(
                        f'{op_id}: its {word} phrase "{template}" names {{{name}}}, which is not a field of its '
                        f"input (its fields are {fields.listing()})"
                    )
                if not missing:
                    self.add(kind, template, self._phrase(op_id, kind, names), group=op_id, expression=expression)

    def _step_sets(self, problems: list[str]) -> None:
        sets: list[StepSet] = []
        connector_sets = 0
        for connector in getattr(self.config, "connectors", ()):
            if getattr(connector, "steps", None) is None:
                continue
            connector_sets += 1
            entries = connector.steps if isinstance(connector.steps, (list, tuple)) and all(
                isinstance(e, StepSet) for e in connector.steps) else [connector.steps]
            for entry in entries:
                try:
                    sets.append(as_step_set(entry, connector.vendor))
                except (TypeError, ValueError) as err:
                    problems.append(f"connector {connector.vendor}: {err}")
        own = list(getattr(self.config, "steps", ()))[connector_sets:]
        loose = [e for e in own if _is_step_tuple(e)]
        if loose:
            own = [e for e in own if not _is_step_tuple(e)] + [loose]
        for entry in own:
            try:
                sets.append(as_step_set(entry, "config"))
            except (TypeError, ValueError) as err:
                problems.append(f"the config's steps: {err}")
        for step_set in sets:
            for definition in step_set:
                origin = f"step set {step_set.name}"
                pattern = definition.pattern
                try:
                    if isinstance(pattern, re.Pattern):
                        self.add(definition.kind, pattern.pattern, self._custom(definition.function, origin),
                                 takes=definition.takes, group=origin, optional_argument=True,
                                 expression=regex_expression(pattern))
                    else:
                        self.add(definition.kind, pattern, self._custom(definition.function, origin),
                                 takes=definition.takes, group=origin, optional_argument=True)
                except ExpressionError as err:
                    problems.append(f"{origin}: {err}")

    # -- what the generic steps do -----------------------------------------------------------------

    def _filled(self, draft: Draft, kind: str, name: str, given: dict[str, Any], what: str) -> dict[str, Any]:
        """`given` over values made up from the schema; parsed by the model so a bad value is an error here."""
        fields = self.fields(kind, name)
        made = draft.maker.for_model(fields.model)
        value = {**made, **given}
        validate(fields.model, value, what)
        return value

    def _seed(self, draft: Draft, values: list[Any], step: StepText) -> m.Seed:
        op = values[0]
        self.fake_of(op)
        given = step_object(step.text, step.table, f'"{step.name}"', self.fields("op", op))
        return m.Seed(op, self._filled(draft, "op", op, given, f"the input of {op}"))

    def _collection(self, name: str) -> Any:
        collections = getattr(self.config, "collections", {}) or {}
        if name not in collections:
            raise ScenarioProblem(f'no collection "{name}"; the config has {", ".join(sorted(collections)) or "none"}')
        return collections[name]

    def _record_fields(self, name: str) -> Fields:
        key = ("record", name)
        if key not in self._fields:
            self._fields[key] = Fields(self._collection(name).record, f"a record of collection {name}")
        return self._fields[key]

    def _collection_holds(self, draft: Draft, values: list[Any], step: StepText) -> m.Seed:
        collection = self._collection(values[0])
        op = collection.put.id
        self.fake_of(op)
        record = step_object(step.text, step.table, f'"{step.name}"', self._record_fields(collection.name))
        value = {"record": record}
        validate(collection.put.input, value, f"a record of collection {collection.name}")
        return m.Seed(op, value)

    def _expect_record_in(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectCollection:
        collection = self._collection(values[0])
        fields = self._record_fields(collection.name)
        given = step_object(step.text, step.table, f'"{step.name}"', fields)
        return m.ExpectCollection(collection.name, key=values[1],
                                  record={k: fields.accepted(k, v) for k, v in given.items()})

    def _fault(self, fault: str) -> Callable[..., m.Fault]:
        def apply(draft: Draft, values: list[Any], step: StepText) -> m.Fault:
            self.fake_of(values[0])
            return m.Fault(values[0], fault)  # type: ignore[arg-type]

        return apply

    def _runs_with(self, draft: Draft, values: list[Any], step: StepText) -> m.Runs:
        name = values[0]
        given = step_object(step.text, step.table, f'"{step.name}"', self.fields("workflow", name))
        return self._runs(draft, name, given, step)

    def _runs(self, draft: Draft, name: str, given: dict[str, Any], step: StepText) -> m.Runs:
        if draft.workflow is not None:
            raise ScenarioProblem(
                f"a second When that runs a workflow (the first is on line {draft.runs_line}): "
                "a scenario runs its workflow once"
            )
        value = self._filled(draft, "workflow", name, given, f"workflow {name}")
        draft.workflow, draft.input, draft.runs_line = name, value, step.line
        return m.Runs(name, value)

    def _decide(self, decision: str) -> Callable[..., m.Decision]:
        def apply(draft: Draft, values: list[Any], step: StepText) -> m.Decision:
            approval, by = values[0], values[1]
            note = values[2] if len(values) > 2 else None
            if not approval.strip():
                raise ScenarioProblem("name the approval by its title or its id (approval-1)")
            return m.Decision(approval, decision, by, note, step=step.name, line=step.line)  # type: ignore[arg-type]

        return apply

    def _message(self, draft: Draft, values: list[Any], step: StepText) -> m.Message:
        if not values[0].strip():
            raise ScenarioProblem("name the message's topic")
        return m.Message(values[0], step_object(step.text, step.table, f'"{step.name}"', None), step.line)

    def _set_state_doc(self, draft: Draft, values: list[Any], step: StepText) -> m.SetState:
        return m.SetState(values[0], values[1], _doc_value(step))

    def _expect_call_with(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectCall:
        op = values[0]
        fields = self.fields("op", op)
        given = step_object(step.text, step.table, f'"{step.name}"', fields)
        return m.ExpectCall(op, {k: fields.accepted(k, v) for k, v in given.items()}, True)

    def _expect_output(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectOutput:
        return m.ExpectOutput(step_object(step.text, step.table, f'"{step.name}"', None))

    def _expect_record_with(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectLedger:
        return m.ExpectLedger(values[0], body=step_object(step.text, step.table, f'"{step.name}"', None))

    def _expect_order(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectLedgerOrder:
        if step.table is not None:
            types = []
            for cells, line in table_rows(step.table):
                if len(cells) != 1:
                    raise ScenarioProblem(f"the table after \"{step.name}\" needs one column (a record type per row)",
                                          line=line or None)
                types.append(cells[0].strip())
        elif step.text is not None:
            types = [line.strip() for line in step.text.splitlines() if line.strip()]
        else:
            raise ScenarioProblem(f'"{step.name}" needs {TYPE_LIST} after it')
        return m.ExpectLedgerOrder(tuple(types))

    def _expect_state_doc(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectState:
        return m.ExpectState(values[0], values[1], "is", _doc_value(step))

    def _expect_state_contains(self, draft: Draft, values: list[Any], step: StepText) -> m.ExpectState:
        return m.ExpectState(values[0], "", "contains", doc_object(step.text, f'"{step.name}"'))

    def _phrase(self, op_id: str, kind: str, names: Sequence[str]) -> Callable[..., Any]:
        def apply(draft: Draft, values: list[Any], step: StepText) -> Any:
            fields = self.fields("op", op_id)
            given: dict[str, Any] = {}
            for name, raw in zip(names, values, strict=True):
                given[name] = fields.coerce(name, raw)
            if kind == "given":
                self.fake_of(op_id)
                return m.Seed(op_id, self._filled(draft, "op", op_id, given, f"the input of {op_id}"))
            return m.ExpectCall(op_id, {k: fields.accepted(k, v) for k, v in given.items()}, True)

        return apply

    @staticmethod
    def _custom(function: Callable[..., Any], origin: str) -> Callable[..., m.Custom]:
        def apply(draft: Draft, values: list[Any], step: StepText) -> m.Custom:
            return m.Custom(function, tuple(values), origin)

        return apply

    # -- matching ----------------------------------------------------------------------------------

    def match(self, step: StepText) -> tuple[Rule, list[Argument]]:
        """The one rule the step's text matches, and its arguments (`expressions.values` turns
        them into the values the rule applies)."""
        kind = step.step_type
        found = []
        for rule in self.rules:
            if rule.kind != kind and rule.kind != "any":
                continue
            arguments = rule.expression.match(step.name)
            if arguments is not None:
                found.append((rule, arguments))
        if not found:
            written = f"{step.keyword or kind.capitalize()} {step.name}"
            raise ScenarioProblem(f'no step matches "{written}"\n{self.known_steps()}', line=step.line)
        if len(found) > 1:
            both = " and ".join(f'"{r.listing()}"' + (f" ({r.group})" if r.group else "") for r, _ in found)
            raise ScenarioProblem(f'"{step.name}" is ambiguous: it matches {both}', line=step.line)
        return found[0]

    def known_steps(self) -> str:
        lines = ["The steps there are:"]
        lines += [f"  {r.listing()}" for r in self.rules if not r.group]
        groups: dict[str, list[Rule]] = {}
        for rule in self.rules:
            if rule.group:
                groups.setdefault(rule.group, []).append(rule)
        phrase_groups = [g for g in groups if not g.startswith("step set ")]
        if phrase_groups:
            lines.append("  Operation phrases:")
            for group in phrase_groups:
                lines.append(f"    {group}:")
                lines += [f"      {r.listing()}" for r in groups[group]]
        for group in (g for g in groups if g.startswith("step set ")):
            lines.append(f"  From {group}:")
            lines += [f"    {r.listing()}" for r in groups[group]]
        return "\n".join(lines)


def _doc_value(step: StepText) -> Any:
    if step.text is None:
        raise ScenarioProblem(f'"{step.name}" needs {JSON_VALUE} after it')
    try:
        return json.loads(step.text)
    except ValueError as err:
        raise ScenarioProblem(f'the doc string after "{step.name}" is not JSON: {err}') from None


def _is_step_tuple(entry: Any) -> bool:
    return isinstance(entry, tuple) and len(entry) == 3 and isinstance(entry[0], str) and callable(entry[2])
