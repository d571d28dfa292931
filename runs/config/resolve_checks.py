"""What resolving a config checks besides the config file itself: connectors indexed without clashes,
phrases, collections, workflows (names, calls, uses) and schedules, each problem said with its place."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connectors.drivers import Driver
from connectors.errors import Problem, ProblemKind
from connectors.operations import Connector, Operation, phrase_fields
from runs.collections.definition import Collection
from runs.config.uses import complete_uses, undeclared_calls
from runs.config.workflows import BUILTIN_WORKFLOWS, WorkflowDefinition


def _index_connectors(connectors: Sequence[Any], problems: list[str]) -> dict[str, Operation]:
    ops: dict[str, Operation] = {}
    owner: dict[str, Connector] = {}
    for connector in connectors:
        if not isinstance(connector, Connector):
            problems.append(Problem(f"connectors lists {connector!r}, which is not a connector from define_connector",
                                    kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
            continue
        for op_id, operation in connector.operations.items():
            if op_id in ops and owner[op_id] is not connector:
                problems.append(Problem(f"Two connectors declare {op_id}: keep one declaration",
                                        kind=ProblemKind.OPERATIONS))
                continue
            ops[op_id] = operation
            owner[op_id] = connector
    return ops


def _check_phrases(ops: Mapping[str, Operation], problems: list[str]) -> None:
    for op_id, operation in ops.items():
        for kind in ("given", "expect"):
            template = getattr(operation.phrases, kind)
            for name in phrase_fields(template or ""):
                if name not in operation.input.model_fields:
                    problems.append(Problem(
                        f"{op_id}'s {kind} phrase {template!r} names {{{name}}}, which is not an input field; "
                        f"its fields are {', '.join(operation.input.model_fields)}",
                        kind=ProblemKind.OPERATIONS,
                    ))


def _check_collections(listed: Any, found: Sequence[Collection], root: Path | None,
                       problems: list[str]) -> dict[str, Collection]:
    """The collections by name: each a `define_collection` result, one per name, no root
    collection named like an app that has collections (`ctx.data.<app>` would be both)."""
    if not isinstance(listed, (list, tuple)):
        problems.append(Problem("The config's `collections`, when given, is a list of define_collection results",
                                kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
        listed = ()
    named: dict[str, Collection] = {}
    for collection in [*listed, *found]:
        if not isinstance(collection, Collection):
            problems.append(Problem(f"collections lists {collection!r}, which is not a define_collection result",
                                    kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
            continue
        if collection.name in named:
            if named[collection.name] is not collection:
                places = " and ".join(_place(c, root) for c in (named[collection.name], collection))
                problems.append(Problem(f'Two collections are named "{collection.name}" ({places}): '
                                        "a name can be declared once", kind=ProblemKind.CONFIG_FILE,
                                        file=_relative(collection.file, root), line=collection.line))
            continue
        named[collection.name] = collection
    apps = {c.app for c in named.values() if c.app}
    for collection in named.values():
        if collection.app is None and collection.name in apps:
            problems.append(Problem(
                f'Collection "{collection.name}" is named like the app {collection.name}, which has collections '
                f"(ctx.data.{collection.name} would be both): rename one", kind=ProblemKind.CONFIG_FILE,
                file=_relative(collection.file, root), line=collection.line))
    return named


def _relative(file: str | None, root: Path | None) -> str | None:
    if not file:
        return None
    if root is not None:
        try:
            return str(Path(file).resolve().relative_to(root))
        except ValueError:
            pass
    return file


def _place(collection: Collection, root: Path | None) -> str:
    file = _relative(collection.file, root)
    return f"{file}:{collection.line}" if file else "?"


def _check_workflows(
    listed: Sequence[Any], found: Sequence[WorkflowDefinition], ops: Mapping[str, Operation],
    drivers: Mapping[str, Driver], problems: list[str], root: Path | None = None,
) -> dict[str, WorkflowDefinition]:
    names: dict[str, WorkflowDefinition] = {}
    for wf in [*listed, *found]:
        if not isinstance(wf, WorkflowDefinition):
            problems.append(Problem(f"workflows lists {wf!r}, which is not a define_workflow definition",
                                    kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
            continue
        if wf.local_name in BUILTIN_WORKFLOWS or wf.name in BUILTIN_WORKFLOWS:
            problems.append(Problem(
                f'A workflow is named "{wf.name}", the name of a built-in workflow; name it otherwise',
                kind=ProblemKind.WORKFLOW_NAMES))
            continue
        if wf.name in names:
            if names[wf.name] is not wf:
                problems.append(Problem(
                    f'Two different workflow definitions are named "{wf.name}": a name can be registered once',
                    kind=ProblemKind.WORKFLOW_NAMES,
                ))
            continue
        names[wf.name] = wf
        # `uses` derived from the outline, or checked against it: a call the list lacks is refused here.
        problems.extend(complete_uses(wf, root))
        # An operation no connector declares: at the workflow's call, with the one it is closest to.
        problems.extend(Problem(message, kind=ProblemKind.OPERATIONS, file=file, line=line)
                        for file, line, _, message in undeclared_calls(wf, ops, root))
        for op_id in wf.ops:
            declared = ops.get(op_id)
            if declared is None:
                continue
            copy = wf.operations.get(op_id)
            if copy is not None and not copy.same_contract(declared):
                problems.append(Problem(
                    f'Workflow "{wf.name}" declares {op_id} with effect {copy.effect} '
                    f"(idempotent: {copy.idempotent}); "
                    f"its connector declares effect {declared.effect} (idempotent: {declared.idempotent})",
                    kind=ProblemKind.OPERATIONS,
                ))
            if op_id not in drivers:
                problems.append(Problem(f"{op_id} has no driver", kind=ProblemKind.OPERATIONS))
    return names


def _check_schedules(workflows: Mapping[str, WorkflowDefinition], root: Path | None, problems: list[str]) -> None:
    """A schedule starts its workflow with the input `{}`: the input must accept it."""
    for wf in workflows.values():
        if isinstance(wf.trigger, str):
            continue
        try:
            wf.input.model_validate({})
        except Exception:
            file = None
            if wf.file and root is not None:
                try:
                    file = str(Path(wf.file).resolve().relative_to(root))
                except ValueError:
                    file = None
            problems.append(Problem(
                f'Workflow "{wf.name}" runs on a schedule, which starts it with the input {{}}, '
                "but its input refuses {}: give every input field a default, or drop the schedule",
                kind=ProblemKind.OTHER, file=file))
