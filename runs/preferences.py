"""A person's own settings of the desk: the time zone it shows moments in."""
from __future__ import annotations

from functools import lru_cache
from typing import Any
from zoneinfo import available_timezones

from django.db import transaction

from connectors.errors import InvalidInput, IssueCode, input_issue
from runs.models import OperatorPreference


@lru_cache(maxsize=1)
def time_zones() -> tuple[str, ...]:
    return tuple(sorted(available_timezones()))


def check_time_zone(zone: Any) -> str:
    """An IANA time zone name, or "" for the site's; anything else is `invalid_input`."""
    if zone == "" or (isinstance(zone, str) and zone in time_zones()):
        return zone
    raise InvalidInput(f"{zone!r} is not a time zone: give an IANA name such as Europe/Helsinki, or none for the "
                       "site's", data={"issues": [input_issue(["time_zone"], "unknown time zone", IssueCode.INVALID)]})


def set_time_zone(*, user: Any, zone: Any) -> str:
    """Show `user` moments in `zone` ("" = the site's); returns the zone kept."""
    zone = check_time_zone(zone)
    with transaction.atomic():
        OperatorPreference.objects.update_or_create(user=user, defaults={"time_zone": zone})
    return zone


def time_zone_of(user: Any) -> str:
    """The zone `user` chose, or "" for the site's."""
    return OperatorPreference.objects.filter(user=user).values_list("time_zone", flat=True).first() or ""
