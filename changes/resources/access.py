"""Granting site permissions to a group from the console (`manage.py people grant|revoke`).

Where grants belong: in the data files. A group a data file declares carries its permissions there
(`sanoma.group(name="ops", permissions=["operator"])`), so the repository stays the truth: the plan
shows a grant before it is made, the policy decides it (a group's update is `access`), the ledger
records who applied it, and drift shows one made behind the files' back (the next apply takes it
back). So a grant to a declared group is refused here, naming its file and line.

The console grants only to a group the site keeps outside the repository (made in the admin, or
by a single sign-on): a site-level act, logged with who did it at the console.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from django.contrib.auth.models import Group, Permission
from django.db import transaction

from changes.datafiles.sanoma import GROUP, expand_permissions
from changes.selectors import declared_resources
from connectors.errors import ErrorCode, InvalidInput, SanomaError
from runs.config.datafiles import DataFiles

log = logging.getLogger("sanoma.people")


@dataclass(frozen=True)
class Grant:
    group: str
    permissions: list[str]  # expanded, `app_label.codename`


def check_grant(*, group: str, names: Sequence[str], read: DataFiles | None = None) -> Grant:
    """Validate a grant (or a revoke) without writing: known permissions or roles, a group the site
    has and no data file declares."""
    if not names:
        raise InvalidInput("Name at least one permission (app_label.codename) or role")
    try:
        wanted = expand_permissions(list(names))
    except ValueError as err:
        raise InvalidInput(str(err)[0].upper() + str(err)[1:], data={"permissions": list(names)}) from None
    read = read if read is not None else declared_resources()
    declared = next((r for r in read.resources if r.type == GROUP.key and r.values["name"] == group), None)
    if declared is not None:
        raise SanomaError(
            f"The group {group} is declared in {declared.file}:{declared.line}: grant there (permissions=[...]) and "
            f"apply, so the repository stays the truth; a grant made here would be drift, taken back by the next "
            f"apply", code=ErrorCode.INVALID_INPUT, data={"group": group, "file": declared.file,
                                                          "line": declared.line})
    if not Group.objects.filter(name=group).exists():
        raise SanomaError(
            f"The site has no group {group}: declare it in a data file (sanoma.group(name=\"{group}\", "
            f"permissions=[...])) and apply, or make it in the admin", code=ErrorCode.NOT_FOUND, data={"group": group})
    return Grant(group=group, permissions=wanted)


def do_grant(grant: Grant, *, by: str, revoke: bool = False) -> list[str]:
    """Add (or take away) the permissions; the group's permissions after, sorted."""
    with transaction.atomic():
        group = Group.objects.select_for_update().get(name=grant.group)
        rows = [p for p in Permission.objects.select_related("content_type")
                .filter(codename__in=[n.partition(".")[2] for n in grant.permissions])
                if f"{p.content_type.app_label}.{p.codename}" in grant.permissions]
        missing = sorted(set(grant.permissions) - {f"{p.content_type.app_label}.{p.codename}" for p in rows})
        if missing:
            raise SanomaError(f"No permission {', '.join(missing)} in the site's database: run `manage.py migrate`",
                              code=ErrorCode.INVALID_INPUT, data={"permissions": missing})
        (group.permissions.remove if revoke else group.permissions.add)(*rows)
        held = sorted(f"{app}.{codename}" for app, codename in
                      group.permissions.values_list("content_type__app_label", "codename"))
    log.info("%s %s %s %s %s: the group now holds %s", by, "revoked" if revoke else "granted",
             ", ".join(grant.permissions), "from" if revoke else "to", grant.group, ", ".join(held) or "nothing")
    return held


def grant(*, group: str, names: Sequence[str], by: str, revoke: bool = False) -> list[str]:
    return do_grant(check_grant(group=group, names=names), by=by, revoke=revoke)


__all__ = ["Grant", "check_grant", "do_grant", "grant"]
