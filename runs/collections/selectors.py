"""What the admin and the API read of the collections: names and counts, a page of records, one record.

Who may read them: holders of `runs.view_collectionrecord` (the collection record model's view
permission, given to a user or a group in the admin) and operators (`runs.view_any_run`);
superusers hold both. Nobody writes here: changes go through workflows (`ctx.data.<name>.put`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import Count

from connectors.errors import ErrorCode, SanomaError
from runs.approvals.permissions import Principal, is_operator
from runs.collections import store
from runs.collections.definition import Collection
from runs.models import CollectionRecord

READ_PERMISSION = "runs.view_collectionrecord"


def may_read(principal: Principal) -> bool:
    return principal.has_global(READ_PERMISSION) or is_operator(principal)


def check_may_read(principal: Principal) -> None:
    if not may_read(principal):
        raise SanomaError(f"{principal.id or 'You'} may not read collections: that takes {READ_PERMISSION} "
                          "or runs.view_any_run", code=ErrorCode.PERMISSION_DENIED)


@dataclass(frozen=True)
class CollectionSummary:
    name: str
    app: str | None
    key: str
    title: str
    records: int
    operations: tuple[str, ...]


def summaries(collections: dict[str, Collection]) -> list[CollectionSummary]:
    """Every declared collection, by name, with how many records it holds."""
    counts = dict(CollectionRecord.objects.filter(collection__in=list(collections)).values("collection")
                  .annotate(n=Count("id")).values_list("collection", "n"))
    return [CollectionSummary(name=c.name, app=c.app, key=c.key, title=c.title, records=counts.get(c.name, 0),
                              operations=c.op_ids)
            for c in sorted(collections.values(), key=lambda c: c.name)]


def page(collection: Collection, *, prefix: str = "", limit: int = 50, cursor: str | None = None) -> dict[str, Any]:
    """`{records: [{key, record, version, updated_at, updated_by_run}], cursor}` in key order."""
    return store.page(collection.name, prefix=prefix, limit=limit, cursor=cursor)


def record(collection: Collection, key: str) -> dict[str, Any] | None:
    return dict_or_none(CollectionRecord.objects.filter(collection=collection.name, key=key)
            .values("key", "record", "version", "updated_at", "updated_by_run").first())


def dict_or_none(row: Any) -> dict[str, Any] | None:
    return dict(row) if row is not None else None
