"""Reads of the credentials: statuses (never values), who may see them, a secret's value for the
data files' `secret("NAME")`, and the log of changes."""
from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from changes.credentials.declared import Variable, VariableStatus, declared_names, evaluate, has_value
from changes.credentials.errors import CredentialCode
from changes.credentials.models import CredentialChange
from changes.credentials.runtime import cached_values, read_stored
from changes.selectors import declared_resources
from connectors.errors import SanomaError
from connectors.operations import Connector
from runs.approvals.permissions import Principal, is_operator, permission_denied, principal_of
from runs.config.registry import get_config

UNKNOWN_CREDENTIAL = CredentialCode.UNKNOWN_CREDENTIAL
SECRET_MISSING = CredentialCode.SECRET_MISSING
MANAGE = "credentials.manage_credentials"
VIEW = "credentials.view_credential"
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,127}$")


def connectors() -> list[Connector]:
    """The config's connectors that declare an environment."""
    return [c for c in get_config().connectors if isinstance(c, Connector) and c.environment is not None]


def credential_statuses(*, among: Sequence[Connector] | None = None) -> list[VariableStatus]:
    """Every declared variable once, by connector in the config's order, with its status and source.

    A variable a data file names (`secret("NAME")`) is needed whatever its connector's model says:
    with no value it is `missing`, naming the resources that need it (apply would fail them). A
    variable two connectors declare (GITHUB_TOKEN: the GitHub connector and the change workflow's
    remote) is one value serving both: listed once, naming both, with the graver status."""
    stored = read_stored()
    chosen = connectors() if among is None else [c for c in among if c.environment is not None]
    needs = secrets_needed() if chosen else {}
    found = []
    for connector in chosen:
        for status in evaluate(connector, environ=os.environ, stored=stored):
            where = tuple(needs.get(status.name, ()))
            if where and status.status == "not_set" and status.source == "none":
                status = replace(status, status="missing", problem=f"a data file needs it: {', '.join(where)}")
            found.append(replace(status, needed_by=where, used_by=(status.connector,)))
    return _once_each(found)


# The graver status of a variable two connectors declare: one's refusal or need is the value's.
_GRAVITY = {"invalid": 0, "missing": 1, "set": 2, "not_set": 3}


def _once_each(statuses: list[VariableStatus]) -> list[VariableStatus]:
    """One status a variable, where the first connector declaring it puts it, naming every user."""
    by_name: dict[str, list[VariableStatus]] = {}
    for status in statuses:
        by_name.setdefault(status.name, []).append(status)
    merged = []
    for same in by_name.values():
        if len(same) == 1:
            merged.append(same[0])
            continue
        users = tuple(s.connector for s in same)
        gravest = min(same, key=lambda s: _GRAVITY[s.status])
        described = tuple(f"{s.connector}: {s.description}" for s in same if s.description)
        problem = gravest.problem
        if problem and gravest.status == "invalid" and not problem.startswith("stored, but"):
            problem = f"{gravest.connector}'s check: {problem}"  # the value is one; whose check refused it
        merged.append(replace(gravest, connector=", ".join(users), used_by=users, description="; ".join(described),
                              descriptions=described, problem=problem))
    return merged


def secrets_needed() -> dict[str, list[str]]:
    """Each secret the data files name, with where: `resources/webhooks.py:5 (orders_hook)`. Data
    files that cannot be read need nothing here (their problems are the resources page's)."""
    try:
        resources = declared_resources().plain()["resources"]
    except Exception:  # no root, or a config that does not resolve: no data files to read
        return {}
    needs: dict[str, list[str]] = {}
    for resource in resources:
        for name in _secrets_in(resource["values"]):
            needs.setdefault(name, []).append(f"{resource['file']}:{resource['line']} ({resource['name']})")
    return needs


def _secrets_in(value: Any) -> list[str]:
    """The names of `{"secret": NAME}` anywhere in a declared value."""
    if isinstance(value, dict):
        if set(value) == {"secret"} and isinstance(value["secret"], str):
            return [value["secret"]]
        return [name for item in value.values() for name in _secrets_in(item)]
    if isinstance(value, list | tuple):
        return [name for item in value for name in _secrets_in(item)]
    return []


def declared(name: str) -> list[Variable]:
    """The declarations of `name` (usually one connector's); refused (`unknown_credential`) when none
    declares it, listing the declared names. A name that does not look like a variable's is not
    repeated: it may be a value typed in the wrong place."""
    names = declared_names(connectors())
    if name in names:
        return names[name]
    listed = ", ".join(sorted(names)) or "none (no connector declares an environment)"
    said = name if isinstance(name, str) and _NAME.match(name) else "that name"
    raise SanomaError(f"No connector declares {said}: the declared variables are {listed}",
                      code=UNKNOWN_CREDENTIAL, data={"declared": sorted(names)})


def can_view(principal: Principal) -> bool:
    """May see the credentials' statuses: operators, holders of the view or manage permission, superusers."""
    return (principal.is_superuser or principal.has_global(MANAGE) or principal.has_global(VIEW)
            or is_operator(principal))


def can_manage(principal: Principal) -> bool:
    """May set and clear credentials: holders of `credentials.manage_credentials` (and superusers)."""
    return principal.is_superuser or principal.has_global(MANAGE)


def check_can_view(who: Any) -> Principal:
    principal = principal_of(who)
    if not can_view(principal):
        raise permission_denied(f"{principal.id} may not see the credentials: it takes {VIEW}, {MANAGE} or "
                                "an operator", user=principal.id)
    return principal


def secret_value(name: str) -> str:
    """The value of a declared variable, as a driver would get it (environment, stored, default).

    For `secret("NAME")` in data files: refused, naming it, when no connector declares `name`
    (`unknown_credential`) or when it has no value (`secret_missing`)."""
    variables = declared(name)
    from_env = os.environ.get(name, "")
    if from_env != "":
        return from_env
    stored = cached_values().get(name)
    if isinstance(stored, str):
        return stored
    for variable in variables:
        if has_value(variable.default):
            return str(variable.default)
    owners = ", ".join(v.connector for v in variables)
    why = f": the stored value cannot be used ({stored.reason})" if stored is not None else ""
    raise SanomaError(
        f"The secret {name} ({owners}: {variables[0].description or 'no description'}) is missing{why}; set it in "
        f"the environment or with `manage.py credentials set {name}`",
        code=SECRET_MISSING, data={"name": name},
    )


def recent_changes(*, limit: int = 50) -> list[CredentialChange]:
    """The latest sets and clears, newest first (who and when; never a value)."""
    return list(CredentialChange.objects.order_by("-id")[:limit])
