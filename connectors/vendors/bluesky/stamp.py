"""The `createdAt` of a post, derived from the call, so the reconcile read can tell the call's post
from any other with the same text.

Its seconds are when it is sent; its six fractional digits come from the call's idempotency key,
the same on every attempt of the call and in its reconcile read (AT Protocol datetimes allow
microseconds). A post with the call's text and those digits is the call's post.
"""
from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime

_FRACTION = re.compile(r"\.(\d{6})Z$")


def fraction(key: str) -> str:
    """The six digits a call with idempotency key `key` puts after its `createdAt`'s seconds."""
    return f"{int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], 'big') % 1_000_000:06d}"


def created_at(key: str, now: datetime | None = None) -> str:
    """The `createdAt` of the call's post sent at `now`: `2026-12-04T21:05:07.123456Z`."""
    moment = (now or datetime.now(UTC)).astimezone(UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{fraction(key)}Z"


def made_by(record: dict, key: str, text: str) -> bool:
    """Whether a post record (`{text, createdAt, ...}`) is the one a call with `key` and `text` made."""
    found = _FRACTION.search(str(record.get("createdAt") or ""))
    return record.get("text") == text and found is not None and found.group(1) == fraction(key)
