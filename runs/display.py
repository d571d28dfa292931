"""How the desk shows moments and durations: one way on every page, in the operator's time zone (the
site's unless they chose theirs), with the zone named and how long ago, and UTC on hover."""
from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from django.utils import timezone
from django.utils.html import escape, format_html
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
    whole one (47 hours ahead is "in 2 days", not "in 1 day"). A moment less than a minute ahead is
    "in 1 minute": "just now" is only ever said of the past."""
    seconds = (clock.now() - moment).total_seconds()
    if -1 < seconds < 60:
        return "just now"
    if seconds < 0 and -seconds < 60:  # a moment still to come is never "just now"
        return "in 1\u00a0minute"
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


def moment_column(field: str, description: str, *, sortable: bool = True, ago: bool = True) -> Any:
    """A list's column showing the model's `field` as `moment` shows it, sorted by it unless
    `sortable` is False: `created = moment_column("created_at", "created")` in a ModelAdmin."""
    from django.contrib import admin

    def shown(model_admin: Any, row: Any) -> SafeString | str:
        return moment(getattr(row, field), ago=ago)

    shown.__name__ = field
    return admin.display(description=description, ordering=field if sortable else None)(shown)


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


# A commit id (40 hex) or a content hash (64 hex), alone or inside a longer token
# (`dearer-mug@ee7f8886…`, `acme@5f1c…`): shown by its first 12, whole on hover.
LONG_HEX = re.compile(r"(?<![0-9a-f])[0-9a-f]{40}(?:[0-9a-f]{24})?(?![0-9a-f])")
SHORT = 12
# A token that is no word: a dotted operation name, a `branch@commit`, a run id. It may break (at its
# dots and @ first, then anywhere it must); ordinary words never do.
TOKEN = re.compile(r"\S{24,}")


def short_id(value: str) -> SafeString:
    """A commit id or content hash by its first 12 characters, the whole one in its title."""
    return format_html('<span class="sanoma-id" title="{}">{}</span>', value, value[:SHORT])


def _token(token: str) -> str:
    seen = LONG_HEX.sub(lambda found: found.group()[:SHORT], token)
    if not TOKEN.fullmatch(seen) or not re.search(r"[.@:/_\-0-9]", seen):
        return _ids(token)
    return f'<span class="sanoma-token">{_ids(token)}</span>'


def _ids(text: str) -> str:
    shown, last = [], 0
    for found in LONG_HEX.finditer(text):
        shown.append(escape(text[last:found.start()]))
        shown.append(short_id(found.group()))
        last = found.end()
    shown.append(escape(text[last:]))
    return "".join(shown)


def ids_shortened(text: str) -> SafeString:
    """`text`, escaped, its commit ids and hashes shortened (`short_id`); nothing else marked."""
    return SafeString(_ids(str(text)))


def tokens(text: str) -> SafeString:
    """`text`, escaped, its commit ids and hashes shortened (`short_id`) and each long token that is
    no word (an operation's name, `branch@commit`) marked so it may break rather than widen its
    column."""
    return SafeString("".join(_token(part) if part and not part.isspace() else escape(part)
                              for part in re.split(r"(\s+)", str(text))))


def version(value: str | None) -> SafeString | str:
    """An app version (`acme@<64 hex>`) as `acme@5f1c2a9b0d3e`, the whole version on hover."""
    if not value:
        return value or ""
    return tokens(value)


def dotted(name: str) -> SafeString:
    """An operation's name (`shop.order.refund`), escaped, that may break after its dots (and an
    `@`), never inside a part: a narrow column wraps it as `shop.order.` / `refund`."""
    return SafeString(re.sub(r"([.@])", r"\1<wbr>", escape(name)))
