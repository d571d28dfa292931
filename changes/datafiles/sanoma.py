"""What a data file imports from sanoma: `secret`, `person` and `group`.

    from changes.datafiles import sanoma                           # sanoma.person(...), sanoma.group(...)
    from changes.datafiles.sanoma import group, person, secret     # or the names themselves

Data files are read, never run (see `changes.datafiles.reader`); these functions exist so a data
file is also valid Python an editor can check, and they give what the reader gives: a `Secret`,
a `Declaration` of a `sanoma.person` or a `sanoma.group`. People and groups are sanoma's own
resource types (the vendor `sanoma`): they become Django users and groups.
"""
from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, Field

from connectors.resources import Declaration, ResourceType, Secret, define_resource

SECRET_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")


class PersonFields(BaseModel):
    username: str = Field(min_length=1, max_length=150, pattern=r"^[\w.@+-]+$")
    email: str = Field(default="", pattern=r"^$|^[^@\s]+@[^@\s]+\.[^@\s]+$")
    name: str = ""
    groups: list[str] = Field(default_factory=list)


class GroupFields(BaseModel):
    name: str = Field(min_length=1, max_length=150)


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
    find=lambda desired: desired["name"],
    description="A group of people: a Django group",
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
    return PERSON(**values)


def group(**values: Any) -> Declaration:
    return GROUP(**values)


def local(**values: Any) -> Declaration:
    """The live config root on this machine as a deploy target: `sanoma.local(name="live", branch="main")`.
    Its revision is not declared: it is where the branch points at the repository's remote."""
    return LOCAL(**values)


__all__ = ["BUILTIN_TYPES", "GROUP", "LOCAL", "PERSON", "group", "local", "person", "secret"]
