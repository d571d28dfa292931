"""sanoma's own connector: `sanoma.person` and `sanoma.group` are the site's Django users and
groups, and `sanoma.resources.read` reads the data files. Drift and apply call them through `ctx`
like any vendor's operations, so the policy decides on them and the ledger records them.

- `sanoma.person.import|read`: an active user by username (an inactive one is `gone`); values
  `{username, email, name, groups, staff}` (`name` is the first and last name joined; groups
  sorted; `staff` Django's staff status: may sign in to the desk).
- `sanoma.person.create`: a new user with no usable password (they sign in however the site lets
  them), or an inactive one made active again; `update`: the changed fields; `delete`:
  deactivation, never deletion (their runs, approvals and ledger records keep naming them).
- `sanoma.group.*`: a group by name, with the site permissions its members hold
  (`permissions`, `app_label.codename`, sorted): an update sets them (an `access` call).
- `sanoma.local.*` and `sanoma.source.resolve`: the hosts, as the life of a change installs their
  drivers (`changes.resources.hosts`).
- `sanoma.resources.read` (`read`): the data files as the reader finds them, secrets by name only,
  and what earlier applies created (`managed`).
- `sanoma.resources.record` (`write`): apply's note, after a create or a delete succeeded, that
  sanoma made (`created`) or removed (`deleted`) an instance; only what it made may a plan delete.
  It runs inline, on the worker's own connection, like every `sanoma` operation.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db import transaction
from pydantic import BaseModel, Field

from changes.datafiles.sanoma import GROUP, LOCAL, PERSON
from changes.resources import hosts, managed
from connectors.drivers import CallContext, Driver, define_driver
from connectors.errors import DriverError
from connectors.operations import Connector, define_connector, op, resource_types, with_setup
from runs.config.datafiles import read_datafiles

VENDOR = "sanoma"


class ReadInput(BaseModel):
    model_config = {"extra": "forbid"}


class RecordInput(BaseModel):
    model_config = {"extra": "forbid"}

    type: str = Field(min_length=3, pattern=r"^[a-z][a-z0-9_-]*\.[a-z][a-z0-9_]*$",
                      description="<vendor>.<type>")
    import_id: str = Field(min_length=1, max_length=500)
    action: Literal["created", "deleted"]


class Recorded(BaseModel):
    type: str
    import_id: str
    action: str
    managed: bool


class ReadOutput(BaseModel):
    files: list[str] = Field(default_factory=list)
    resources: list[dict[str, Any]] = Field(default_factory=list)
    problems: list[dict[str, Any]] = Field(default_factory=list)
    managed: list[dict[str, Any]] = Field(default_factory=list)


def builtin_connector() -> Connector:
    """The `sanoma` connector, its driver not yet attached (see `connector_for`)."""
    return define_connector(
        VENDOR,
        {"resources": {
            "read": op(effect="read", input=ReadInput, output=ReadOutput, idempotent=True,
                       description="Read the data files: the declared resources, secrets by name"),
            "record": op(effect="write", input=RecordInput, output=Recorded, idempotent=True,
                         target=lambda i: f"{i.type}/{i.import_id}",
                         description="Note that an apply created (or deleted) an instance at a vendor"),
        }, **hosts.operations()},
        types=[PERSON, GROUP, LOCAL],
    )


def Group() -> Any:  # the model, through the registry: this module loads before the models do
    return apps.get_model("auth", "Group")


def _name_parts(name: str) -> tuple[str, str]:
    first, _, last = name.strip().partition(" ")
    return first[:150], last.strip()[:150]


def _person(user: Any) -> dict[str, Any]:
    name = " ".join(part for part in (user.first_name, user.last_name) if part)
    return {"id": user.username, "handle": str(user.pk),
            "values": {"username": user.username, "email": user.email, "name": name,
                       "groups": sorted(user.groups.values_list("name", flat=True)), "staff": user.is_staff}}


def _gone(id: str) -> dict[str, Any]:
    return {"id": id, "gone": True}


def _active(username: str) -> Any:
    return get_user_model().objects.filter(username=username, is_active=True).first()


def _groups(names: Sequence[str]) -> list[Any]:
    found = {g.name: g for g in Group().objects.filter(name__in=list(names))}
    missing = [n for n in names if n not in found]
    if missing:
        raise DriverError(f"no group {', '.join(missing)}: declare it (sanoma.group) so apply creates it first",
                          retryable=False, status=422, vendor_code="unknown_group")
    return [found[n] for n in names]


def _set(user: Any, values: Mapping[str, Any]) -> None:
    if "email" in values:
        user.email = values["email"]
    if "name" in values:
        user.first_name, user.last_name = _name_parts(values["name"])
    if "staff" in values:
        user.is_staff = bool(values["staff"])
    user.save()
    if "groups" in values:
        user.groups.set(_groups(values["groups"]))


def person_look(i: Any, c: CallContext) -> dict[str, Any]:
    user = _active(i.id)
    return _gone(i.id) if user is None else _person(user)


def person_create(i: Any, c: CallContext) -> dict[str, Any]:
    username = PERSON.import_id(i.desired)
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.select_for_update().filter(username=username).first()
        if user is not None and user.is_active:
            raise DriverError(f"the person {username} already exists", retryable=False, status=409,
                              vendor_code="exists")
        if user is None:
            user = User(username=username)
            user.set_unusable_password()
        user.is_active = True
        _set(user, {"email": "", "name": "", "groups": [], "staff": False, **i.desired})
    return _person(user)


def person_update(i: Any, c: CallContext) -> dict[str, Any]:
    with transaction.atomic():
        user = _active(i.id)
        if user is None:
            raise DriverError(f"no person {i.id}", retryable=False, status=404, vendor_code="not_found")
        _set(user, i.changes)
    return _person(user)


def person_delete(i: Any, c: CallContext) -> dict[str, Any]:
    """Deactivation: the account stays (and its history), it can no longer sign in."""
    get_user_model().objects.filter(username=i.id, is_active=True).update(is_active=False)
    return _gone(i.id)


def _group(group: Any) -> dict[str, Any]:
    held = sorted(f"{app}.{codename}" for app, codename in
                  group.permissions.values_list("content_type__app_label", "codename"))
    return {"id": group.name, "handle": str(group.pk), "values": {"name": group.name, "permissions": held}}


def _grant(group: Any, names: Sequence[str]) -> None:
    """The group holds exactly these permissions (`app_label.codename`; roles were expanded when read)."""
    rows = {f"{p.content_type.app_label}.{p.codename}": p for p in
            apps.get_model("auth", "Permission").objects.select_related("content_type")
            .filter(codename__in=[n.partition(".")[2] for n in names])}
    missing = [n for n in names if n not in rows]
    if missing:  # declared right (the reader checked), but not in this database: a migration not run
        raise DriverError(f"no permission {', '.join(missing)} in the site's database: run `manage.py migrate`",
                          retryable=False, status=422, vendor_code="unknown_permission")
    group.permissions.set([rows[n] for n in names])


def group_look(i: Any, c: CallContext) -> dict[str, Any]:
    group = Group().objects.filter(name=i.id).first()
    return _gone(i.id) if group is None else _group(group)


def group_create(i: Any, c: CallContext) -> dict[str, Any]:
    name = GROUP.import_id(i.desired)
    with transaction.atomic():
        group, made = Group().objects.get_or_create(name=name)
        if not made:
            raise DriverError(f"the group {name} already exists", retryable=False, status=409, vendor_code="exists")
        _grant(group, i.desired.get("permissions", []))
    return _group(group)


def group_update(i: Any, c: CallContext) -> dict[str, Any]:
    """Its name is its identity: what changes in place is the permissions its members hold."""
    with transaction.atomic():
        group = Group().objects.filter(name=i.id).first()
        if group is None:
            raise DriverError(f"no group {i.id}", retryable=False, status=404, vendor_code="not_found")
        if "permissions" in i.changes:
            _grant(group, i.changes["permissions"])
    return _group(group)


def group_delete(i: Any, c: CallContext) -> dict[str, Any]:
    Group().objects.filter(name=i.id).delete()
    return _gone(i.id)


def reader(root: Any, connectors: Sequence[Connector]) -> Callable[[Any, CallContext], dict[str, Any]]:
    types = resource_types(list(connectors))

    def read(i: Any, c: CallContext) -> dict[str, Any]:
        if root is None:
            return {"files": [], "resources": [], "managed": managed.rows(), "problems": [
                {"file": "", "line": 0, "column": 0, "resource": None,
                 "message": "the config has no root folder, so it has no data files: there is nothing to compare"}]}
        found = read_datafiles(root, types)
        return {**found.plain(), "managed": managed.rows()}

    return read


def record(i: Any, c: CallContext) -> dict[str, Any]:
    if i.action == "created":
        managed.created(i.type, i.import_id, c.run_id)
    else:
        managed.deleted(i.type, i.import_id)
    return {"type": i.type, "import_id": i.import_id, "action": i.action, "managed": i.action == "created"}


def declared_names(root: Any, connectors: Sequence[Any]) -> tuple[list[str], list[str]]:
    """The usernames and the group names the data files under `root` declare (`sanoma.person`,
    `sanoma.group`), read against `connectors`' resource types: who a policy may name before an
    apply made them (`runs.policies.approvers`)."""
    if root is None:
        return [], []
    found = read_datafiles(root, [c for c in connectors if isinstance(c, Connector)])
    people = [r.values["username"] for r in found.resources if r.type == PERSON.key]
    groups = [r.values["name"] for r in found.resources if r.type == GROUP.key]
    return people, groups


def connector_for(root: Any, connectors: Sequence[Connector]) -> Connector:
    """The `sanoma` connector with its driver: the database (people, groups, the managed table) and
    the data files under `root` read against `connectors`' types. It has no fake: it is sanoma's own."""
    connector = builtin_connector()

    def make_driver() -> Driver:
        return define_driver(connector, {
            "resources": {"read": reader(root, [*connectors, connector]), "record": record},
            "person": {"import": person_look, "read": person_look, "create": person_create,
                       "update": person_update, "delete": person_delete},
            "group": {"import": group_look, "read": group_look, "create": group_create,
                      "update": group_update, "delete": group_delete},
            **hosts.functions(root, lambda: connectors),
        })

    return with_setup(connector, driver=make_driver)


__all__ = ["VENDOR", "ReadOutput", "builtin_connector", "connector_for", "declared_names"]
