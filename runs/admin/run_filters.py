"""The runs list's own filters and search: what a run waits for (every kind, whether or not a
run waits for it now), a tag (`?tag=order=1001`, as the API's `tag=`), the deploy version that
holds a run (`?version=`, the Versions page's links), and `key=value` terms in the search box
matching a tag exactly. A bad value is an error on the page naming it, and lists
nothing."""
from __future__ import annotations

import re
from typing import Any, cast

from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.text import smart_split, unescape_string_literal

from connectors.errors import SanomaError
from runs.admin.base import me
from runs.approvals.permissions import is_operator
from runs.models import AppVersion
from runs.selectors import WAITING_FOR, distinct_run_values, parse_tag, runs_waiting_for, tagged
from runs.version_states import runs_of_version


class WaitingForFilter(admin.SimpleListFilter):
    """Runs by what they wait for: every kind there is, listed whether or not a run waits for it
    now (the list refreshes itself, so a choice made stays meaningful)."""

    title = "waiting for"
    parameter_name = "waiting_for"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, WAITING_LABELS[kind]) for kind in WAITING_FOR]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        kind = self.value()
        if not kind:
            return queryset
        if kind not in WAITING_FOR:
            messages.error(request, f"“{kind}” is not what a run waits for: one of {', '.join(WAITING_FOR)}")
            return queryset.none()
        return runs_waiting_for(queryset, kind)


class IndexedValuesFilter(admin.AllValuesFieldListFilter):
    """Django's filter by every value of a column (`workflow`, `started_by`), its choices read from
    the column's index for an operator, who sees every run (`distinct_run_values`: as many reads as
    there are values, however many runs are parked), and as Django reads them for anyone else (from
    the runs they may see, found by key)."""

    def __init__(self, field: Any, request: HttpRequest, params: Any, model: Any, model_admin: Any,
                 field_path: str) -> None:
        super().__init__(field, request, params, model, model_admin, field_path)
        if field_path == field.column and is_operator(me(request)):
            self.lookup_choices = cast(Any, distinct_run_values(field.column))  # a list serves as well


class TagFilter(admin.SimpleListFilter):
    """`?tag=order=1001`: the runs tagged so (ctx.tag), as the API's `tag=`. Shown in the sidebar
    while it is applied, with "All" to lift it; the search box finds the same (`order=1001`)."""

    title = "tag"
    parameter_name = "tag"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        value = self.value()
        return [(value, value)] if value else []

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        if not self.value():
            return queryset
        try:
            key, value = parse_tag(self.value())
        except SanomaError as err:
            messages.error(request, err.message)
            return queryset.none()
        return tagged(queryset, key, value)


class VersionFilter(admin.SimpleListFilter):
    """`?version=<deploy version>`: the runs that deploy version holds (the live one: the runs of
    its workflow versions; an older one: its pinned runs' workflow versions), as the Versions page
    links them. Its choices are the versions not retired."""

    title = "deploy version"
    parameter_name = "version"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        shown = list(AppVersion.objects.filter(retired_at__isnull=True).order_by("-promoted_at")
                     .values_list("version", flat=True)[:20])
        value = self.value()
        if value and value not in shown:
            shown.append(value)
        return [(version, version) for version in shown]

    def queryset(self, request: HttpRequest, queryset: Any) -> Any:
        version = self.value()
        if not version:
            return queryset
        if not AppVersion.objects.filter(version=version).exists():
            messages.error(request, f"“{version}” is not a deploy version (see the Versions page)")
            return queryset.none()
        return queryset.filter(app_version__in=runs_of_version(version))


# The waiting-for filter's choices, as a person reads them.
WAITING_LABELS = {
    "approval": "an approval", "message": "a message", "sleep": "a sleep to end", "run": "a child run",
    "in_doubt": "a word on a call in doubt", "paused": "an unpause", "retry": "a call's next try",
    "limit": "a rate or concurrency limit",
}
# A search term naming a tag: key=value (the value may be quoted: customer="ada lovelace").
TAG_TERM = re.compile(r"^([a-z0-9_]+)=(.+)$")


def tag_terms(search_term: str) -> tuple[list[tuple[str, str]], str]:
    """The search box's `key=value` terms (each a tag to match), and the rest of what was typed."""
    tags, rest = [], []
    for term in smart_split(search_term):
        found = TAG_TERM.match(term)
        if found:
            value = found.group(2)
            if len(value) > 1 and value[0] in "\"'" and value[-1] == value[0]:
                value = unescape_string_literal(value)
            tags.append((found.group(1), value))
        else:
            rest.append(term)
    return tags, " ".join(rest)
