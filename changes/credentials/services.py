"""Setting and clearing connectors' stored credentials: keyword-only arguments, one transaction each.

A value is checked by its connector's environment model before it is stored, encrypted (Fernet), and
never repeated: not in an error, not in a log, not in the change's record (who, what, when). On
PostgreSQL the change NOTIFYs `sanoma_credentials` as it commits, so running workers reload at once.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Any

from django.db import connection, transaction

from changes.credentials import runtime
from changes.credentials.crypto import encrypt
from changes.credentials.declared import VariableStatus, check_value
from changes.credentials.models import Credential, CredentialChange, CredentialChangeAction
from changes.credentials.selectors import MANAGE, can_manage, connectors, credential_statuses, declared
from connectors.errors import InvalidInput, IssueCode
from runs.approvals.permissions import Principal, permission_denied, principal_of
from runs.engine import clock

log = logging.getLogger("sanoma.credentials")


@dataclass(frozen=True)
class Console:
    """Someone at the server's console (`manage.py credentials` without `--as`): trusted as the shell is."""

    user: str

    @property
    def id(self) -> str:
        return f"console:{self.user}"


@dataclass(frozen=True)
class Changed:
    name: str
    action: str  # set or cleared
    by: str
    was_stored: bool
    environment_wins: bool  # this process's environment sets the name: its value is used, not the stored one
    statuses: list[VariableStatus]


def _actor(by: Any) -> str:
    """Who acts, as recorded; refused unless they may manage credentials."""
    if isinstance(by, Console):
        return by.id
    principal = by if isinstance(by, Principal) else principal_of(by)
    if not can_manage(principal):
        raise permission_denied(f"{principal.id} may not set or clear credentials: it takes {MANAGE}",
                                user=principal.id)
    return principal.id


def _notify(name: str) -> None:
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_notify(%s, %s)", [runtime.CHANNEL, name])


def _statuses(name: str) -> list[VariableStatus]:
    return [s for s in credential_statuses() if s.name == name]


def set_credential(*, name: str, value: str, by: Any) -> Changed:
    """Store `value` as `name`, encrypted. Refused, changing nothing and never repeating the value: an
    undeclared name (listing the declared ones), an empty value, a value the connector's check refuses."""
    who = _actor(by)
    variables = declared(name)
    if not isinstance(value, str):
        raise InvalidInput(f"The value of {name} must be text", data={"name": name})
    if value.strip() == "":
        raise InvalidInput(f"The value of {name} is empty: clear it to unset it", data={"name": name, "issues": [
            {"path": ["value"], "message": "empty: clear it to unset it", "code": IssueCode.EMPTY}]})
    stored = runtime.read_stored()
    environ = dict(os.environ)
    for variable in variables:
        connector = next(c for c in connectors() if c.vendor == variable.connector)
        problem = check_value(connector, name=name, value=value, environ=environ, stored=stored)
        if problem is not None:
            raise InvalidInput(f"{name} was not stored: {variable.connector}'s check refuses the value: {problem}",
                               data={"name": name, "issues": [{"path": ["value"], "message": problem,
                                                               "code": IssueCode.REFUSED}]})
    ciphertext, key_id = encrypt(value)
    now = clock.now()
    with transaction.atomic():
        was_stored = Credential.objects.filter(name=name).exists()
        Credential.objects.update_or_create(
            name=name, defaults={"ciphertext": ciphertext, "key_id": key_id, "updated_at": now, "updated_by": who})
        CredentialChange.objects.create(name=name, action=CredentialChangeAction.SET, by=who, at=now)
        _notify(name)
    runtime.invalidate()
    log.info("credential %s %s by %s", name, "changed" if was_stored else "set", who)
    return Changed(name=name, action=CredentialChangeAction.SET, by=who, was_stored=was_stored,
                   environment_wins=bool(environ.get(name)), statuses=_statuses(name))


def clear_credential(*, name: str, by: Any) -> Changed:
    """Remove the stored value of `name` (nothing stored: nothing changes). Refused for a name no
    connector declares, unless a value is stored under it (left from an earlier declaration)."""
    who = _actor(by)
    if not Credential.objects.filter(name=name).exists():
        declared(name)
    with transaction.atomic():
        deleted, _ = Credential.objects.filter(name=name).delete()
        if deleted:
            CredentialChange.objects.create(name=name, action=CredentialChangeAction.CLEARED, by=who,
                                            at=clock.now())
            _notify(name)
    runtime.invalidate()
    if deleted:
        log.info("credential %s cleared by %s", name, who)
    return Changed(name=name, action=CredentialChangeAction.CLEARED, by=who, was_stored=bool(deleted),
                   environment_wins=bool(os.environ.get(name)), statuses=_statuses(name))
