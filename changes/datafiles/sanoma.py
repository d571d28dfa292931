"""What a data file imports from sanoma: `secret`, `person`, `group` and `local`.

    from runs.authoring import group, person, secret               # the front door (preferred)
    from changes.datafiles import sanoma                           # sanoma.person(...), sanoma.group(...)
    from changes.datafiles.sanoma import group, person, secret     # the names themselves

The constructors and sanoma's own resource types are defined in `runs.declarations` (low, plain
values, so the front door can offer them); this module keeps the `sanoma.<type>(...)` spelling
that data files and the reader know.
"""
from __future__ import annotations

from runs.declarations import (
    BUILTIN_TYPES,
    GROUP,
    LOCAL,
    PERSON,
    SECRET_NAME,
    GroupFields,
    LocalHostFields,
    PersonFields,
    group,
    local,
    person,
    secret,
)

__all__ = ["BUILTIN_TYPES", "GROUP", "LOCAL", "PERSON", "SECRET_NAME", "GroupFields", "LocalHostFields",
           "PersonFields", "group", "local", "person", "secret"]
