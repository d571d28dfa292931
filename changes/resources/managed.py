"""What sanoma created at vendors (`ManagedResource`): recorded by the apply run after a create
succeeds, forgotten after a delete (`sanoma.resources.record`, inline on the worker's connection,
never from inside a vendor's driver call), read by `sanoma.resources.read` so a plan deletes only
what an apply created."""
from __future__ import annotations

from typing import Any

from django.apps import apps
from django.db import IntegrityError, transaction

from runs.engine import clock


def _table() -> Any:
    # The model through the registry: this module loads as Django starts, before the models do.
    return apps.get_model("changes", "ManagedResource")


def rows() -> list[dict[str, Any]]:
    """Every managed instance, oldest first: `{type, import_id, created_by}`."""
    return [{"type": t, "import_id": i, "created_by": by}
            for t, i, by in _table().objects.order_by("id").values_list("type", "import_id", "created_by")]


def created(type_key: str, import_id: str, run_id: str) -> None:
    try:
        with transaction.atomic():
            _table().objects.create(type=type_key, import_id=import_id, created_by=run_id,
                                           created_at=clock.now())
    except IntegrityError:
        _table().objects.filter(type=type_key, import_id=import_id).update(created_by=run_id)


def deleted(type_key: str, import_id: str) -> None:
    _table().objects.filter(type=type_key, import_id=import_id).delete()
