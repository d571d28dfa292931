"""One Cedar policy of a set as sanoma reads it (`CedarRule`: its id, effect, annotations, the
operations it names, the input it reads) and the checks of its annotations."""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from runs.approvals.approver import GROUP_PREFIX
from runs.policies.decisions import normalise_approver

_APPROVE_KEYS = ("approve", "title", "covers", "self_approval")

SELF_APPROVAL_ALLOWED = "allowed"


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
    if "budget" in notes and (effect != "forbid" or not str(notes["budget"]).strip().replace("_", "").isdigit()):
        problems.append(f'{where}: @budget names the budget a forbid enforces, in minor units (cents), '
                        f'e.g. @budget("100000"); got {notes["budget"]!r} on a {effect}')
    if "self_approval" in notes and notes["self_approval"].strip() != SELF_APPROVAL_ALLOWED:
        problems.append(f'{where}: @self_approval can only say "{SELF_APPROVAL_ALLOWED}"')
    return problems
