"""The desk's health page (`/admin/health/`): the conditions the shipped alert rules watch, read
from the database as the page is asked for, each with the name of its alert. The engine's
(`runs.health.conditions`) and the wakeup's (`wakeups.health`) are composed here, above both. Any
signed-in staff member may read it: it names no run, person or secret."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from runs.health.conditions import Condition, conditions
from wakeups import health as wakeup_health


def all_conditions() -> list[Condition]:
    """Every condition, the wakeup's before the ledger's."""
    found = conditions()
    at = next((i for i, c in enumerate(found) if c.key == "ledger"), len(found))
    return [*found[:at], wakeup_health.condition(), *found[at:]]


def health_page(request: HttpRequest, *, context: dict[str, Any]) -> HttpResponse:
    found = all_conditions()
    return TemplateResponse(request, "admin/health.html", {
        **context, "title": "Health", "conditions": found, "failing": sum(1 for c in found if c.ok is False),
        "unknown": sum(1 for c in found if c.ok is None)})
