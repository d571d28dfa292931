"""Cedar policies read from `policies/*.cedar`.

The request for a call:
- principal `User::"<actor>"`, member of `Group::"<g>"` for each of the actor's groups;
- action `Action::"<op id>"`, member of `Action::"<effect>"` (so `action in Action::"money"` works);
- resource `Target::"<target>"` (member of `Operation::"<op id>"`) when the op declares a target,
  else `Operation::"<op id>"`; `resource in Operation::"<op id>"` matches both;
- context `{effect, input, workflow, run_id}` (+ `target` when there is one); `input` is the parsed
  input as a Cedar record (nulls and values Cedar cannot hold are left out, floats are decimals).

Cedar's rule stands: a permit grants, a forbid overrides, nothing permitted is denied. On top, a
`forbid` annotated `@approve("alice")` / `@approve("group:security")` holds the call for that
approver instead of denying it (`@title("...")`, `@covers("op.a, op.b")` shape the approval); it is
lifted once that approver approved an approval covering the op, and the call is evaluated again
without it, so a broad permit can never skip an approval. The run's starter may not decide the
approval unless the forbid also says `@self_approval("allowed")`.

Every policy gets a stable id: its `@id("...")`, else `<file>:<line>` (the line where the policy,
including its annotations, starts). The set is parsed once at load with those ids; the sets with
lifted forbids left out are parsed once each and cached.
"""
from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cedarpy

from connectors.errors import ConfigError, ErrorCode, Problem, ProblemKind, SanomaError
from connectors.operations import EFFECTS
from runs.approvals.approver import GROUP_PREFIX

from .decisions import (
    ALLOW,
    APPROVE,
    DENY,
    Decision,
    PolicyCall,
    approval_for,
    normalise_approver,
)

# Cedar's JSON value format reads these keys as escapes (an entity reference, an extension value),
# so a record key of the input spelt like this could forge an entity: such keys are left out.
_ESCAPE_KEYS = frozenset({"__entity", "__extn", "__expr"})
_I64 = (-(2**63), 2**63 - 1)
_DECIMAL_LIMIT = 922337203685477  # Cedar decimals: i64 with four fractional digits
_ERROR_POLICY = re.compile(r"policy `([^`]*)`: (.*)", re.S)
_APPROVE_KEYS = ("approve", "title", "covers", "self_approval")
SELF_APPROVAL_ALLOWED = "allowed"
_CACHE_LIMIT = 256


@dataclass(frozen=True)
class CedarRule:
    """One policy of the set, with where it came from."""

    id: str
    file: str  # the file's name inside the policies directory, e.g. "refunds.cedar"
    line: int  # 1-based line where the policy (with its annotations) starts
    effect: str  # "permit" | "forbid"
    annotations: Mapping[str, str]
    source: str  # the policy's text
    order: int  # position in the set (files sorted by name, then file order)
    est: Mapping[str, Any] = field(repr=False, compare=False)  # Cedar's JSON form

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}"

    @property
    def approver(self) -> str | None:
        """For an `@approve` forbid: who may lift it."""
        if self.effect != "forbid" or "approve" not in self.annotations:
            return None
        return normalise_approver(self.annotations["approve"])

    @property
    def holds(self) -> bool:
        return self.approver is not None

    @property
    def reason(self) -> str | None:
        text = self.annotations.get("reason")
        return text.strip() if isinstance(text, str) and text.strip() else None

    @property
    def title(self) -> str | None:
        text = self.annotations.get("title")
        return text.strip() if isinstance(text, str) and text.strip() else None

    @property
    def covers(self) -> tuple[str, ...]:
        return _split_covers(self.annotations.get("covers", ""))

    @property
    def self_approval(self) -> bool:
        """For an `@approve` forbid with `@self_approval("allowed")`: the run's starter may decide it."""
        return self.holds and self.annotations.get("self_approval", "").strip() == SELF_APPROVAL_ALLOWED


def _entities(node: Any) -> list[tuple[str, str]]:
    """Every entity (type, id) a policy's JSON form names: in its scope (`entity`, `entities`) and its
    conditions (`__entity`)."""
    found: list[tuple[str, str]] = []
    if isinstance(node, Mapping):
        if isinstance(node.get("type"), str) and isinstance(node.get("id"), str) and len(node) == 2:
            return [(node["type"], node["id"])]
        for value in node.values():
            found += _entities(value)
    elif isinstance(node, list):
        for item in node:
            found += _entities(item)
    return found


def _scope_ops(est: Mapping[str, Any], ops: Mapping[str, Any]) -> list[str]:
    """The operations of `ops` a policy's scope lets it apply to: its `action` constraint (an
    operation id, or an effect naming the operations of that effect), narrowed by a `resource`
    that is `Operation::"..."`."""
    def named(constraint: Mapping[str, Any]) -> list[dict[str, Any]] | None:
        if constraint.get("op") in ("==", "in"):
            if "entities" in constraint:
                return list(constraint["entities"])
            if "entity" in constraint:
                return [constraint["entity"]]
        return None  # All (or a slot, an `is`): no narrowing

    chosen = list(ops)
    actions = named(est.get("action") or {})
    if actions is not None:
        by_effect = est["action"]["op"] == "in"
        chosen = [op_id for op_id in chosen
                  if any(a.get("id") == op_id or by_effect and a.get("id") == getattr(ops[op_id], "effect", None)
                         for a in actions)]
    resources = named(est.get("resource") or {})
    if resources is not None and all(r.get("type") == "Operation" for r in resources):
        chosen = [op_id for op_id in chosen if any(r.get("id") == op_id for r in resources)]
    return chosen


def _input_reads(node: Any) -> list[str]:
    """The names a policy's conditions read from `context.input` (`.name`, `["name"]`, `has name`)."""
    found: list[str] = []
    if isinstance(node, Mapping):
        for key in (".", "has"):
            access = node.get(key)
            if isinstance(access, Mapping) and access.get("left") == {".": {"left": {"Var": "context"},
                                                                            "attr": "input"}}:
                found.append(str(access.get("attr")))
        for value in node.values():
            found += _input_reads(value)
    elif isinstance(node, list):
        for item in node:
            found += _input_reads(item)
    return found


def _input_read_at(source: str, name: str) -> int:
    """Where in a policy's text `name` is read from the input, or -1."""
    match = re.search(rf'input\s*(?:\.\s*{re.escape(name)}\b|\[\s*"{re.escape(name)}"|has\s+"?{re.escape(name)}\b)',
                      source)
    return match.start() if match else -1


def _split_covers(text: str) -> tuple[str, ...]:
    out: list[str] = []
    for part in re.split(r"[,\s]+", text or ""):
        if part and part not in out:
            out.append(part)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# Reading the files


def _split_policies(text: str) -> list[tuple[int, str]]:
    """The file's policies as (start line, text), split at each `;` outside strings and comments.

    Cedar reports parse errors without a position, so each policy is parsed on its own: the first
    that fails names the line where it starts. Text after the last `;` is returned as a final piece
    (a policy missing its `;`).
    """
    pieces: list[tuple[int, str]] = []
    i, n = 0, len(text)
    first: int | None = None  # index of the piece's first significant character
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        if c.isspace():
            i += 1
            continue
        if first is None:
            first = i
        if c == '"':
            i += 1
            while i < n and text[i] != '"':
                i += 2 if text[i] == "\\" else 1
            i += 1
            continue
        if c == ";":
            pieces.append((text.count("\n", 0, first) + 1, text[first : i + 1]))
            first = None
        i += 1
    if first is not None:
        pieces.append((text.count("\n", 0, first) + 1, text[first:]))
    return pieces


def _policy_version(files: list[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in files:
        digest.update(name.encode("utf-8") + b"\0" + text.encode("utf-8") + b"\0")
    return "cedar:" + digest.hexdigest()[:16]


def _check_annotations(rule_file: str, line: int, effect: str, notes: Mapping[str, str]) -> list[str]:
    where = f"{rule_file}:{line}"
    problems: list[str] = []
    if "id" in notes and not str(notes["id"]).strip():
        problems.append(f"{where}: @id must not be empty")
    if "approve" in notes:
        if effect != "forbid":
            problems.append(
                f"{where}: @approve only applies to a forbid (a permit cannot hold a call)"
            )
        elif normalise_approver(notes["approve"]) is None:
            problems.append(
                f'{where}: @approve must name an approver: a person id like "alice", '
                f'or "{GROUP_PREFIX}<name>"'
            )
    else:
        for key in ("title", "covers", "self_approval"):
            if key in notes:
                problems.append(f"{where}: @{key} only applies to a forbid with @approve")
    if "self_approval" in notes and notes["self_approval"].strip() != SELF_APPROVAL_ALLOWED:
        problems.append(f'{where}: @self_approval can only say "{SELF_APPROVAL_ALLOWED}"')
    return problems


def _policy_problem(text: str) -> Problem:
    """`<folder>/<file>:<line>: <what>` as a policy problem that knows its file and line."""
    where, _, _ = text.partition(": ")
    file, _, line = where.rpartition(":")
    return Problem(text, kind=ProblemKind.POLICY, file=file or None, line=int(line) if line.isdigit() else None)


def load_cedar_policy(directory: Path | str) -> CedarPolicy | None:
    """The Cedar policy of `directory` (the project's `policies/`), or None when the directory is
    missing or holds no `*.cedar` file.

    Raises `ConfigError` listing every problem as `policies/<file>:<line>: <message>`: a policy
    Cedar cannot parse, a misused annotation, an id used twice.
    """
    directory = Path(directory)
    if not directory.is_dir():
        return None
    paths = sorted((p for p in directory.glob("*.cedar") if p.is_file()), key=lambda p: p.name)
    if not paths:
        return None

    shown = directory.name or str(directory)
    problems: list[str] = []
    files: list[tuple[str, str]] = []
    for path in paths:
        try:
            files.append((path.name, path.read_text(encoding="utf-8")))
        except (OSError, UnicodeDecodeError) as err:
            problems.append(f"{shown}/{path.name}:1: cannot be read: {err}")

    rules: list[CedarRule] = []
    first_seen: dict[str, str] = {}
    for name, text in files:
        for line, piece in _split_policies(text):
            where = f"{shown}/{name}:{line}"
            try:
                parsed = json.loads(cedarpy.policies_to_json_str(piece))
            except ValueError as err:
                problems.append(f"{where}: {err}")
                continue
            statics = list(parsed.get("staticPolicies", {}).values())
            if parsed.get("templates") or len(statics) != 1:
                problems.append(f"{where}: expected one policy without ?principal/?resource slots")
                continue
            est = statics[0]
            notes = {str(k): "" if v is None else str(v) for k, v in (est.get("annotations") or {}).items()}
            problems += _check_annotations(f"{shown}/{name}", line, est["effect"], notes)
            rule_id = notes["id"].strip() if notes.get("id", "").strip() else f"{name}:{line}"
            if rule_id in first_seen:
                problems.append(f"{where}: policy id {rule_id!r} is already used at {first_seen[rule_id]}")
                continue
            first_seen[rule_id] = where
            rules.append(
                CedarRule(
                    id=rule_id,
                    file=name,
                    line=line,
                    effect=est["effect"],
                    annotations=notes,
                    source=piece,
                    order=len(rules),
                    est=est,
                )
            )
    if problems:
        raise ConfigError([_policy_problem(problem) for problem in problems])
    return CedarPolicy(rules, version=_policy_version(files), directory=directory)


# ---------------------------------------------------------------------------------------------
# Turning a call into a Cedar request


def _decimal(value: float) -> dict[str, Any] | None:
    if value != value or value in (float("inf"), float("-inf")) or abs(value) >= _DECIMAL_LIMIT:
        return None
    text = f"{round(value, 4):.4f}".rstrip("0")
    if text.endswith("."):
        text += "0"
    if text == "-0.0":
        text = "0.0"
    return {"__extn": {"fn": "decimal", "arg": text}}


def to_cedar_value(value: Any) -> Any:
    """A JSON value as Cedar can take it, or None to leave it out.

    Records keep their keys (except Cedar's escape keys), lists become sets, integers stay Longs
    (out of range: left out), floats become Cedar decimals (compare with `.greaterThan(decimal(..))`),
    nulls are left out.
    """
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if _I64[0] <= value <= _I64[1] else None
    if isinstance(value, float):
        return _decimal(value)
    if isinstance(value, Mapping):
        record = {}
        for key, item in value.items():
            if not isinstance(key, str) or key in _ESCAPE_KEYS:
                continue
            converted = to_cedar_value(item)
            if converted is not None:
                record[key] = converted
        return record
    if isinstance(value, (list, tuple)):
        items = [to_cedar_value(item) for item in value]
        return [item for item in items if item is not None]
    return None


def _approval_id(approval: Any) -> str | None:
    if isinstance(approval, Mapping):
        return approval.get("id")
    return getattr(approval, "id", None)


def _uid(kind: str, ident: str) -> dict[str, str]:
    return {"type": kind, "id": ident}


def cedar_request(call: PolicyCall) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The Cedar request and entities for a call."""
    op_id = call.op_id
    principal = _uid("User", str(call.actor))
    action = _uid("Action", op_id)
    entities: list[dict[str, Any]] = [
        {"uid": principal, "attrs": {}, "parents": [_uid("Group", str(g)) for g in call.groups]},
        {"uid": action, "attrs": {}, "parents": [_uid("Action", str(call.effect))]},
    ]
    context: dict[str, Any] = {
        "effect": str(call.effect),
        "input": to_cedar_value(call.input if isinstance(call.input, Mapping) else {}) or {},
        "workflow": str(call.run.workflow),
        "run_id": str(call.run.id),
    }
    if call.target is not None:
        resource = _uid("Target", str(call.target))
        entities.append({"uid": resource, "attrs": {}, "parents": [_uid("Operation", op_id)]})
        context["target"] = str(call.target)
    else:
        resource = _uid("Operation", op_id)
    request = {"principal": principal, "action": action, "resource": resource, "context": context}
    return request, entities


# ---------------------------------------------------------------------------------------------
# Deciding


@dataclass(frozen=True)
class Evaluation:
    """One Cedar evaluation: allowed, the determining policy ids, and errors by policy id."""

    allowed: bool
    determining: tuple[str, ...]
    errors: tuple[tuple[str, str], ...]


class CedarPolicy:
    defined = True
    kind = "cedar"

    def __init__(self, rules: list[CedarRule], *, version: str, directory: Path | None = None) -> None:
        self.rules: tuple[CedarRule, ...] = tuple(rules)
        self.version = version
        self.directory = directory
        self._by_id = {rule.id: rule for rule in self.rules}
        self._hold_ids = frozenset(rule.id for rule in self.rules if rule.holds)
        self._sets: dict[frozenset[str], Any] = {}
        self._singles: dict[str, Any] = {}
        self._lock = threading.Lock()
        self._sets[frozenset()] = self._build_set(frozenset())  # parse once at load

    def __repr__(self) -> str:
        return f"<CedarPolicy {len(self.rules)} policies version={self.version!r}>"

    def rule(self, rule_id: str) -> CedarRule | None:
        return self._by_id.get(rule_id)

    def unknown_names(self, ops: Iterable[str], *, effects: Iterable[str] = EFFECTS) -> list[Problem]:
        """Every `Action::"..."` and `Operation::"..."` the policies name (in the scope, in a condition,
        in `@covers`) that is neither one of `ops` (operation ids) nor, for an action, an effect: a
        typo that would make a rule match nothing. Each at the file and line where it is written."""
        known_ops = frozenset(ops)
        actions = known_ops | frozenset(effects)
        shown = self.directory.name if self.directory is not None else "policies"
        found: list[Problem] = []
        for rule in self.rules:
            named = [(kind, ident) for kind, ident in _entities(rule.est) if kind in ("Action", "Operation")]
            named += [("covers", op_id) for op_id in rule.covers]
            for kind, ident in dict.fromkeys(named):
                vocabulary = actions if kind == "Action" else known_ops
                if ident in vocabulary:
                    continue
                written = f'@covers("{ident}' if kind == "covers" else f'{kind}::"{ident}"'
                at = rule.source.find(f'::"{ident}"') if kind != "covers" else rule.source.find("@covers")
                line = rule.line + rule.source[: max(at, 0)].count("\n")
                what = (f'@covers names {ident}, which no connector declares' if kind == "covers" else
                        f'{written} names {"an action" if kind == "Action" else "an operation"} no connector '
                        "declares, so the rule never applies to it")
                close = difflib.get_close_matches(ident, sorted(vocabulary), n=1, cutoff=0.75)
                hint = (f": did you mean {close[0]}?" if close else
                        ": an action is an operation id (shop.order.get) or an effect (" + ", ".join(EFFECTS) + ")"
                        if kind == "Action" else ": name an operation id, e.g. shop.order.get")
                found.append(Problem(f"{shown}/{rule.file}:{line}: {what}{hint}", kind=ProblemKind.POLICY,
                                     file=f"{shown}/{rule.file}", line=line))
        return found

    def unknown_input_fields(self, ops: Mapping[str, Any]) -> list[Problem]:
        """Every `context.input.<name>` (or `context.input has <name>`) a policy reads that the input
        model of no operation the policy applies to has: Cedar cannot evaluate the condition then,
        so the rule is skipped (a forbid never holds the call) with no other sign. `ops` maps each
        operation id to its `Operation` (its effect and input model); which of them a policy
        applies to is read from its scope (`action`, and `resource in Operation::"..."`). Each at
        the file and line where the name is written."""
        shown = self.directory.name if self.directory is not None else "policies"
        found: list[Problem] = []
        for rule in self.rules:
            applies = _scope_ops(rule.est, ops)
            fields: dict[str, None] = {}
            for op_id in applies:
                fields.update(dict.fromkeys(getattr(ops[op_id].input, "model_fields", {}) or {}))
            if not applies:
                continue  # a scope naming no known operation: unknown_names says so
            for name in dict.fromkeys(_input_reads(rule.est)):
                if name in fields:
                    continue
                line = rule.line + rule.source[: max(_input_read_at(rule.source, name), 0)].count("\n")
                more = f" and {len(applies) - 3} more" if len(applies) > 3 else ""
                shown_ops = ", ".join(sorted(applies)[:3]) + more
                close = difflib.get_close_matches(name, sorted(fields), n=1, cutoff=0.6)
                has = ", ".join(sorted(fields)) or "no fields"
                hint = f": did you mean {close[0]}?" if close else f" (its input has {has})"
                found.append(Problem(
                    f"{shown}/{rule.file}:{line}: context.input.{name} names an input field {shown_ops} "
                    f"{'does' if len(applies) == 1 else 'do'} not have, so the condition cannot be evaluated "
                    f"and the rule never applies{hint}",
                    kind=ProblemKind.POLICY, file=f"{shown}/{rule.file}", line=line))
        return found

    def approvers(self) -> list[tuple[CedarRule, str]]:
        """Each `@approve` forbid with the approver it names (`alice`, `group:security`)."""
        return [(rule, rule.approver) for rule in self.rules if rule.approver is not None]

    def describe(self) -> dict[str, Any]:
        return {
            "defined": True,
            "kind": self.kind,
            "version": self.version,
            "policies": [{"id": r.id, "location": r.location, "effect": r.effect} for r in self.rules],
        }

    # -- policy sets ----------------------------------------------------------------------------

    def _build_set(self, removed: frozenset[str]) -> Any:
        document = {
            "staticPolicies": {r.id: r.est for r in self.rules if r.id not in removed},
            "templates": {},
            "templateLinks": [],
        }
        return cedarpy.PolicySet.from_json_str(json.dumps(document))

    def _policy_set(self, removed: frozenset[str]) -> Any:
        found = self._sets.get(removed)
        if found is None:
            found = self._build_set(removed)
            with self._lock:
                if len(self._sets) >= _CACHE_LIMIT:
                    base = self._sets[frozenset()]
                    self._sets.clear()
                    self._sets[frozenset()] = base
                self._sets[removed] = found
        return found

    def _single_set(self, rule: CedarRule) -> Any:
        found = self._singles.get(rule.id)
        if found is None:
            others = frozenset(r.id for r in self.rules if r.id != rule.id)
            found = self._singles[rule.id] = self._build_set(others)
        return found

    def _evaluate(
        self, request: dict[str, Any], entities: list[dict[str, Any]], removed: frozenset[str]
    ) -> Evaluation:
        return self._run(request, entities, self._policy_set(removed))

    @staticmethod
    def _run(request: dict[str, Any], entities: list[dict[str, Any]], policy_set: Any) -> Evaluation:
        result = cedarpy.is_authorized(request, policy_set, entities)
        if result.decision == cedarpy.Decision.NoDecision:
            raise ValueError("; ".join(result.diagnostics.errors) or "Cedar reached no decision")
        errors = []
        for text in result.diagnostics.errors:
            match = _ERROR_POLICY.search(text)
            errors.append((match.group(1), match.group(2)) if match else ("", text))
        return Evaluation(result.allowed, tuple(result.diagnostics.reasons), tuple(errors))

    # -- the decision ---------------------------------------------------------------------------

    def decide(self, call: PolicyCall) -> Decision:
        op_id = call.op_id
        try:
            request, entities = cedar_request(call)
            return self._decide(call, request, entities)
        except SanomaError:
            raise
        except Exception as err:
            failed = SanomaError(f"The policy failed deciding {op_id}: {err}", code=ErrorCode.POLICY_FAILED,
                                 data={"op": op_id})
            raise failed from err

    def _decide(self, call: PolicyCall, request: dict, entities: list) -> Decision:
        op_id = call.op_id
        removed: frozenset[str] = frozenset()
        lifted: list[tuple[CedarRule, Any]] = []
        for _ in range(len(self.rules) + 1):
            ev = self._evaluate(request, entities, removed)
            notes = [f"policy {pid or '?'} could not be evaluated: {msg}" for pid, msg in ev.errors]
            lift_notes = [
                f"{rule.id} lifted by {_approval_id(a)} ({rule.approver})"
                for rule, a in lifted
            ]
            rules = sorted((self._by_id[i] for i in ev.determining if i in self._by_id), key=lambda r: r.order)
            if ev.allowed:
                return self._stamp(
                    ALLOW,
                    reasons=tuple(r.reason for r in rules if r.reason) + tuple(lift_notes) + tuple(notes),
                    policies=tuple(r.id for r in rules),
                )
            denied = self._denial(call, rules, notes)
            if denied is not None:
                return denied
            newly: list[CedarRule] = []
            for rule in rules:  # every determining forbid holds the call: lifted, or wait
                approval = approval_for(call.run.approvals, call.covered_by, rule.approver)
                if approval is None:
                    # Ask nobody to approve what would be denied anyway once every hold is lifted.
                    if self._hold_ids - removed:
                        unheld = self._evaluate(request, entities, removed | self._hold_ids)
                        if not unheld.allowed:
                            unheld_rules = sorted(
                                (self._by_id[i] for i in unheld.determining if i in self._by_id), key=lambda r: r.order
                            )
                            denial = self._denial(call, unheld_rules, notes)
                            # With every hold removed, what determines the refusal is plain forbids (or
                            # nothing permitting): never only holds, so this is always a deny.
                            assert denial is not None
                            return denial
                    return self._stamp(
                        APPROVE,
                        approver=rule.approver,
                        title=rule.title,
                        covers=tuple(c for c in rule.covers if c != op_id),
                        reasons=((rule.reason,) if rule.reason else ()) + tuple(notes),
                        policies=(rule.id,),
                        self_approval=rule.self_approval,
                    )
                lifted.append((rule, approval))
                newly.append(rule)
            removed = removed | {r.id for r in newly}
        raise RuntimeError("the policy set did not settle")  # cannot happen: each round removes one

    def _denial(self, call: PolicyCall, rules: list[CedarRule], notes: list[str]) -> Decision | None:
        """The deny for a refusal no approval can lift: nothing permits, or a plain forbid applies."""
        op_id = call.op_id
        if not rules:
            return self._stamp(
                DENY,
                reason=f"{op_id} was denied by policy: no policy permits {op_id} for {call.actor}",
                reasons=tuple(notes),
            )
        plain = [r for r in rules if not r.holds]
        if not plain:
            return None
        said = "; ".join(r.reason or r.id for r in plain)
        return self._stamp(
            DENY,
            reason=f"{op_id} was denied by policy: {said}",
            reasons=tuple(r.reason for r in plain if r.reason) + tuple(notes),
            policies=tuple(r.id for r in plain),
        )

    def _stamp(self, kind: str, **fields: Any) -> Decision:
        return Decision(kind=kind, policy_version=self.version, **fields)

    # -- explaining -----------------------------------------------------------------------------

    def rule_results(self, call: PolicyCall) -> list[dict[str, Any]]:
        """Each policy on its own against the call: whether it applied, or its error."""
        request, entities = cedar_request(call)
        out = []
        for rule in self.rules:
            ev = self._run(request, entities, self._single_set(rule))
            satisfied = rule.id in ev.determining
            error = next((msg for pid, msg in ev.errors if pid == rule.id), None)
            entry: dict[str, Any] = {
                "id": rule.id,
                "file": rule.file,
                "line": rule.line,
                "location": rule.location,
                "effect": rule.effect,
                "annotations": dict(rule.annotations),
                "satisfied": satisfied,
                "error": error,
                "source": rule.source,
            }
            if rule.holds:
                approval = approval_for(call.run.approvals, call.covered_by, rule.approver)
                entry["approver"] = rule.approver
                entry["lifted_by"] = _approval_id(approval) if approval is not None else None
            out.append(entry)
        return out
