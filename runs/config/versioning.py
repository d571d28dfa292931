"""Versions: each workflow's own, the policy's, and the deploy's that covers them all.

A run belongs to its own code. A workflow's version (`"<workflow>@<16 hex>"`) hashes what its runs
replay through: the file(s) its code lives in (the `run` function's module, and the files of the
helpers its outline draws calls in), the `run` function's own source, its input schema, the
operations it calls (id, effect, input and output schemas) and the policy version. Editing one
workflow's file never changes another workflow's version, so its parked runs stay its worker's.
Two workflows written in one file share that file: an edit to it changes both.

The policy version is part of every workflow's version: a policy decides each call a run makes
(allowed, held for an approval, denied), so a run recorded under one policy may not make the same
calls under another. A policy edit therefore gives every workflow a new version, and the deploy
proves each parked run against the new code and policy before moving it.

The deploy version (`config.version`, `"<app>@<hash>"`) covers every workflow version and the
policy version: it names what a worker runs (its banner, its `AppVersion` row). With
`SANOMA_APP_VERSION` set, every workflow version is `"<workflow>@<that value>"` and the deploy
version `"<app>@<that value>"`.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import json
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from runs.config.outline import outline_of
from runs.config.workflows import WorkflowDefinition
from runs.policies.versions import policy_version_of

# Bumped whenever the runtime changes how a run replays (with STEP_LAYOUT, in resolution).
RUNTIME_VERSION = "0.1.0"
STEP_LAYOUT = 1
HEX = 16


def policy_version(policy: Any) -> str:
    """`"policy@<16 hex>"` of the Cedar files, `"policy@<declared>"` for a function policy, `""`
    with no policy (every call allowed): the one answer the app gives (runs.policies.versions)."""
    return policy_version_of(policy)


def workflow_version(definition: WorkflowDefinition, *, app_name: str, policy: str,
                     operations: Mapping[str, Any]) -> str:
    """`"<workflow>@<16 hex>"`: see the module's docstring for what it covers."""
    digest = hashlib.sha256()
    for part in (app_name, RUNTIME_VERSION, str(STEP_LAYOUT), definition.name, policy):
        digest.update(part.encode() + b"\0")
    for text in _code_files(definition):
        digest.update(hashlib.sha256(text).digest())
    digest.update(_source(definition).encode() + b"\0")
    digest.update(_schema(definition.input) + b"\0")
    for op_id in sorted(set(definition.ops)):
        op = operations.get(op_id) or definition.operations.get(op_id)
        digest.update(op_id.encode() + b"\0")
        if op is not None:
            digest.update(json.dumps([op.effect, bool(op.idempotent)]).encode() + b"\0")
            digest.update(_schema(op.input) + b"\0" + _schema(op.output) + b"\0")
    return f"{definition.name}@{digest.hexdigest()[:HEX]}"


def deploy_version(app_name: str, workflows: Mapping[str, str], policy: str) -> str:
    """`"<app>@<hash>"` over every workflow version and the policy version."""
    digest = hashlib.sha256()
    for part in (app_name, RUNTIME_VERSION, str(STEP_LAYOUT), policy, *(workflows[n] for n in sorted(workflows))):
        digest.update(part.encode() + b"\0")
    return f"{app_name}@{digest.hexdigest()}"


def versions(*, app_name: str, workflows: Mapping[str, WorkflowDefinition], policy: Any,
             operations: Mapping[str, Any], named: str | None = None) -> tuple[str, dict[str, str], str]:
    """(deploy version, {workflow: workflow version}, policy version) of a config's parts; `named`
    (SANOMA_APP_VERSION) replaces every hash."""
    policy_v = policy_version(policy)
    if named:
        return f"{app_name}@{named}", {name: f"{name}@{named}" for name in workflows}, policy_v
    per_workflow = {name: workflow_version(wf, app_name=app_name, policy=policy_v, operations=operations)
                    for name, wf in workflows.items()}
    return deploy_version(app_name, per_workflow, policy_v), per_workflow, policy_v


def _code_files(definition: WorkflowDefinition) -> list[bytes]:
    """The contents of the files the workflow's code lives in, in a stable order (by content, so
    the same code in another checkout hashes the same)."""
    files: set[str] = set()
    code = getattr(definition.run, "__code__", None)
    if code is not None:
        files.add(code.co_filename)
    elif definition.file:
        files.add(definition.file)
    if not definition.builtin:
        files.update(site.file for site in outline_of(definition).sites)
    return sorted(_read(file) for file in files)


@functools.lru_cache(maxsize=512)
def _read_cached(file: str, mtime_ns: int, size: int) -> bytes:
    return Path(file).read_bytes()


def _read(file: str) -> bytes:
    try:
        stat = Path(file).stat()
        return _read_cached(file, stat.st_mtime_ns, stat.st_size)
    except OSError:
        return file.encode()  # a file that cannot be read (code made at run time): its name stands in


def _source(definition: WorkflowDefinition) -> str:
    try:
        return inspect.getsource(definition.run)
    except (OSError, TypeError):
        code = getattr(definition.run, "__code__", None)
        return code.co_code.hex() if code is not None else repr(definition.run)


# A model's schema, made once per process: the example company's 15 workflows ask for 333 schemas
# of 96 models (an operation's input and output in every workflow that calls it), about 0.12 s of
# CPU of every `manage.py` process that resolves the config. Weak keys: a model class made at run
# time (a test's) is not kept alive by it.
_schemas: weakref.WeakKeyDictionary[Any, bytes] = weakref.WeakKeyDictionary()


def _schema(model: Any) -> bytes:
    try:
        return _schemas[model]
    except (KeyError, TypeError):  # not made yet, or not a class that can be a weak key
        pass
    try:
        text = json.dumps(model.model_json_schema(mode="validation"), sort_keys=True).encode()
    except Exception:  # not a pydantic model: its name stands in
        return repr(model).encode()
    try:
        _schemas[model] = text
    except TypeError:
        pass
    return text


def version_of(config: Any, workflow: str) -> str:
    """The version a run of `workflow` takes on `config`'s code (a `ResolvedConfig`). An unknown
    workflow gets one named after the deploy's: no worker owns it (starting one is refused)."""
    found: str | None = config.workflow_versions.get(workflow)
    if found:
        return found
    version: str = config.version
    return f"{workflow}@{version.split('@', 1)[1] if '@' in version else version}"


def owned(workflow_versions: Iterable[str]) -> tuple[str, ...]:
    """The distinct workflow versions, sorted: what a worker of them advances."""
    return tuple(sorted(set(workflow_versions)))


__all__ = ["deploy_version", "owned", "policy_version", "version_of", "versions", "workflow_version"]
