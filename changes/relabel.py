"""Moving models' content types to another app label, for the migrations of an app whose models
came from another app with their tables (state-only migrations).

The content type row is relabelled in place, so every permission (`auth`, and guardian's object
permissions, which name the row) keeps naming it and its codename: a user holding
`changes.manage_credentials` before holds `credentials.manage_credentials` after. On a fresh database
there is no row yet (Django makes them after migrating), and nothing is done. Where both rows exist,
the new one is kept: the old one's permissions move to it (their holders to the new one's twin, when
it has one) and the old row goes.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


def relabel(models: Sequence[str], *, old: str, new: str) -> Callable[[Any, Any], None]:
    """A `RunPython` function moving the content types of `models` (lower-case names) from `old` to `new`."""

    def move(apps: Any, schema_editor: Any) -> None:
        db = schema_editor.connection.alias
        content_types = apps.get_model("contenttypes", "ContentType").objects.using(db)
        permissions = apps.get_model("auth", "Permission").objects.using(db)
        for model in models:
            before = content_types.filter(app_label=old, model=model).first()
            if before is None:
                continue
            after = content_types.filter(app_label=new, model=model).first()
            if after is None:
                before.app_label = new
                before.save(update_fields=["app_label"])
                continue
            for permission in permissions.filter(content_type=before):
                twin = permissions.filter(content_type=after, codename=permission.codename).first()
                if twin is None:
                    permission.content_type = after
                    permission.save(update_fields=["content_type"])
                else:
                    twin.user_set.add(*permission.user_set.all())
                    twin.group_set.add(*permission.group_set.all())
            before.delete()

    return move


__all__ = ["relabel"]
