"""From a drift report to the changes that make the vendors hold what the data files declare.

Pure: the same report gives the same plan, in the same order (the `apply` workflow computes it
from what its run recorded, so a replay computes it again identically).

Each declared resource gets, by its drift status:

- `gone`: `create`;
- `drifted`: `update` (the differing fields that can change in place), or `replace` (an immutable
  or identity field differs: `delete`, then `create`);
- `clean`: nothing; `error`: nothing (its state is unknown: the report says why).

A resource an earlier apply created (`managed`) that no data file declares any more gets `delete`
(for a person: deactivation). Nothing sanoma did not create is ever deleted.

Order: references first (a resource after every resource it refers to, else file order), then the
deletes, the latest created first.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from changes.resources.compare import Declared, replaces, resolve
from connectors.resources import ResourceType

ACTIONS = ("create", "update", "replace", "delete")


def dependency_order(resources: Sequence[Mapping[str, Any]]) -> list[str]:
    """Resource ids, each after the ones it refers to, else in file order (the reader refuses cycles)."""
    by_id = {r["id"]: r for r in resources}
    placed: dict[str, None] = {}
    visiting: set[str] = set()

    def visit(rid: str) -> None:
        if rid in placed or rid not in by_id or rid in visiting:
            return
        visiting.add(rid)
        for ref in by_id[rid].get("references", ()):
            visit(ref)
        visiting.discard(rid)
        placed[rid] = None

    for resource in resources:
        visit(resource["id"])
    return list(placed)


def make_plan(
    *,
    declared: Sequence[Mapping[str, Any]],
    report: Sequence[Mapping[str, Any]],
    managed: Sequence[Mapping[str, Any]],
    types: Mapping[str, ResourceType],
    observed: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """The changes, in the order apply makes them. `declared` is the read's resources (plain),
    `report` the drift report's entry per resource, `managed` what earlier applies created
    (`{type, import_id, ...}`, oldest first)."""
    by_id = {r["id"]: r for r in declared}
    entries = {e["id"]: e for e in report}
    known = Declared(by_id, observed or {})
    changes: list[dict[str, Any]] = []
    for rid in dependency_order(declared):
        entry = entries.get(rid)
        if entry is None or entry["status"] not in ("gone", "drifted"):
            continue
        resource = by_id[rid]
        rt = types[resource["type"]]
        desired = resolve(rt, resource["values"], known)
        base = {"resource": rid, "type": rt.key, "name": resource["name"], "import_id": entry["import_id"],
                "file": resource["file"], "line": resource["line"], "refers_to": list(resource.get("references", ())),
                "fields": list(entry.get("diffs", ()))}
        if entry["status"] == "gone":
            changes.append({**base, "action": "create",
                            "calls": [{"op": rt.op_id("create"), "input": {"desired": desired}}]})
            continue
        immutable = replaces(rt, entry["diffs"])
        if immutable:
            changes.append({**base, "action": "replace", "replaces": immutable, "calls": [
                {"op": rt.op_id("delete"), "input": {"id": entry["import_id"]}},
                {"op": rt.op_id("create"), "input": {"desired": desired}},
            ]})
            continue
        fields = list(dict.fromkeys(d["path"].split(".")[0] for d in entry["diffs"]))
        delta = {f: desired[f] for f in fields if f in desired}
        changes.append({**base, "action": "update", "calls": [
            {"op": rt.op_id("update"), "input": {"id": entry["import_id"], "changes": delta, "desired": desired}},
        ]})
    still = {(e["type"], e["import_id"]) for e in report if e.get("import_id")}
    for row in reversed(list(managed)):
        key = (row["type"], row["import_id"])
        gone_type = types.get(row["type"])
        if key in still or gone_type is None:
            continue
        still.add(key)  # one delete per instance, however many rows name it
        changes.append({"resource": None, "type": gone_type.key, "name": None, "import_id": row["import_id"],
                        "file": None, "line": None, "refers_to": [], "fields": [], "action": "delete",
                        "created_by": row.get("created_by", ""),
                        "calls": [{"op": gone_type.op_id("delete"), "input": {"id": row["import_id"]}}]})
    return changes


def summary(changes: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    counts = dict.fromkeys(ACTIONS, 0)
    for change in changes:
        counts[change["action"]] += 1
    return counts


__all__ = ["ACTIONS", "dependency_order", "make_plan", "summary"]
