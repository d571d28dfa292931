"""The built-in workflows `drift` and `apply`: run by the engine like any other, every vendor call
through `ctx` (so the policy sees it, it may be held for an approver, and the ledger records it).

`drift` (input `{}`): read the data files (`sanoma.resources.read`, a recorded step: the declared
resources, secrets by name only), import every declared resource in file order
(`<vendor>.<type>.import`, one call each), then compare. Each resource is `clean`, `drifted` (its
differing leaves), `gone`, or `error` (no driver, the vendor failed, the policy refused: the run
goes on). The report is the run's output.

`apply` (input `{}`): the same observation, then the plan (`changes.resources.plan`) made as calls
in dependency order. After each create that succeeded (and each delete of an instance sanoma
created) the run notes it with `sanoma.resources.record`, an inline `sanoma` operation (the worker's
own connection, recorded, a `write` to the policy): only what an apply created may a plan delete.
A change that fails (a denial, a rejection, the vendor) is reported and apply goes on with the
changes that do not refer to it; a change referring to a failed one is `skipped`. A held change waits for its approver.
An apply that did not make every change fails with `apply_incomplete` (`changes.resources.outcome`):
the counts and the report in the error's data.

Replay-safe: everything the bodies decide on comes from recorded calls, in a fixed order.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from changes.resources.compare import Declared, differences, resolve
from changes.resources.outcome import incomplete
from changes.resources.plan import make_plan, summary
from connectors.errors import error_code
from connectors.operations import Operation
from connectors.resources import ResourceType
from runs.config.workflows import WorkflowDefinition, define_workflow
from runs.telemetry import metrics

READ_OP = "sanoma.resources.read"
SOURCE_OP = "sanoma.source.resolve"
RECORD_OP = "sanoma.resources.record"
STATUSES = ("clean", "drifted", "gone", "error")


def call_op(ctx: Any, op_id: str, payload: dict[str, Any]) -> Any:
    """`ctx.<vendor>.<type>.<verb>(payload)`; `import` is a keyword, so the path is walked by name."""
    target = ctx
    for part in op_id.split("."):
        target = getattr(target, part)
    return target(payload)


def _error(err: BaseException) -> dict[str, Any]:
    return {"code": error_code(err) or type(err).__name__, "message": str(err) or type(err).__name__}


def part_of(read: Any, name: str) -> list[Any]:
    """A part of `sanoma.resources.read`'s answer (a reply from ctx, or the same as a plain mapping)."""
    return list(read.get(name, []) if isinstance(read, Mapping) else getattr(read, name))


def observe(ctx: Any, types: Mapping[str, ResourceType], read: Any = None) -> dict[str, Any]:
    """Read the data files (or take `read`, another tree's) and import each declared resource;
    compare once all are read (a reference may be satisfied by what a later import read). A host's
    revision is where its branch points at the repository's remote (`sanoma.source.resolve`)."""
    if read is None:
        read = call_op(ctx, READ_OP, {})
    declared: list[dict[str, Any]] = [dict(r) for r in part_of(read, "resources")]
    by_id = {r["id"]: r for r in declared}
    sent = Declared(by_id, {})
    entries: list[dict[str, Any]] = []
    observed: dict[str, dict[str, Any]] = {}
    handles: dict[str, str | None] = {}
    for resource in declared:
        entry: dict[str, Any] = {key: resource[key] for key in ("id", "type", "name", "values", "references",
                                                                 "file", "line", "column")}
        entry.update(import_id=None, status="error", diffs=[], error=None)
        entries.append(entry)
        rt = types.get(resource["type"])
        if rt is None:
            entry["error"] = {"code": "no_driver", "message": f"no connector of the config has {resource['type']}"}
            continue
        try:
            entry["import_id"] = rt.import_id(resolve(rt, resource["values"], sent))
        except ValueError as err:
            entry["error"] = {"code": "invalid_input", "message": str(err)}
            continue
        if rt.host:
            try:
                source = call_op(ctx, SOURCE_OP, {"host": resource["id"],
                                                "branch": resource["values"].get("branch") or "main"})
            except Exception as err:  # the remote cannot say: this host's error, the run goes on
                entry["error"] = {**_error(err), "message": f"its revision could not be resolved: {err}"}
                continue
            resource["values"] = {**resource["values"], "revision": source.revision}
            entry["values"] = resource["values"]
        try:
            found = call_op(ctx, rt.op_id("import"), {"id": entry["import_id"]})
        except Exception as err:  # no driver, the vendor, the policy: this resource's error, the run goes on
            entry["error"] = _error(err)
            continue
        if found.gone:
            entry["status"] = "gone"
            continue
        try:
            observed[resource["id"]] = rt.observed(found.values)
        except Exception as err:  # the type's normalize failed on what the vendor answered
            entry["error"] = {"code": "normalize_failed", "message": f"{rt.key}: normalize failed: {err}"}
            continue
        handles[resource["id"]] = found.handle
        entry["status"] = None
    seen = Declared(by_id, observed)
    for entry in entries:
        if entry["status"] is None:
            rt = types[entry["type"]]
            entry["diffs"] = differences(rt, by_id[entry["id"]], observed[entry["id"]], seen)
            entry["status"] = "drifted" if entry["diffs"] else "clean"
    counts = dict.fromkeys(STATUSES, 0)
    for entry in entries:
        counts[entry["status"]] += 1
    return {"resources": entries, "summary": counts, "problems": part_of(read, "problems"),
            "files": part_of(read, "files"), "managed": part_of(read, "managed"), "declared": declared,
            "observed": observed, "handles": handles}


def report_of(observation: Mapping[str, Any]) -> dict[str, Any]:
    """The drift report: what `drift` answers."""
    return {key: observation[key] for key in ("summary", "resources", "problems", "files", "managed")}


def drift_body(types: Mapping[str, ResourceType]) -> Any:
    def drift(ctx: Any, input: Any) -> dict[str, Any]:
        report = report_of(observe(ctx, types))
        for entry in report["resources"]:  # counted in the advance that makes the report
            if entry["status"] in ("drifted", "gone"):
                metrics.drift_found(entry["type"])
        return report

    return drift


def apply_body(types: Mapping[str, ResourceType]) -> Any:
    def apply(ctx: Any, input: Any) -> dict[str, Any]:
        report = apply_observed(ctx, types, observe(ctx, types))
        # A change of the plan not made (denied, rejected, failed, skipped): the run did not do what it
        # was for, and fails saying how many and why, its report in the error's data.
        not_all = incomplete(report)
        if not_all is not None:
            raise not_all
        return report

    return apply


def apply_observed(ctx: Any, types: Mapping[str, ResourceType], seen: Mapping[str, Any],
                   keep: Callable[[Mapping[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Make the plan of what `observe` saw as calls (those `keep` keeps: a deploy keeps its hosts')."""
    changes = make_plan(declared=seen["declared"], report=seen["resources"], managed=seen["managed"],
                        types=types, observed=seen["observed"])
    if keep is not None:
        changes = [change for change in changes if keep(change)]
    # A resource whose state is unknown, or whose change did not happen, holds back what refers to it.
    managed = {(row["type"], row["import_id"]) for row in seen["managed"]}
    failed = {e["id"]: f"its state could not be read ({e['error']['message']})"
              for e in seen["resources"] if e["status"] == "error"}
    done: list[dict[str, Any]] = []
    for change in changes:
        result = {key: value for key, value in change.items() if key != "calls"}
        result["ops"] = [call["op"] for call in change["calls"]]
        blocked = [ref for ref in change["refers_to"] if ref in failed]
        if blocked:
            result.update(status="skipped", error={
                "code": "skipped", "message": f"it refers to {blocked[0]}, whose change did not happen: "
                                              f"{failed[blocked[0]]}"})
            failed[change["resource"]] = "it was skipped"
            done.append(result)
            continue
        result["status"] = "done"
        for call in change["calls"]:
            payload = dict(call["input"])
            handle = seen["handles"].get(change["resource"] or "")
            if handle and "id" in payload and call["op"].endswith((".update", ".delete")):
                payload["handle"] = handle
            verb = call["op"].rsplit(".", 1)[1]
            calling = call["op"]
            try:
                reply = call_op(ctx, calling, payload)
                # What sanoma made (or ended) is noted by this run, on the worker's own connection.
                calling = RECORD_OP
                if verb == "create":
                    call_op(ctx, RECORD_OP, {"type": change["type"], "import_id": reply.id, "action": "created"})
                elif verb == "delete" and (change["type"], payload["id"]) in managed:
                    call_op(ctx, RECORD_OP, {"type": change["type"], "import_id": payload["id"],
                                           "action": "deleted"})
            except Exception as err:  # a denial, a rejection, the vendor: this change fails, apply goes on
                done_at_vendor = "" if calling == call["op"] else f"{call['op']} was made, but "
                result.update(status="failed", error={**_error(err), "op": calling,
                                                      "message": done_at_vendor + _error(err)["message"]})
                if change["resource"]:
                    failed[change["resource"]] = f"{calling} failed: {err}"
                break
        done.append(result)
    counts = {status: sum(1 for r in done if r["status"] == status) for status in ("done", "failed", "skipped")}
    return {"summary": {**counts, **{f"planned_{k}": v for k, v in summary(changes).items()}},
            "drift": seen["summary"], "changes": done, "problems": seen["problems"]}


def builtin_workflows(types: Mapping[str, ResourceType], ops: Mapping[str, Operation]) -> list[WorkflowDefinition]:
    """`drift` and `apply` for these types: each uses the read and its types' operations."""
    imports = [ops[rt.op_id("import")] for rt in types.values() if rt.op_id("import") in ops]
    sources = [ops[SOURCE_OP]] if SOURCE_OP in ops and any(rt.host for rt in types.values()) else []
    every = [ops[rt.op_id(verb)] for rt in types.values() for verb in ("import", "create", "update", "delete")
             if rt.op_id(verb) in ops]
    drift = define_workflow(name="drift", run=drift_body(types), uses=[ops[READ_OP], *sources, *imports],
                            title="Compare what the vendors hold with the data files")
    apply = define_workflow(name="apply", run=apply_body(types), uses=[ops[READ_OP], ops[RECORD_OP], *sources, *every],
                            title="Make the vendors hold what the data files declare")
    return [replace(drift, builtin=True, file=__file__), replace(apply, builtin=True, file=__file__)]


__all__ = ["READ_OP", "RECORD_OP", "SOURCE_OP", "STATUSES", "apply_body", "apply_observed", "builtin_workflows",
           "call_op", "drift_body", "observe", "part_of", "report_of"]
