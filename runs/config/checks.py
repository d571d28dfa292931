"""Django system checks: the company config resolves, and a deployment runs on a real secret key.

`manage.py check`, and every command that runs the checks (runserver, migrate, worker, behave, ...),
resolves the config the way the worker will (once; a second time on the fakes only when it is
refused) and reports each problem as its own Error, with an id per kind of problem, so a broken
config root stops the command before it starts:

    sanoma.E001  the config root is missing or cannot be imported as a package
    sanoma.E002  a workflow file does not import (the file and line)
    sanoma.E003  a policy file is invalid (the file and line): Cedar syntax, an annotation misused, an
                 `Action::"..."`, `Operation::"..."` or `@covers` naming an operation no connector declares,
                 or a `context.input.<name>` that the input of no operation the policy applies to has
    sanoma.E004  sanoma_config.py (or the root's __init__.py) does not import, or `config` is not valid
    sanoma.E005  operations do not line up between connectors, drivers and workflows
    sanoma.E006  two workflows share a name, or one takes a built-in's name
    sanoma.E007  a connector's driver or fake cannot be made
    sanoma.E008  a workflow's body holds what its outline cannot draw (the file, line and why)
    sanoma.E009  any other reason the config cannot be resolved
    sanoma.E012  a policy's `@approve` names nobody of the site: no person (group) the data files declare,
                 no user (group) of the site (the file and line)
    sanoma.W012  the same for an approver whose account is inactive, or when the site's users cannot be
                 read (no database yet): they may be users of the site
    sanoma.E013  approvals are announced (announce_approvals) and the desk's address is unknown: no
                 slack_channel(desk=...), no SANOMA_SITE_URL (runs.approvals.announce_checks)
    sanoma.E014  a connector's or an operation's `Limit` is declared wrong (the file and line of the
                 declaration; the hint says how to write it right)

A config refused on real drivers (SANOMA_FAKES unset) that resolves on its fakes gets the same ids
as warnings (sanoma.W005, sanoma.W007): scenarios run on it, a worker on real drivers would not.
In production (DJANGO_ENV=production) they stay errors.

With --deploy:

    sanoma.E010  the built-in development secret key is in use (DJANGO_SECRET_KEY is not set)
    sanoma.W011  the production profile (DJANGO_ENV=production) is off
"""
from __future__ import annotations

import traceback
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.apps import AppConfig
from django.conf import settings
from django.core.checks import CheckMessage, Error, Warning

from connectors.errors import ConfigError, Problem, ProblemKind
from runs.approvals.announce_checks import announce_link_problems
from runs.config.registry import load_site_config
from runs.config.resolution import ENGINE_OPS, load_config
from runs.policies.approvers import approver_problems
from runs.policies.cedar import CedarPolicy

# The checks a command that serves no page runs (worker, start, deploy, ...: their
# `requires_system_checks`): the config's (above), the models' and the settings' they use. The
# site's own (URLs, templates, the admin, static files) are runserver's, migrate's and `manage.py
# check`'s: importing the URLconf (DRF, the schema's views) cost each such command about 0.4 s of CPU.
COMMAND_CHECKS = ["sanoma", "models", "database", "caches", "compatibility", "files", "translation", "commands"]

_HINTS = {
    "sanoma.E001": "Point SANOMA_ROOT at the folder holding sanoma_config.py; its name must be a Python identifier.",
    "sanoma.E002": "Every .py file under workflows/ is imported (except _* and test_*): fix the file or move it.",
    "sanoma.E003": "Fix the policy under policies/ (Cedar syntax, the @approve/@title/@covers annotations, and "
                   "the actions and operations it names: each an operation id a connector declares, or an effect; the "
                   "context.input fields it reads: each a field of the operation's input model).",
    "sanoma.E004": "sanoma_config.py must import and define `config = SanomaConfig(...)`.",
    "sanoma.E005": "Each operation a workflow uses is declared by one connector and implemented by its driver.",
    "sanoma.E006": "Give each workflow its own name, other than drift, apply, call and change.",
    "sanoma.E007": "The connector's with_setup(driver=..., fake=...) function raised: see the message.",
    "sanoma.E008": "Call ctx directly in run, as docs/reference/outline.md says: see the line and the reason.",
    "sanoma.E009": "See the message; the worker refuses this config the same way.",
    "sanoma.E014": "Write the limit as Limit(rate=\"5/s\", concurrency=2, key=\"account\"): see the message.",
    "sanoma.E012": "Name a person a data file declares (sanoma.person) or a user of the site, or a group as "
                   "group:<name> (sanoma.group, or a group of the site).",
}

_CHECK_IDS = {
    ProblemKind.ROOT: "sanoma.E001",
    ProblemKind.WORKFLOW_IMPORT: "sanoma.E002",
    ProblemKind.POLICY: "sanoma.E003",
    ProblemKind.CONFIG_FILE: "sanoma.E004",
    ProblemKind.OPERATIONS: "sanoma.E005",
    ProblemKind.WORKFLOW_NAMES: "sanoma.E006",
    ProblemKind.HALVES: "sanoma.E007",
    ProblemKind.OUTLINE: "sanoma.E008",
    ProblemKind.OTHER: "sanoma.E009",
    ProblemKind.LIMIT: "sanoma.E014",
}


@dataclass(frozen=True)
class _Where:
    """A place in a file: what a check message shows before its id (`file:line`)."""

    file: Path
    line: int | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}" if self.line else str(self.file)


def check_config(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """Resolve the config as the worker would (root, fakes, app version) and report what stops it."""
    if app_configs is not None and not any(app.name == "runs" for app in app_configs):
        return []
    root = Path(settings.SANOMA_ROOT)
    if not root.is_dir():
        message = f"the config root {root} is not a folder"
        return [Error(message, hint=_HINTS["sanoma.E001"], obj=_Where(root), id="sanoma.E001")]
    try:
        resolved = load_site_config(for_check=True)  # the command's own get_config takes it
    except ConfigError as err:
        # One line per problem, however many workflows share it.
        unique = list({str(problem): problem for problem in err.problems}.values())
        if settings.SANOMA_PROFILE != "production" and _only_fakes_missing(root):
            return [_fakes_only_warning(root, problem) for problem in unique]
        return [_problem_error(root, problem) for problem in unique]
    except Exception as err:  # the root's package itself failed to import, or resolving broke
        where = _failure_place(err, root)
        package = where is not None and where.file == root / "__init__.py"
        check_id = "sanoma.E004" if package else "sanoma.E009"
        what = "the config root's __init__.py does not import" if package else "the config cannot be resolved"
        message = f"{what}: {type(err).__name__}: {err}"
        return [Error(message, hint=_HINTS[check_id], obj=where or _Where(root), id=check_id)]
    return _policy_checks(root, resolved) + announce_link_problems(resolved, where=_Where(root / "sanoma_config.py"))


def _policy_checks(root: Path, resolved: Any) -> list[CheckMessage]:
    """Once the config resolves, every operation is known (the layers' own included): sanoma.E003
    for an action or operation a Cedar policy names that none is; sanoma.E012 (W012) for an
    `@approve` naming nobody of the site (see runs.policies.approvers)."""
    if not isinstance(resolved.policy, CedarPolicy):
        return []
    found: list[CheckMessage] = [_problem_error(root, problem)
                                 for problem in resolved.policy.unknown_names([*resolved.ops, *ENGINE_OPS])]
    found += [_problem_error(root, problem) for problem in resolved.policy.unknown_input_fields(resolved.ops)]
    for item in approver_problems(resolved.policy, root=root, connectors=resolved.connectors):
        problem = item.problem
        message = f"invalid policy: {str(problem).partition(': ')[2]}"
        where = _Where(root / problem.file, problem.line) if problem.file else _Where(root)
        kind = Error if item.serious else Warning
        found.append(kind(message, hint=_HINTS["sanoma.E012"], obj=where,
                          id="sanoma.E012" if item.serious else "sanoma.W012"))
    return found


def _problem_error(root: Path, problem: Problem) -> Error:
    check_id = _CHECK_IDS[problem.kind]
    message = str(problem)
    if problem.kind is ProblemKind.WORKFLOW_IMPORT:
        relative, _, detail = message.partition(": ")
        message = f"{relative} does not import: {detail}"
    elif problem.kind is ProblemKind.POLICY:
        message = f"invalid policy: {message.partition(': ')[2] or message}"
    if problem.file is not None:
        where = _Where(root / problem.file, problem.line)
    elif problem.kind is ProblemKind.ROOT:
        where = _Where(root)
    else:
        where = _Where(root / "sanoma_config.py")
    return Error(message, hint=problem.hint or _HINTS[check_id], obj=where, id=check_id)


def _only_fakes_missing(root: Path) -> bool:
    """Whether the config, refused on real drivers, resolves on its fakes.

    A config whose connectors have fakes but no drivers yet is how scenarios are written first, and
    `manage.py behave` runs on fakes whatever SANOMA_FAKES says: its problems are warnings then
    (errors in production, where a worker must run on drivers).
    """
    if settings.SANOMA_FAKES == "instance":
        return False
    try:
        load_config(root, fakes="instance", fake_dir=None, app_version=settings.SANOMA_APP_VERSION)
    except Exception:
        return False
    return True


def _fakes_only_warning(root: Path, problem: Problem) -> Warning:
    error = _problem_error(root, problem)
    return Warning(
        f"{error.msg} (a worker on real drivers refuses the config; on fakes it runs)",
        hint="Add the driver, or run on the fakes with SANOMA_FAKES=instance as scenarios do.",
        obj=error.obj,
        id=str(error.id).replace(".E", ".W", 1),
    )


def _failure_place(err: BaseException | None, root: Path) -> _Where | None:
    """The last place inside the config root where `err` was raised (a SyntaxError: its own place)."""
    if err is None:
        return None
    if isinstance(err, SyntaxError) and err.filename and _is_inside(Path(err.filename), root):
        return _Where(Path(err.filename), err.lineno)
    frames: Iterable[traceback.FrameSummary] = traceback.extract_tb(err.__traceback__)
    inside = [frame for frame in frames if _is_inside(Path(frame.filename), root)]
    return _Where(Path(inside[-1].filename), inside[-1].lineno) if inside else None


def _is_inside(file: Path, root: Path) -> bool:
    try:
        return file.resolve().is_relative_to(root.resolve())
    except OSError:
        return False


def check_deployment(app_configs: Sequence[AppConfig] | None = None, **kwargs: Any) -> list[CheckMessage]:
    """With --deploy: the development secret key is an error, the development profile a warning."""
    found: list[CheckMessage] = []
    if str(settings.SECRET_KEY).startswith("django-insecure-"):
        found.append(
            Error(
                "the built-in development secret key is in use: DJANGO_SECRET_KEY is not set",
                hint="Set DJANGO_SECRET_KEY to a long random value "
                "(python -c 'import secrets; print(secrets.token_urlsafe(50))') and DJANGO_ENV=production.",
                obj="DJANGO_SECRET_KEY",
                id="sanoma.E010",
            )
        )
    if settings.SANOMA_PROFILE != "production":
        found.append(
            Warning(
                "the production profile is off: HTTPS redirects, secure cookies and HSTS are not turned on",
                hint="Set DJANGO_ENV=production (with DJANGO_SECRET_KEY and DJANGO_ALLOWED_HOSTS).",
                obj="DJANGO_ENV",
                id="sanoma.W011",
            )
        )
    return found
