"""The runs list's date bar, pages and result count, as Django's admin draws them but from the
bounded reads of `runs.admin.run_list` (`{% load run_list %}` in the runs list's template)."""
from __future__ import annotations

from typing import Any, cast

from django import template
from django.contrib.admin.templatetags.admin_list import date_hierarchy, pagination, search_form
from django.contrib.admin.templatetags.base import InclusionAdminNode
from django.contrib.admin.views.main import PAGE_VAR

from runs.admin.run_list import DateBarList

register = template.Library()
# Django's own node for its admin tags (django-stubs give it an older signature, with a `name` first).
Node: Any = InclusionAdminNode


def run_date_hierarchy(cl: Any) -> Any:
    """Django's date bar, the periods that hold a run read by `periods_with_runs`."""
    return date_hierarchy(cast(Any, DateBarList(cl)))


def run_pagination(cl: Any) -> dict[str, Any]:
    """Django's page links, and "‹ previous" and "next ›"; when the runs were not all counted, the
    numbers stop past the page shown (the last page is not known) and the count says "more than"."""
    context = pagination(cl)
    exact = cl.paginator.exact
    if not exact and context["page_range"]:
        shown = [i for i in cl.paginator.get_elided_page_range(cl.page_num, on_ends=0)
                 if i == cl.paginator.ELLIPSIS or i <= cl.page_num + 3]
        if cl.page_num > 5 and shown[0] != 1:
            shown = [1, cl.paginator.ELLIPSIS, *shown]
        context["page_range"] = [*shown, cl.paginator.ELLIPSIS] if shown[-1] != cl.paginator.ELLIPSIS else shown
    more = not exact or cl.page_num < cl.paginator.num_pages
    context.update({
        "counted": cl.result_counted,
        "previous_url": cl.get_query_string({PAGE_VAR: cl.page_num - 1}) if cl.page_num > 1 else "",
        "next_url": cl.get_query_string({PAGE_VAR: cl.page_num + 1}) if context["pagination_required"] and more
        else "",
    })
    return context


def run_search_form(cl: Any) -> dict[str, Any]:
    """Django's search box, the counts beside it bounded ("more than 10,000 results")."""
    context = search_form(cl)
    # Django shows them when the two counts differ; two lower bounds ("more than 10,000") may not
    # differ and still count different runs, so they are shown whenever a filter or search narrows.
    context["show_result_count"] = bool(cl.has_active_filters or cl.query) or cl.result_counted != cl.full_counted
    return context


@register.tag(name="run_date_hierarchy")
def run_date_hierarchy_tag(parser: Any, token: Any) -> Any:
    return Node(parser, token, func=run_date_hierarchy, template_name="date_hierarchy.html", takes_context=False)


@register.tag(name="run_pagination")
def run_pagination_tag(parser: Any, token: Any) -> Any:
    return Node(parser, token, func=run_pagination, template_name="pagination.html", takes_context=False)


@register.tag(name="run_search_form")
def run_search_form_tag(parser: Any, token: Any) -> Any:
    return Node(parser, token, func=run_search_form, template_name="search_form.html", takes_context=False)
