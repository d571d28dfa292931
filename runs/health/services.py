"""Writes of the health package: the result of a whole-ledger `ledger verify`, kept."""
from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from runs.health.models import LedgerVerification
from runs.ledger import Verified

KEEP = 100  # verifications kept; older ones go


def record_verification(*, result: Verified, using: str = "default") -> LedgerVerification:
    """Keep what a verify of every chain found (the alerts and the desk read the latest one);
    verifications older than the last `KEEP` go, so the table stays small."""
    with transaction.atomic(using=using):
        row = LedgerVerification.objects.using(using).create(
            checked_at=timezone.now(), ok=not result.breaks, runs=result.runs, records=result.records,
            broken=len(result.breaks), first_break=str(result.breaks[0]) if result.breaks else "")
        kept = LedgerVerification.objects.using(using)
        stale = list(kept.order_by("-checked_at", "-id").values_list("id", flat=True)[KEEP:])
        if stale:
            kept.filter(id__in=stale).delete()
    return row

