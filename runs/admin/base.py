"""What every app's pages on the operator's desk stand on: who is asking, run links, refusals, how
often a live page reads itself again, and the mixins for records the admin only shows."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from django.contrib import messages
from django.contrib.admin.utils import quote, unquote
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.html import format_html

from connectors.errors import SanomaError
from runs.approvals.permissions import request_principal

if TYPE_CHECKING:
    from django.template.response import _TemplateForResponseT

# The runs list, a running run's page and the inbox read themselves again this often (see the
# desk's base page): the operator sees a decision or an end land without reloading.
LIVE_SECONDS = 3


def is_staff(request: HttpRequest) -> bool:
    return bool(request.user.is_active and request.user.is_staff)


me = request_principal


def run_link(run_id: str, label: str | None = None) -> str:
    """A link to the run's page. The id is quoted as the admin quotes keys, so any id makes a URL."""
    url = reverse("admin:runs_run_change", args=[quote(run_id)])
    return format_html('<a href="{}">{}</a>', url, label or run_id)


def refusal(err: SanomaError) -> str:
    return f"{err.message} ({err.code})" if err.code else err.message


class HiddenOrMissingMixin:
    """A record that does not exist and one the user may not see get the same answer, which says
    both (never Django's "Perhaps it was deleted?", which would tell a user who may not see a run
    nothing true)."""

    missing_noun = "record"

    def _get_obj_does_not_exist_redirect(self, request: HttpRequest, opts: Any, object_id: str) -> HttpResponse:
        messages.warning(request, f"No {self.missing_noun} {unquote(object_id)}, or you may not see it")
        return redirect(reverse(f"admin:{opts.app_label}_{opts.model_name}_changelist"))


class ReadOnlyMixin(HiddenOrMissingMixin):
    """Nothing here is added, changed or deleted through the admin: the services do that. Its
    page has no History button (there is no history of edits that never happen)."""

    change_form_template: ClassVar[_TemplateForResponseT | None] = "admin/runs/readonly_change_form.html"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


