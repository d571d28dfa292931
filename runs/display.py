"""How the desk shows moments and durations: one way on every page, in the operator's time zone (the
site's unless they chose theirs), with the zone named and how long ago, and UTC on hover."""
from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.timesince import timesince, timeuntil

from runs.engine import clock

FORMAT = "%Y-%m-%d %H:%M:%S %Z"


def as_datetime(value: datetime | int | float | None) -> datetime | None:
    """A datetime, or epoch milliseconds (as the ledger keeps them), as an aware datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
    return clock.from_ms(int(value))


def relative(moment: datetime) -> str:
    now = clock.now()
    if abs((now - moment).total_seconds()) < 60:
        return "just now"
    if moment <= now:
        return f"{timesince(moment, now).split(',')[0]} ago"
    return f"in {timeuntil(moment, now).split(',')[0]}"


def moment(value: datetime | int | float | None, *, ago: bool = True) -> SafeString | str:
    """`2026-12-03 16:02:11 EET (3 minutes ago)`, UTC in its title; "-" for none."""
    when = as_datetime(value)
    if when is None:
        return "-"
    local = timezone.localtime(when)
    shown = local.strftime(FORMAT)
    if ago:
        shown = f"{shown} ({relative(when)})"
    return format_html('<time datetime="{}" title="{}">{}</time>', when.isoformat(),
                       when.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC"), shown)


def duration(ms: int | float | None) -> str:
    """A duration as people say it: 850 ms, 4.2 s, 3 min 5 s, 2 h 10 min."""
    if ms is None:
        return ""
    ms = float(ms)
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"
