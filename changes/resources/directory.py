"""Who the company has, as `manage.py people` shows it: the people and groups the data files
declare beside the site's users and groups, each with what they may do on the desk.

A person's desk access, the reasons in the order a sign-in meets them:
- `not applied`: a data file declares them and no apply made the account yet;
- `inactive`: the account is deactivated (an apply does that once no data file declares them);
- `no password`: the account has no usable password (an apply makes accounts without one: they
  sign in however the site lets them; `manage.py changepassword <username>` sets one);
- `not staff`: only staff sign in to the desk (`staff=True` in the data file, or the admin);
- `can sign in`: what they see there is their permissions (a superuser's: everything).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from changes.datafiles.sanoma import GROUP, PERSON
from changes.selectors import declared_resources
from connectors.resources import Ref
from runs.config.datafiles import DataFiles


@dataclass(frozen=True)
class PersonRow:
    username: str
    declared_at: str  # "resources/staff.py:12", "" when only the site has them
    account: str  # "active" | "inactive" | "not applied"
    staff: bool
    superuser: bool
    password: bool  # a usable password is set
    groups: list[str]
    permissions: list[str]  # every permission they hold, directly and through their groups
    desk: str  # "can sign in", or why not

    @property
    def can_sign_in(self) -> bool:
        return self.desk == "can sign in"


@dataclass(frozen=True)
class GroupRow:
    name: str
    declared_at: str
    exists: bool  # the site has it (an apply made it, or the admin)
    permissions: list[str]  # what the site's group holds
    declared_permissions: list[str] | None = None  # what the data file declares (None: not declared)
    members: list[str] = field(default_factory=list)


def desk_access(*, username: str, account: str, password: bool, staff: bool, superuser: bool) -> str:
    """"can sign in", or the first reason a sign-in to the desk fails (see the module's docstring)."""
    if account == "not applied":
        return "not applied yet (`manage.py apply` makes the account)"
    if account == "inactive":
        return "inactive (the account is deactivated)"
    if not password:
        return f"no password yet (an administrator sets one: `manage.py changepassword {username}`)"
    if not (staff or superuser):
        return "not staff (declare staff=True in the data file and apply, or tick Staff status in the admin)"
    return "can sign in"


def _permissions(holder: Any) -> list[str]:
    return sorted(f"{app}.{codename}" for app, codename in
                  holder.permissions.values_list("content_type__app_label", "codename"))


def people_and_groups(read: DataFiles | None = None) -> tuple[list[PersonRow], list[GroupRow]]:
    """Every person and group, declared or the site's, sorted by name."""
    read = read if read is not None else declared_resources()
    declared_people = {r.values["username"]: r for r in read.resources if r.type == PERSON.key}
    declared_groups = {r.values["name"]: r for r in read.resources if r.type == GROUP.key}
    by_id = read.by_id()
    users = {u.username: u for u in get_user_model().objects.prefetch_related("groups")}
    people: list[PersonRow] = []
    for username in sorted(set(declared_people) | set(users)):
        decl, user = declared_people.get(username), users.get(username)
        where = f"{decl.file}:{decl.line}" if decl is not None else ""
        if user is None:
            assert decl is not None
            in_groups = sorted(_group_name(g, by_id) for g in decl.values.get("groups", []))
            desk = desk_access(username=username, account="not applied", password=False, staff=False,
                               superuser=False)
            people.append(PersonRow(username, where, "not applied", bool(decl.values.get("staff")), False, False,
                                    in_groups, [], desk))
            continue
        account = "active" if user.is_active else "inactive"
        password = user.has_usable_password()
        people.append(PersonRow(
            username, where, account, user.is_staff, user.is_superuser, password,
            sorted(g.name for g in user.groups.all()), sorted(user.get_all_permissions()) if user.is_active else [],
            desk_access(username=username, account=account, password=password, staff=user.is_staff,
                        superuser=user.is_superuser)))
    site_groups = {g.name: g for g in Group.objects.prefetch_related("user_set")}
    groups: list[GroupRow] = []
    for name in sorted(set(declared_groups) | set(site_groups)):
        decl, group = declared_groups.get(name), site_groups.get(name)
        groups.append(GroupRow(
            name, f"{decl.file}:{decl.line}" if decl is not None else "", group is not None,
            _permissions(group) if group is not None else [],
            list(decl.values.get("permissions", [])) if decl is not None else None,
            sorted(u.username for u in group.user_set.all()) if group is not None else []))
    return people, groups


def _group_name(value: Any, by_id: dict[str, Any]) -> str:
    """A person's group as declared: a reference to a declared group (its `name`), or a name."""
    if isinstance(value, Ref) and value.id in by_id:
        return str(by_id[value.id].values["name"])
    return str(value)


def plain(people: list[PersonRow], groups: list[GroupRow]) -> dict[str, Any]:
    return {"people": [{**asdict(p), "can_sign_in": p.can_sign_in} for p in people],
            "groups": [asdict(g) for g in groups]}


__all__ = ["GroupRow", "PersonRow", "desk_access", "people_and_groups", "plain"]
