"""What a company declares with sanoma's own types: people, groups, this machine as a deploy
target, secrets kept out of the repo, and the wakeup that starts a stopped worker again.

Plain values (pydantic and `connectors.resources` only), so the front door (`runs.authoring`)
offers them without Django and without reaching up into `changes` or `wakeups`, which read them:

    from runs.authoring import group, person, secret        # a data file under resources/
    staff = group(name="staff")
    sam = person(username="sam", email="sam@acme.example", name="Sam Aalto", groups=[staff])

Data files are read, never run (see `runs.config.datafiles.reader`); these functions exist so a data
file is also valid Python an editor can check, and they give what the reader gives: a `Secret`, a
`Declaration` of a `sanoma.person`, `sanoma.group` or `sanoma.local`. People and groups become
Django users and groups. `wakeup(...)` goes in `sanoma_config.py`'s `wakeups` list.
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, Field, field_validator
from pydantic_core import PydanticCustomError

from connectors.resources import Declaration, ResourceType, Secret, define_resource

SECRET_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
WAKEUP_TYPES = ("sanoma.wakeup",)


class PersonFields(BaseModel):
    username: str = Field(min_length=1, max_length=150, pattern=r"^[\w.@+-]+$")
    email: str = Field(default="", pattern=r"^$|^[^@\s]+@[^@\s]+\.[^@\s]+$")
    name: str = ""
    groups: list[str] = Field(default_factory=list)
    # May sign in to the desk (the admin): Django's "staff status". What they see there and may do
    # is their groups' permissions.
    staff: bool = False


# Named roles a group may carry instead of (or beside) permissions: what the desk needs for a kind
# of work. Each is a set of `app_label.codename` permissions; `roles` lists them.
ROLES: dict[str, tuple[str, ...]] = {
    # Start any workflow (the desk's "Start" and the API's start; without it, only the workflows a
    # person was granted one by one in the admin).
    "starter": ("runs.start_workflow",),
    # See every run, its steps, approvals, ledger records and the workflows, on the desk.
    "viewer": ("runs.view_any_run", "runs.view_run", "runs.view_step", "runs.view_approval",
               "runs.view_ledgerrecord", "runs.view_workflowentry"),
    # A viewer who also operates: cancels runs, withdraws approvals, sends messages, reruns and
    # forks, pauses and unpauses; and reads the pages the health page and the alerts send an
    # operator to: the app versions, the worker wake-up and the schedules; and the runs retention
    # removed, with the export holding each.
    "operator": ("runs.view_any_run", "runs.view_run", "runs.view_step", "runs.view_approval",
                 "runs.view_ledgerrecord", "runs.view_workflowentry", "runs.operate_runs", "runs.send_message",
                 "runs.rerun_runs", "runs.pause", "runs.view_appversion", "wakeups.view_wakeuprow",
                 "wakeups.view_schedulestate", "runs.view_prunedrun"),
}
PERMISSION_NAME = re.compile(r"^[a-z_][a-z0-9_]*\.[a-z_][a-z0-9_]*$")


def site_permissions() -> frozenset[str]:
    """Every permission the site's models define, as `app_label.codename` (what `migrate` makes):
    read from Django's app registry when a group is read (never at import, so this module needs no
    Django), so a data file is checked before any database exists."""
    from django.apps import apps

    found: set[str] = set()
    for model in apps.get_models():
        opts = model._meta
        found.update(f"{opts.app_label}.{action}_{opts.model_name}" for action in opts.default_permissions)
        found.update(f"{opts.app_label}.{codename}" for codename, _ in opts.permissions)
    return frozenset(found)


def expand_permissions(names: list[str]) -> list[str]:
    """Roles replaced by their permissions; every name checked. Sorted, each once. Raises
    ValueError naming each unknown one, with what it may have meant."""
    known = site_permissions()
    wanted: set[str] = set()
    bad: list[str] = []
    for name in names:
        if name in ROLES:
            wanted.update(ROLES[name])
        elif name in known:
            wanted.add(name)
        else:
            close = difflib.get_close_matches(name, sorted(known | set(ROLES)), n=1, cutoff=0.75)
            if close:
                bad.append(f"{name!r}: did you mean {close[0]!r}?")
            else:
                bad.append(f"{name!r}" + ("" if PERMISSION_NAME.match(name) else
                                          " (a permission is written app_label.codename)"))
    if bad:
        raise ValueError(f"unknown permission {'; '.join(bad)}; a group carries permissions such as "
                         f"runs.operate_runs, or the roles {', '.join(ROLES)}")
    return sorted(wanted)


class GroupFields(BaseModel):
    name: str = Field(min_length=1, max_length=150)
    # The site permissions its members hold (`app_label.codename`, or a role of ROLES), e.g.
    # ["operator"] or ["runs.start_workflow", "runs.view_any_run"]; checked when read.
    permissions: list[str] = Field(default_factory=list)

    @field_validator("permissions")
    @classmethod
    def _known(cls, names: list[str]) -> list[str]:
        try:
            return expand_permissions(names)
        except ValueError as err:  # the message as it is, without pydantic's "Value error, "
            raise PydanticCustomError("unknown_permission", str(err)) from None


PERSON: ResourceType = define_resource(
    type="person", title="Person", identity="username", schema=PersonFields,
    fields={"groups": {"unordered": True, "references": "sanoma.group", "by": "name"}},
    find=lambda desired: desired["username"],
    # An account and its groups are who may do what: granting, changing and ending one is `access`.
    effects={"create": "access", "update": "access", "delete": "access"},
    description="Someone at the company: a Django user (deactivated, never deleted, once no file declares them)",
).bound("sanoma")
GROUP: ResourceType = define_resource(
    type="group", title="Group", identity="name", schema=GroupFields,
    fields={"permissions": {"unordered": True}},
    find=lambda desired: desired["name"],
    # Changing what its members may do on the site is access.
    effects={"update": "access"},
    description="A group of people: a Django group, with the site permissions its members hold",
).bound("sanoma")


class LocalHostFields(BaseModel):
    name: str = Field(min_length=1, max_length=100, pattern=r"^[a-z][a-z0-9_-]*$")
    branch: str = Field(default="main", min_length=1, max_length=200)
    revision: str = Field(default="", max_length=64)


LOCAL: ResourceType = define_resource(
    type="local", title="This machine", identity="name", schema=LocalHostFields,
    find=lambda desired: desired["name"],
    # Deploying new code is a change to what every workflow does.
    effects={"create": "write", "update": "write", "delete": "write"},
    host=True,
    description="The live config root on this machine, a git working tree: deploying checks the branch's "
                "revision out into it and starts the workers again on the new code",
).bound("sanoma")
BUILTIN_TYPES: dict[str, ResourceType] = {PERSON.key: PERSON, GROUP.key: GROUP, LOCAL.key: LOCAL}


def secret(name: str) -> Secret:
    """A value kept out of the repo, named like an environment variable: `secret("SHOP_WEBHOOK_SECRET")`."""
    if not isinstance(name, str) or not SECRET_NAME.match(name):
        raise ValueError(f"a secret's name is upper-case letters, digits and underscores; got {name!r}")
    return Secret(name)


def person(**values: Any) -> Declaration:
    """Someone at the company (a Django user): `person(username="sam", email=..., name=..., groups=[staff])`;
    `staff=True` lets them sign in to the desk."""
    return PERSON(**values)


def group(**values: Any) -> Declaration:
    """A group of people (a Django group): `group(name="finance")`; `permissions=["operator"]` (a role
    of ROLES, or `app_label.codename`) gives its members those site permissions, checked when read."""
    return GROUP(**values)


def local(**values: Any) -> Declaration:
    """The live config root on this machine as a deploy target: `local(name="live", branch="main")`.
    Its revision is not declared: it is where the branch points at the repository's remote."""
    return LOCAL(**values)


@dataclass(frozen=True)
class Wakeup:
    """A wakeup declared in `sanoma_config.py` (`wakeups = [wakeup(host="supervisor")]`): what starts
    the worker again after it stopped itself when idle. The `wakeups` app gives it its register half."""

    host: str = "supervisor"
    id: str = "sanoma.wakeup"
    type: str = "sanoma.wakeup"

    def __post_init__(self) -> None:
        for name in ("host", "id"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"wakeup({name}=...) must be non-empty text; got {value!r}")
        if self.type not in WAKEUP_TYPES:
            raise ValueError(f"wakeup type {self.type!r} is not one sanoma has: {', '.join(WAKEUP_TYPES)}")


def wakeup(*, host: str = "supervisor", id: str = "sanoma.wakeup") -> Wakeup:
    """The built-in wakeup: `manage.py supervise` (or a systemd timer) starts the worker again in time."""
    return Wakeup(host=host, id=id)


__all__ = ["BUILTIN_TYPES", "GROUP", "LOCAL", "PERSON", "ROLES", "Wakeup", "expand_permissions", "site_permissions",
           "group", "local", "person", "secret", "wakeup"]
