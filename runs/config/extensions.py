"""What a layer above the engine adds to every resolved config, without the engine importing it.

`runs` may not import `changes` (the layers point one way), yet the declared state brings its own
connector (`sanoma`: people, groups, the data files) and built-in workflows (`drift`, `apply`).
That layer's extension (`runs.extensions.AppExtension`, installed in its app's `ready()`) names
a provider in its `config` field; `register` sets that field alone:

    extensions.register("resources", provide)  # install(AppExtension(name="resources", config=provide))

`resolve_config` ends with `extend(resolved, ...)`: it asks every provider, in the order
registered, with what the config declares (`Request`), and takes what each answers (`Extension`):
more connectors (their drivers made from the connector's own maker), wrappers around drivers (the
declared state fills a write-only value in at call time this way) and built-in workflows
(`builtin=True`: the names in `BUILTIN_WORKFLOWS` are theirs, so they are not refused as a
company's would be). A provider that fails, or an addition that clashes, is a config problem.
`extend` is idempotent: a config already extended by a provider is not extended by it again.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.drivers import Driver
from connectors.errors import ConfigError, Problem, ProblemKind
from connectors.operations import Connector
from runs import extensions as installed_extensions
from runs.config.workflows import BUILTIN_WORKFLOWS, WorkflowDefinition


@dataclass(frozen=True)
class Request:
    """What the config declares, as a provider sees it."""

    connectors: Sequence[Connector]
    root: Path | None
    fakes: str = ""


@dataclass(frozen=True)
class Extension:
    """What a provider adds. `workflows` is a function of the config's resolved operations (by id)
    and drivers, called once they are known; `wrap(op_id, driver)` answers the driver to use for an
    operation (the same one, or one wrapping it)."""

    connectors: Sequence[Connector] = ()
    workflows: Callable[[Mapping[str, Any], Mapping[str, Driver]], Sequence[WorkflowDefinition]] | None = None
    wrap: Callable[[str, Driver], Driver] | None = None
    problems: Sequence[str] = field(default_factory=tuple)


Provider = Callable[[Request], Extension | None]


def register(name: str, provider: Provider) -> None:
    """Ask `provider` whenever a config is resolved: the `config` field of the extension `name`
    (installed if there is none yet); registering a name again replaces its provider."""
    if not callable(provider):
        raise TypeError(f"extension {name!r}: the provider must be a function of a Request")
    installed_extensions.update(name, config=provider)


def unregister(name: str) -> None:
    """The extension `name` adds nothing to configs any more (its other fields stay)."""
    if any(e.name == name for e in installed_extensions.installed()):
        installed_extensions.update(name, config=None)


def registered() -> list[str]:
    """The names of the extensions that add to configs, in the order asked."""
    return [name for name, _ in installed_extensions.providing("config")]


def extensions(request: Request) -> list[tuple[str, Extension]]:
    """Every provider's answer (those answering None add nothing); a provider that raises is a
    problem named after it, so one broken layer does not hide the config's other problems."""
    providers: list[tuple[str, Provider]] = installed_extensions.providing("config")
    found: list[tuple[str, Extension]] = []
    for name, provider in providers:
        try:
            # Each provider sees the connectors those asked before it added (a host type, say).
            answer = provider(dataclasses.replace(
                request, connectors=(*request.connectors, *(c for _, e in found for c in e.connectors))))
        except Exception as err:  # reported as a config problem, with the others
            found.append((name, Extension(problems=(f"the {name} extension failed: {type(err).__name__}: {err}",))))
            continue
        if answer is not None:
            found.append((name, answer))
    return found


def extend(resolved: Any, *, fakes: str = "") -> Any:
    """`resolved` (a `ResolvedConfig`) with what every registered provider adds (its versions are
    computed afterwards, over the workflows with the built-ins: `resolution.with_versions`).
    Raises `ConfigError` listing every clash."""
    done = set(getattr(resolved, "extended_by", ()))
    found = [(n, e) for n, e in extensions(Request(tuple(resolved.connectors), resolved.root, fakes)) if n not in done]
    if not found:
        return resolved
    problems: list[Any] = []
    connectors = list(resolved.connectors)
    ops = dict(resolved.ops)
    drivers = dict(resolved.drivers)
    workflows = dict(resolved.workflows)
    for name, extension in found:
        problems += [Problem(p, kind=ProblemKind.CONFIG_FILE) for p in extension.problems]
        for connector in extension.connectors:
            clash = sorted(set(connector.operations) & set(ops))
            if clash:
                problems.append(Problem(f"the {name} extension declares {', '.join(clash)}, which a connector of the "
                                        "config declares too", kind=ProblemKind.OPERATIONS))
                continue
            ops.update(connector.operations)
            connectors.append(connector)
            if connector.driver is not None:
                driver = connector.driver()
                drivers.update({op_id: driver for op_id in driver.functions})
    for _, extension in found:
        if extension.wrap is not None:
            drivers = {op_id: extension.wrap(op_id, driver) for op_id, driver in drivers.items()}
    for name, extension in found:
        for wf in extension.workflows(ops, drivers) if extension.workflows is not None else ():
            if not wf.builtin or wf.name not in BUILTIN_WORKFLOWS:
                problems.append(Problem(f"the {name} extension adds the workflow {wf.name}: an extension adds only "
                                        f"built-in workflows ({', '.join(BUILTIN_WORKFLOWS)})",
                                        kind=ProblemKind.WORKFLOW_NAMES))
            elif wf.name in workflows:
                problems.append(Problem(f'the {name} extension adds the workflow "{wf.name}", which is there '
                                        "already", kind=ProblemKind.WORKFLOW_NAMES))
            else:
                workflows[wf.name] = wf
    if problems:
        raise ConfigError(problems)
    extended = dataclasses.replace(
        resolved, connectors=connectors, ops=ops, drivers=drivers, workflows=workflows)
    extended.extended_by = (*done, *(n for n, _ in found))  # which providers it has: extend is idempotent
    return extended


__all__ = ["Extension", "Provider", "Request", "extend", "extensions", "register", "registered", "unregister"]
