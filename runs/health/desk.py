"""The desk's health page (`/admin/health/`): the conditions the shipped alert rules watch, read
from the database as the page is asked for (`runs.health.conditions`), each with the name of its
alert. Any signed-in staff member may read it: it names no run, person or secret."""
from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from runs.health.conditions import conditions


def health_page(request: HttpRequest, *, context: dict[str, Any]) -> HttpResponse:
    found = conditions()
    failing = [c for c in found if c.ok is False]
    return TemplateResponse(request, "admin/health.html", {
        **context, "title": "Health", "conditions": found, "failing": len(failing),
        "unknown": sum(1 for c in found if c.ok is None)})
