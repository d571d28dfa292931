"""The company's config: `SanomaConfig`, discovery of workflow files, and `resolve_config`.

Resolving checks everything a worker would refuse and reports every problem in one message, so
the worker, the client, the admin and every command fail the same way.
"""
from __future__ import annotations

import dataclasses
import functools
import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from connectors.announcing import announce_problems
from connectors.drivers import Driver
from connectors.errors import ConfigError, Problem, ProblemKind
from connectors.operations import Connector, Operation
from runs.collections.definition import DATA_VENDOR, Collection, data_connector
from runs.collections.fake import data_fake
from runs.collections.store import database_driver
from runs.config import extensions, versioning
from runs.config.discovery import (
    discover_collections,
    discover_workflows,
    failure_line,
    import_root,
    kind_dirs,
    limit_problem,
)
from runs.config.outline import config_problems
from runs.config.resolve_checks import (
    _check_collections,
    _check_phrases,
    _check_schedules,
    _check_workflows,
    _index_connectors,
)
from runs.config.workflows import WorkflowDefinition, check_name
from runs.policies.cedar import load_cedar_policy
from runs.policies.python_policies import allow_all

# What a version covers, and how it is hashed: runs.config.versioning.
RUNTIME_VERSION = versioning.RUNTIME_VERSION
STEP_LAYOUT = versioning.STEP_LAYOUT


@dataclass(frozen=True, eq=False)
class SanomaConfig:
    """What `sanoma_config.py` at the config root declares as `config`."""

    connectors: Sequence[Connector]
    app_name: str = "sanoma"
    workflows: Sequence[WorkflowDefinition] = ()
    # The company's own records (`define_collection`), called as `ctx.data.<name>.<op>`.
    collections: Sequence[Collection] = ()
    policy: Any = None
    steps: Sequence[Any] = ()
    root: str | Path | None = None
    demo: Mapping[str, str] = field(default_factory=dict)
    # Where each approval asked is announced: `slack_channel("#approvals")` (connectors.announcing).
    announce_approvals: Any = None


@dataclass(eq=False)
class ResolvedConfig:
    app_name: str
    version: str
    root: Path | None
    connectors: list[Connector]
    ops: dict[str, Operation]
    drivers: dict[str, Driver]
    fakes: dict[str, Any]
    workflows: dict[str, WorkflowDefinition]
    policy: Any
    steps: list[Any]
    demo: Mapping[str, str]
    collections: dict[str, Collection] = field(default_factory=dict)
    wakeups: tuple[Any, ...] = ()  # what sanoma_config.py declares in `wakeups = [...]`, as declared
    # Each workflow's own version ({workflow: "<workflow>@<hash>"}) and the policy's ("policy@<hash>",
    # "" with none): see runs.config.versioning. `version` is the deploy's, covering them all.
    workflow_versions: dict[str, str] = field(default_factory=dict)
    policy_version: str = ""
    announce_approvals: Any = None  # the config's AnnounceTo, or None

    @functools.cached_property
    def owned_versions(self) -> tuple[str, ...]:
        """The workflow versions this config advances: a run is this worker's when its
        `app_version` is one of them."""
        return versioning.owned(self.workflow_versions.values())

    def workflow(self, name: str) -> WorkflowDefinition | None:
        return self.workflows.get(name)

    @property
    def scenarios(self) -> list[Path]:
        """Folders holding feature files: `scenarios/` and each `apps/<app>/scenarios/`."""
        if self.root is None:
            return []
        return [d for d in kind_dirs(self.root, "scenarios") if d.is_dir()]


def input_schema(definition: WorkflowDefinition) -> dict[str, Any]:
    return definition.input.model_json_schema(mode="validation")


def _make_drivers(
    connectors: Sequence[Connector], fakes_mode: str, fake_dir: Path | None, problems: list[str]
) -> tuple[dict[str, Driver], dict[str, Any]]:
    drivers: dict[str, Driver] = {}
    fakes: dict[str, Any] = {}
    for connector in connectors:
        if not isinstance(connector, Connector):
            continue
        if connector.vendor == DATA_VENDOR:
            continue  # the collections: see _collection_halves
        if connector.fake is not None:
            try:
                file = (fake_dir / f"{connector.vendor}.json") if (fake_dir and fakes_mode == "instance") else None
                fakes[connector.vendor] = connector.fake(file)
            except Exception as err:
                problems.append(Problem(f"the fake of {connector.vendor} could not be made: {err}",
                                        kind=ProblemKind.HALVES))
        if fakes_mode == "instance" and connector.vendor in fakes:
            driver = fakes[connector.vendor].driver
        elif connector.driver is not None:
            try:
                driver = connector.driver()
            except Exception as err:
                problems.append(Problem(f"the driver of {connector.vendor} could not be made: {err}",
                                        kind=ProblemKind.HALVES))
                continue
        else:
            continue
        extra = sorted(set(driver.functions) - set(connector.operations))
        for op_id in extra:
            problems.append(Problem(
                f'Driver "{connector.vendor}" implements {op_id}, which no connector in the config declares',
                kind=ProblemKind.OPERATIONS,
            ))
        for op_id in driver.functions:
            drivers[op_id] = driver
    return drivers, fakes


def _collection_halves(
    connector: Connector, collections: list[Collection], fakes_mode: str, fake_dir: Path | None,
    drivers: dict[str, Driver], fakes: dict[str, Any],
) -> None:
    """The `data` vendor's driver: the database, always, except in scenarios (instance fakes and no
    fake folder: one process, nothing shared), which run on an in-memory fake they seed and read.
    A worker or the demo on instance fakes keeps collections on the database, which is real and
    shared there too, so the admin and the API show them."""
    if fakes_mode == "instance" and fake_dir is None:
        fake = data_fake(connector, collections)
        fakes[DATA_VENDOR] = fake
        driver = fake.driver
    else:
        driver = database_driver(collections)
    for op_id in driver.functions:
        drivers[op_id] = driver


# Operations the engine itself asks the policy about (ctx.start_run: runs.engine.children.START_RUN):
# a policy may name them beside the connectors' (the checks and the lint look).
ENGINE_OPS = ("sanoma.run.start",)


def _resolve_policy(config: SanomaConfig, root: Path | None, problems: list[str]) -> Any:
    if config.policy is not None:
        return config.policy
    if root is not None:
        try:
            cedar = load_cedar_policy(root / "policies")
        except ConfigError as err:
            problems.extend(err.problems)
            return None
        if cedar is not None:
            return cedar
    return allow_all


def resolve_config(
    config: Any,
    *,
    fakes: str = "",
    fake_dir: Path | None = None,
    app_version: str | None = None,
    discovered: Sequence[WorkflowDefinition] = (),
    discovered_collections: Sequence[Collection] = (),
) -> ResolvedConfig:
    """Check the config and derive what the worker, client and admin use; one error lists all problems."""
    if not isinstance(config, SanomaConfig):
        raise ConfigError([Problem(f"the config must be a SanomaConfig; got {type(config).__name__}",
                                   kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py")])
    problems: list[str] = []
    if not isinstance(config.connectors, (list, tuple)):
        raise ConfigError([Problem("The config needs `connectors`: the connectors its workflows call",
                                   kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py")])
    if not isinstance(config.workflows, (list, tuple)):
        problems.append(Problem("The config's `workflows`, when given, is a list of define_workflow definitions",
                                kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
    app_name = (config.app_name or "").strip() or "sanoma"
    try:
        check_name(app_name)
    except ValueError:
        problems.append(Problem(f"app_name {app_name!r} must be lowercase letters, digits and dashes",
                                kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py"))
    root = Path(config.root).resolve() if config.root else None
    collections = _check_collections(config.collections, discovered_collections, root, problems)
    if any(isinstance(c, Connector) and c.vendor == DATA_VENDOR for c in config.connectors):
        problems.append(Problem(f'connectors lists a connector named "{DATA_VENDOR}", the built-in vendor of the '
                                "collections: name it after its vendor", kind=ProblemKind.CONFIG_FILE,
                                file="sanoma_config.py"))
    connectors = list(config.connectors)
    if collections:
        connectors.append(data_connector(list(collections.values())))
    ops = _index_connectors(connectors, problems)
    _check_phrases(ops, problems)
    drivers, fake_instances = _make_drivers(connectors, fakes, fake_dir, problems)
    if collections:
        _collection_halves(connectors[-1], list(collections.values()), fakes, fake_dir, drivers, fake_instances)
    workflows = _check_workflows(
        config.workflows if isinstance(config.workflows, (list, tuple)) else (), discovered, ops, drivers, problems,
        root,
    )
    _check_schedules(workflows, root, problems)
    for wf in workflows.values():  # the outline contract: what a workflow's body may hold
        problems.extend(config_problems(wf, root, kind=ProblemKind.OUTLINE))
    policy = _resolve_policy(config, root, problems)
    problems.extend(announce_problems(config.announce_approvals, ops))
    if problems:
        raise ConfigError(problems)
    steps = [c.steps for c in config.connectors if isinstance(c, Connector) and c.steps is not None]
    resolved = ResolvedConfig(
        app_name=app_name,
        version="",  # set below, once the extensions' built-in workflows are in
        root=root,
        connectors=connectors,
        ops=ops,
        drivers=drivers,
        fakes=fake_instances,
        workflows=workflows,
        policy=policy,
        steps=[*steps, *config.steps],
        demo=dict(config.demo),
        collections=collections,
        announce_approvals=config.announce_approvals,
    )
    # What a layer above adds (the declared state's connector and built-in workflows): see extensions.
    return with_versions(extensions.extend(resolved, fakes=fakes), named=app_version)


def with_versions(resolved: ResolvedConfig, *, named: str | None = None) -> ResolvedConfig:
    """`resolved` with its versions computed over its workflows (built-ins included) and policy;
    `named` (SANOMA_APP_VERSION) replaces every hash."""
    version, workflow_versions, policy_version = versioning.versions(
        app_name=resolved.app_name, workflows=resolved.workflows, policy=resolved.policy, operations=resolved.ops,
        named=named)
    extended_by = getattr(resolved, "extended_by", None)
    versioned = dataclasses.replace(resolved, version=version, workflow_versions=workflow_versions,
                                    policy_version=policy_version)
    if extended_by is not None:
        versioned.extended_by = extended_by  # type: ignore[attr-defined]
    return versioned


def root_below(folder: Path) -> str:
    """"; did you mean <folder>/<sub>?" when exactly one folder right under `folder` holds a
    sanoma_config.py (a checkout given where its config root was meant), else ""."""
    try:
        found = [sub for sub in folder.iterdir() if sub.is_dir() and (sub / "sanoma_config.py").is_file()]
    except OSError:
        return ""
    return f"; did you mean {found[0]}?" if len(found) == 1 else ""


def load_config(
    root: Path, *, fakes: str = "", fake_dir: Path | None = None, app_version: str | None = None
) -> ResolvedConfig:
    """Import `<root>/sanoma_config.py`, discover the workflow files, and resolve."""
    root = Path(root).resolve()
    if not (root / "sanoma_config.py").is_file():
        problem = (f"{root} is not a folder" if not root.is_dir()
                   else f"{root} has no sanoma_config.py defining `config = SanomaConfig(...)`{root_below(root)}")
        raise ConfigError([Problem(problem, kind=ProblemKind.ROOT)])
    package = import_root(root)
    try:
        module = importlib.import_module(f"{package.__name__}.sanoma_config")
    except ConfigError:
        raise  # already says what is wrong
    except Exception as err:
        line = failure_line(err, root / "sanoma_config.py")
        raise ConfigError([limit_problem(err, root) or Problem(
            f"sanoma_config.py: {type(err).__name__}: {err}", kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py",
            line=line)]) from err
    config = getattr(module, "config", None)
    if not isinstance(config, SanomaConfig):
        raise ConfigError([Problem("sanoma_config.py must define `config = SanomaConfig(...)`",
                                   kind=ProblemKind.CONFIG_FILE, file="sanoma_config.py")])
    if config.root is None:
        config = SanomaConfig(**{**config.__dict__, "root": root})
    problems: list[str] = []
    found = discover_workflows(root, package.__name__, problems)
    found_collections = discover_collections(root, package.__name__, problems)
    try:
        resolved = resolve_config(config, fakes=fakes, fake_dir=fake_dir, app_version=app_version, discovered=found,
                                  discovered_collections=found_collections)
    except ConfigError as err:
        # Every problem at once: a broken workflow file does not hide a broken policy file.
        raise ConfigError([*problems, *err.problems]) from None
    if problems:
        raise ConfigError(problems)
    resolved.wakeups = tuple(getattr(module, "wakeups", ()) or ())
    return resolved
