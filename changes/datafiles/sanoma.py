"""What a data file imports from sanoma: `secret`, `person`, `group` and `local`.

    from runs.authoring import group, person, secret               # the front door (preferred)
    from changes.datafiles import sanoma                           # sanoma.person(...), sanoma.group(...)
    from changes.datafiles.sanoma import group, person, secret     # the names themselves

The constructors and sanoma's own resource types are defined in `runs.declarations` (low, plain
values, so the front door can offer them); this module keeps the `sanoma.<type>(...)` spelling
that data files and the reader know.

    ops = sanoma.group(name="ops", permissions=["operator"])          # a role, or app_label.codename
    ada = sanoma.person(username="ada", groups=[ops], staff=True)      # staff: may sign in to the desk

A group's `permissions` are checked when the file is read: an unknown one is a problem naming it.
"""
from __future__ import annotations

from runs.declarations import (
    BUILTIN_TYPES,
    GROUP,
    LOCAL,
    PERSON,
    ROLES,
    SECRET_NAME,
    GroupFields,
    LocalHostFields,
    PersonFields,
    expand_permissions,
    group,
    local,
    person,
    secret,
    site_permissions,
)

__all__ = ["BUILTIN_TYPES", "GROUP", "LOCAL", "PERSON", "ROLES", "SECRET_NAME", "GroupFields", "LocalHostFields",
           "PersonFields", "expand_permissions", "group", "local", "person", "secret", "site_permissions"]
