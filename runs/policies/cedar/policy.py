"""`CedarPolicy`: a call evaluated against the set (a forbid with `@approve` holds it for its
approver, lifted once approved), with the sets without lifted forbids cached."""
from __future__ import annotations

import difflib
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cedarpy

from connectors.errors import ErrorCode, Problem, ProblemKind, SanomaError
from connectors.operations import EFFECTS
from runs.policies.cedar.memo import Decisions, key_of, reads_of
from runs.policies.cedar.request import _approval_id, cedar_request
from runs.policies.cedar.rules import CedarRule, _entities, _input_read_at, _input_reads, _scope_ops
from runs.policies.decisions import (
    ALLOW,
    APPROVE,
    DENY,
    Decision,
    PolicyCall,
    approval_for,
)

_ERROR_POLICY = re.compile(r"policy `([^`]*)`: (.*)", re.S)

_CACHE_LIMIT = 256


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
        # What a decision depends on, read once; the decisions of this version kept by it.
        self.decisions = Decisions(reads_of(rule.est for rule in self.rules))

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
        """The decision on `call`: kept from an earlier call with the same key (what the policies
        read of it, see `memo`), else evaluated and kept."""
        op_id = call.op_id
        try:
            key = key_of(call, self.decisions.reads)
            found = self.decisions.get(key)
            if found is not None:
                return found
            decision = self._decide(call, *cedar_request(call))
            self.decisions.keep(key, decision)
            return decision
        except SanomaError:
            raise
        except Exception as err:
            raise _policy_failed(op_id, err) from err

    def evaluate(self, call: PolicyCall) -> Decision:
        """The decision on `call` evaluated by Cedar, never a kept one (what `decide` keeps)."""
        op_id = call.op_id
        try:
            return self._decide(call, *cedar_request(call))
        except SanomaError:
            raise
        except Exception as err:
            raise _policy_failed(op_id, err) from err

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
                approval = approval_for(call.run.approvals, call.covered_by, rule.approver, rule.id)
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
                        # Every hold of this approver that applies and is not lifted: the approval
                        # asked lifts these (and only these), the titled one first.
                        policies=(rule.id, *(r.id for r in rules if r is not rule and r.approver == rule.approver
                                             and approval_for(call.run.approvals, call.covered_by, r.approver,
                                                              r.id) is None)),
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
                approval = approval_for(call.run.approvals, call.covered_by, rule.approver, rule.id)
                entry["approver"] = rule.approver
                entry["lifted_by"] = _approval_id(approval) if approval is not None else None
            out.append(entry)
        return out


def _policy_failed(op_id: str, err: Exception) -> SanomaError:
    """An error met deciding on a call to `op_id` (other than a SanomaError, which says its own)."""
    return SanomaError(f"The policy failed deciding {op_id}: {err}", code=ErrorCode.POLICY_FAILED, data={"op": op_id})
