"""What every page of the operator's desk shares: who is asking, JSON display, run links, refusals."""
from __future__ import annotations

import json
from typing import Any

from django.contrib.admin.utils import quote
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from connectors.errors import SanomaError
from runs.approvals.permissions import request_principal


def as_json(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, default=str)


def pretty_json(value: Any) -> str:
    if value is None:
        return "-"
    return format_html('<pre class="sanoma-json">{}</pre>', as_json(value))


def is_staff(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_staff)


me = request_principal


def run_link(run_id: str, label: str | None = None) -> str:
    """A link to the run's page. The id is quoted as the admin quotes keys, so any id makes a URL."""
    url = reverse("admin:runs_run_change", args=[quote(run_id)])
    return format_html('<a href="{}">{}</a>', url, label or run_id)


def refusal(err: SanomaError) -> str:
    return f"{err.message} ({err.code})" if err.code else err.message


class ReadOnlyMixin:
    """Nothing here is added, changed or deleted through the admin: the services do that."""

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

