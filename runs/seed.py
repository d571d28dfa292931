"""Seeding people and groups: who a company (or the demo) has, declared and applied idempotently.

`seed_person` and `seed_group` are declarative: each call makes the user (or group) exactly what it
declares, in one transaction. Running one again with the same arguments changes nothing; with other
arguments it updates the existing row, never adds a second one. A permission is named
`app_label.codename` (`runs.start_workflow`); a name that is malformed or names no permission is
refused with an `InvalidInput` naming it, before anything is written.

`seed_declared` seeds the people and groups a company declares (`person(...)`, `group(...)`), as the
demo does: each with a password. `seed_from_datafiles` does it for what the data files declare (the
demo's people are the company's own), and `people_from_datafiles` lists them.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction

from connectors.errors import InvalidInput
from connectors.resources import Declaration, Ref
from runs.config.datafiles import DataFiles
from runs.declarations import GROUP, PERSON, expand_permissions

DEMO_SUPERUSER = "admin"


def permissions(names: Iterable[str]) -> list[Permission]:
    """The permissions named `app_label.codename`; every bad name is listed in one `InvalidInput`."""
    names = list(names)
    found: list[Permission] = []
    bad: list[str] = []
    for name in names:
        app_label, dot, codename = str(name).partition(".")
        if not (dot and app_label and codename) or "." in codename:
            bad.append(f"{name!r} (a permission is named app_label.codename, e.g. runs.start_workflow)")
            continue
        perm = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
        if perm is None:
            bad.append(f"{name!r} (no permission {codename!r} in app {app_label!r})")
            continue
        found.append(perm)
    if bad:
        raise InvalidInput("Unknown permission: " + "; ".join(bad), data={"permissions": [str(n) for n in names]})
    return found


def seed_group(*, name: str, perms: Sequence[str] = ()) -> Group:
    """The group `name` with exactly the permissions `perms` (created if missing)."""
    if not name:
        raise InvalidInput("A group needs a name")
    with transaction.atomic():
        wanted = permissions(perms)
        group, _ = Group.objects.get_or_create(name=name)
        group.permissions.set(wanted)
    return group


def seed_person(
    *,
    username: str,
    groups: Sequence[str] = (),
    perms: Sequence[str] = (),
    superuser: bool = False,
    staff: bool = False,
    password: str | None = None,
    email: str | None = None,
    name: str | None = None,
) -> Any:
    """The user `username`, exactly as declared: in exactly `groups` (created if missing; their own
    permissions are left as they are), with exactly the direct permissions `perms`, a superuser or
    not, staff (may log in to the admin) if `staff` or `superuser`, and the password `password`
    (None: no password login); `email` and `name` (first and last name, split at the first space)
    when given, else left as they are. One transaction; returns the user, freshly read."""
    if not username:
        raise InvalidInput("A person needs a username")
    if isinstance(groups, str) or isinstance(perms, str):
        raise InvalidInput("groups and perms are sequences of names, not one string")
    User = get_user_model()
    with transaction.atomic():
        wanted_perms = permissions(perms)  # checked first: a bad name writes nothing
        wanted_groups = [Group.objects.get_or_create(name=name)[0] for name in dict.fromkeys(groups)]
        user, _ = User.objects.get_or_create(username=username)
        user.is_superuser = superuser
        user.is_staff = staff or superuser
        user.is_active = True
        if email is not None:
            user.email = email
        if name is not None:
            first, _, last = name.strip().partition(" ")
            user.first_name, user.last_name = first[:150], last.strip()[:150]
        if password is None:
            user.set_unusable_password()
        elif not user.check_password(password):  # an unchanged password is not rehashed
            user.set_password(password)
        user.save()
        user.groups.set(wanted_groups)
        user.user_permissions.set(wanted_perms)
    return User.objects.get(pk=user.pk)


@dataclass(frozen=True)
class DeclaredPerson:
    """A person as the company declares them (`person(...)`), with their groups' names."""

    username: str
    groups: tuple[str, ...]
    staff: bool
    superuser: bool
    email: str = ""
    name: str = ""


def _group_name(value: Any) -> str:
    """A person's group: a group declaration (its name) or the name itself."""
    if isinstance(value, Declaration):
        return str(value.values["name"])
    return str(value)


def declared_people(declarations: Iterable[Any], *, superuser: str = DEMO_SUPERUSER) -> list[DeclaredPerson]:
    """The people among `declarations` (`sanoma.person`), `superuser` first (added when none is
    declared by that name), then by username."""
    people = [DeclaredPerson(str(d.values["username"]), tuple(_group_name(g) for g in d.values.get("groups", [])),
                             bool(d.values.get("staff")), d.values["username"] == superuser,
                             str(d.values.get("email", "")), str(d.values.get("name", "")))
              for d in declarations if isinstance(d, Declaration) and d.type == PERSON.key]
    if not any(p.superuser for p in people):
        people.append(DeclaredPerson(superuser, (), True, True))
    return sorted(people, key=lambda p: (not p.superuser, p.username))


def seed_declared(declarations: Iterable[Any], *, superuser: str = DEMO_SUPERUSER) -> list[Any]:
    """The demo's people: every group among `declarations` (`sanoma.group`, also those a person
    names) with the permissions it declares (roles expanded), every person exactly as declared
    (groups, staff, email, name) with their username as password (a local demo, never a
    deployment), and `superuser` a superuser. Idempotent; one transaction; the users, `superuser`
    first."""
    declarations = list(declarations)
    groups: dict[str, list[str]] = {}
    for d in declarations:
        if not isinstance(d, Declaration):
            continue
        found = [d] if d.type == GROUP.key else [g for g in d.values.get("groups", []) if isinstance(g, Declaration)]
        for group in found:
            groups[str(group.values["name"])] = expand_permissions(list(group.values.get("permissions", [])))
    with transaction.atomic():
        for name, perms in groups.items():
            seed_group(name=name, perms=perms)
        return [seed_person(username=p.username, groups=p.groups, superuser=p.superuser, staff=p.staff,
                            password=p.username, email=p.email, name=p.name)
                for p in declared_people(declarations, superuser=superuser)]


def declared_in(read: DataFiles) -> list[Declaration]:
    """The people and groups the data files declare, as `person(...)` and `group(...)` give them,
    each person's groups by name."""
    by_id = read.by_id()
    found = []
    for declared in read.resources:
        if declared.type not in (PERSON.key, GROUP.key):
            continue
        values = dict(declared.values)
        if declared.type == PERSON.key:
            values["groups"] = [str(by_id[g.id].values["name"]) if isinstance(g, Ref) and g.id in by_id else str(g)
                                for g in values.get("groups", [])]
        found.append(Declaration(type=declared.type, values=values))
    return found


def people_from_datafiles(read: DataFiles, *, superuser: str = DEMO_SUPERUSER) -> list[DeclaredPerson]:
    """The people the data files declare, with their groups' names; `superuser` first, added when no
    file declares them."""
    return declared_people(declared_in(read), superuser=superuser)


def seed_from_datafiles(read: DataFiles, *, superuser: str = DEMO_SUPERUSER) -> list[Any]:
    """Every group and person the data files declare, seeded as `seed_declared` seeds them (each
    person's username their password, `superuser` a superuser): the demo's people. Idempotent; one
    transaction; the users, `superuser` first."""
    return seed_declared(declared_in(read), superuser=superuser)
