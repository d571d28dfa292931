"""The runs list's counts, bounded: what it reads does not grow with the runs parked in it.

Django's list counts every run that matches for its pages ("4,812 runs" and the page numbers), every
run there is for "(N total)", every run of each filter choice for the filters' counts, and reads the
day of every listed run for its date bar (`SELECT DISTINCT` on the day). With 100,000 runs waiting
each of those reads 100,000 rows on every page, and the list reads itself again every few seconds.
Here:

- the pages: counted up to `COUNT_BOUND` past the page shown (`BoundedPaginator`); beyond, the
  foot of the list says "more than 10,000 runs" and offers the next page, which counts on from there;
- "(N total)": counted the same way; each filter choice's count ("Show counts"), up to
  `FACET_BOUND` (1,000) each, its own bounded read ("Waiting (more than 1,000)");
- the date bar: which years (months, days) hold a run is asked once per year (month, day) with an
  `EXISTS` that stops at the first run found, all in one query (`periods_with_runs`), from the
  indexes that begin with the run's start time (`created_at`; status, `created_at`).
"""
from __future__ import annotations

import calendar
import functools
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import Any, cast

from django.contrib.admin import SimpleListFilter
from django.contrib.admin.views.main import PAGE_VAR, ChangeList
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Max, Min, QuerySet
from django.http import HttpRequest
from django.utils import timezone
from django.utils.functional import cached_property

from runs import selectors
from runs.selectors import Counted, bounded_count


def page_asked(request: HttpRequest) -> int:
    """The page number the request asks for (`?p=`), 1 when it names none or no page at all (the
    list then answers as Django's does: a bad page is an error on the page)."""
    raw = request.GET.get(PAGE_VAR, "1")
    return int(raw) if raw.isascii() and raw.isdigit() and 0 < int(raw) < 10**9 else 1


class BoundedPaginator(Paginator):
    """Django's paginator counting up to `COUNT_BOUND` runs past the start of the page asked for:
    `count` is exact when `counted.exact`, else a lower bound (the page asked and the next exist)."""

    def __init__(self, object_list: Any, per_page: int, *, page: int = 1, **kwargs: Any) -> None:
        super().__init__(object_list, per_page, **kwargs)
        self.start = (page - 1) * self.per_page

    @cached_property
    def counted(self) -> Counted:
        runs = cast(QuerySet[Any], self.object_list)
        return bounded_count(runs, start=self.start, bound=max(selectors.COUNT_BOUND, self.per_page))

    @cached_property
    def count(self) -> int:
        return self.counted.n

    @property
    def exact(self) -> bool:
        return self.counted.exact


class RunChangeList(ChangeList):
    """Django's list with its counts bounded (see the module's note): `full_result_count` is the
    bounded count of every run the viewer may see, read only when a filter or a search narrows the
    list (else it is the list's own count); each filter's choices counted by `bounded_facets`."""

    def get_filters(self, request: HttpRequest) -> Any:
        found = super().get_filters(request)
        for spec in found[0]:
            if hasattr(spec, "get_facet_queryset"):
                spec.get_facet_queryset = functools.partial(bounded_facets, spec)
        return found

    def get_results(self, request: HttpRequest) -> None:
        super().get_results(request)
        counted = self.paginator.counted
        if self.has_active_filters or self.query:
            # Counted as far as the list's own count reaches, so the two compare.
            self.full_counted = bounded_count(self.root_queryset, start=self.paginator.start,
                                              bound=max(selectors.COUNT_BOUND, self.list_per_page))
        else:
            self.full_counted = counted
        self.result_counted = counted
        self.full_result_count = self.full_counted.n
        self.show_full_result_count = True
        self.show_admin_actions = bool(self.full_counted.n)
        if not counted.exact:  # "Show all" would read every run: only a list counted to its end offers it
            self.can_show_all = False
            if self.show_all:
                self.show_all = False
                self.result_list = self.paginator.page(self.page_num).object_list


# "Show counts" counts each choice of each filter (some twenty counts a page): up to this many each.
FACET_BOUND = 1_000


def bounded_facets(spec: Any, changelist: ChangeList) -> dict[str, Counted]:
    """A filter's counts by choice ("Show counts"), each counted up to FACET_BOUND (Django sums
    them over every run that matches, in one read that grows with the runs): "Waiting (more than
    1,000)" is what a glance at the sidebar needs; the list's own foot counts further. A filter of
    its own (`SimpleListFilter`) counts the runs its `queryset` selects for the choice (Django asks
    for `pk IN (those)`, which the database may read in full before counting)."""
    filtered = changelist.get_queryset(spec.request, exclude_parameters=spec.expected_parameters())
    if isinstance(spec, SimpleListFilter):
        return simple_facets(spec, filtered)
    counts = spec.get_facet_counts(changelist.pk_attname, filtered)
    return {key: bounded_count(filtered if count.filter is None else filtered.filter(count.filter), bound=FACET_BOUND)
            for key, count in counts.items()}


def simple_facets(spec: SimpleListFilter, filtered: QuerySet[Any]) -> dict[str, Counted]:
    """Each choice of `spec` counted up to FACET_BOUND from the runs its `queryset` selects."""
    name = cast(str, spec.parameter_name)
    used = cast(dict[str, Any], spec.used_parameters)
    given = used.get(name)
    counts = {}
    try:
        for i, choice in enumerate(spec.lookup_choices):
            used[name] = choice[0]
            chosen = spec.queryset(spec.request, filtered)
            if chosen is not None:
                counts[f"{i}__c"] = bounded_count(chosen, bound=FACET_BOUND)
    finally:
        used[name] = given
    return counts


# -- the date bar


class PeriodsOfRuns:
    """What Django's date bar reads of the listed runs (`aggregate` of the first and last start,
    `datetimes` of the years, months or days that hold one), the periods read by `periods_with_runs`."""

    def __init__(self, runs: QuerySet[Any]) -> None:
        self.runs = runs
        self.ends: dict[str, Any] | None = None

    def aggregate(self, **kwargs: Any) -> dict[str, Any]:
        """Django's read of the first and last start, kept for `datetimes` to read the periods from."""
        found = self.runs.aggregate(**kwargs)
        if set(found) == {"first", "last"}:
            self.ends = found
        return found

    def datetimes(self, field: str, kind: str) -> list[datetime]:
        return periods_with_runs(self.runs, field, kind, ends=self.ends)


class DateBarList:
    """The list as Django's date bar reads it, its queryset answering through `PeriodsOfRuns`."""

    def __init__(self, changelist: ChangeList) -> None:
        self._changelist = changelist
        self.queryset = PeriodsOfRuns(changelist.queryset)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._changelist, name)


# A date bar of years lists at most this many (from the last run's year back).
MAX_YEARS = 50


def candidate_periods(runs: QuerySet[Any], field: str, kind: str,
                      ends: dict[str, Any] | None = None) -> Iterator[tuple[datetime, datetime]]:
    """The periods (start, end), in the current time zone, that the listed runs could fall in: the
    years from the first run's to the last's, or the months of the year (the days of the month) the
    list is narrowed to, read from its first run (`ends`: the first and last start, when read already)."""
    zone = timezone.get_current_timezone()
    if ends is None:
        ends = runs.aggregate(first=Min(field), last=Max(field))
    if ends["first"] is None:
        return
    first, last = timezone.localtime(ends["first"], zone), timezone.localtime(ends["last"], zone)

    def at(day: date) -> datetime:
        return timezone.make_aware(datetime(day.year, day.month, day.day), zone)

    if kind == "year":
        for year in range(max(first.year, last.year - MAX_YEARS + 1), last.year + 1):
            yield at(date(year, 1, 1)), at(date(year + 1, 1, 1))
    elif kind == "month":
        for month in range(first.month, (last.month if last.year == first.year else 12) + 1):
            following = date(first.year + month // 12, month % 12 + 1, 1)
            yield at(date(first.year, month, 1)), at(following)
    else:
        days = calendar.monthrange(first.year, first.month)[1]
        until = last.day if (last.year, last.month) == (first.year, first.month) else days
        for day in range(first.day, until + 1):
            start = date(first.year, first.month, day)
            yield at(start), at(start + timedelta(days=1))


def periods_with_runs(runs: QuerySet[Any], field: str, kind: str,
                      ends: dict[str, Any] | None = None) -> list[datetime]:
    """The starts of the periods (`kind`: year, month or day) holding at least one of `runs`, in one
    query of one `EXISTS` a period, each stopping at the first run it finds in its index range: what
    it reads is the periods, not the runs (Django's `datetimes` reads every run listed)."""
    periods = list(candidate_periods(runs, field, kind, ends))
    if not periods:
        return []
    parts: list[str] = []
    params: list[Any] = []
    for start, end in periods:
        probe = runs.filter(**{f"{field}__gte": start, f"{field}__lt": end}).order_by().values("pk")[:1]
        sql, probe_params = probe.query.sql_with_params()
        parts.append(f"EXISTS ({sql})")
        params.extend(probe_params)
    with connections[runs.db].cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        found = cursor.fetchone()
    return [start for (start, _), held in zip(periods, found, strict=True) if held]
