"""How the desk shows moments and durations: one way on every page, in the operator's time zone (the
site's unless they chose theirs), with the zone named and how long ago, and UTC on hover."""
from __future__ import annotations

from datetime import UTC, datetime

from django.utils import timezone
from django.utils.html import format_html
from django.utils.safestring import SafeString

from runs.engine import clock

FORMAT = "%Y-%m-%d %H:%M:%S %Z"


def as_datetime(value: datetime | int | float | None) -> datetime | None:
    """A datetime, or epoch milliseconds (as the ledger keeps them), as an aware datetime."""
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if timezone.is_aware(value) else value.replace(tzinfo=UTC)
    return clock.from_ms(int(value))


# The units a relative moment is said in, largest first (a month is 30 days, a year 365): the same
# table the desk's pages use to keep "(3 minutes ago)" current while they sit (admin/base_site.html).
RELATIVE_UNITS = (("year", 31_536_000), ("month", 2_592_000), ("week", 604_800), ("day", 86_400),
                  ("hour", 3_600), ("minute", 60))


def relative(moment: datetime) -> str:
    """"just now", "3 minutes ago", "in 2 days": the largest unit that fits, counted to the nearest
    whole one (47 hours ahead is "in 2 days", not "in 1 day")."""
    seconds = (clock.now() - moment).total_seconds()
    if abs(seconds) < 60:
        return "just now"
    for unit, size in RELATIVE_UNITS:
        if abs(seconds) >= size:
            count = int(abs(seconds) / size + 0.5)  # halves up, as the pages' script rounds
            said = f"{count}\u00a0{unit}{'' if count == 1 else 's'}"
            return f"{said} ago" if seconds > 0 else f"in {said}"
    return "just now"


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
