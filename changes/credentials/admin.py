"""The operator's desk for connectors' credentials: one page listing every declared variable (name,
connector, description, status, source) with set and clear actions, and the log of changes.

A value is never shown: not in the list, not in the set form (its field starts empty and is never
filled back in), not masked, not its length. Seeing the page takes an operator or the credentials'
view or manage permission; setting and clearing take `credentials.manage_credentials`, enforced by the
services.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse

from changes.credentials import selectors, services
from changes.credentials.models import Credential, CredentialChange
from connectors.errors import SanomaError
from runs.admin.base import ReadOnlyMixin, me, refusal
from runs.display import moment, moment_column


class ValueForm(forms.Form):
    value = forms.CharField(
        strip=False,
        widget=forms.PasswordInput(render_value=False, attrs={"autocomplete": "off", "size": 60}),
        help_text="Stored encrypted; never shown again. To unset it, clear it.",
    )


@admin.register(Credential)
class CredentialAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """The credentials page replaces the rows' list: statuses of the declared variables, never values."""

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff and selectors.can_view(me(request)))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    def get_urls(self):
        wrap = self.admin_site.admin_view
        return [
            path("", wrap(self.changelist_view), name="credentials_credential_changelist"),
            path("<str:name>/set/", wrap(self.set_view), name="credentials_credential_set"),
            path("<str:name>/clear/", wrap(self.clear_view), name="credentials_credential_clear"),
        ]

    def _context(self, request: HttpRequest, **extra: Any) -> dict[str, Any]:
        return {**self.admin_site.each_context(request), "opts": self.model._meta, **extra}

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> HttpResponse:
        if not self.has_view_permission(request):
            return self._denied(request)
        try:
            statuses = selectors.credential_statuses()
        except SanomaError as err:
            messages.error(request, refusal(err))
            statuses = []
        stored = set(Credential.objects.values_list("name", flat=True))
        rows = [{"s": s, "stored": s.name in stored,
                 "set_url": reverse("admin:credentials_credential_set", args=[s.name]),
                 "clear_url": reverse("admin:credentials_credential_clear", args=[s.name])} for s in statuses]
        return TemplateResponse(request, "admin/credentials/credential/credentials.html", self._context(
            request, title="Credentials", rows=rows, may_manage=selectors.can_manage(me(request)),
            changes=[{"change": c, "at": moment(c.at)} for c in selectors.recent_changes(limit=20)]))

    def set_view(self, request: HttpRequest, name: str) -> HttpResponse:
        if not self.has_view_permission(request):
            return self._denied(request)
        try:
            variables = selectors.declared(name)
        except SanomaError as err:
            messages.error(request, refusal(err))
            return redirect("admin:credentials_credential_changelist")
        errors: list[str] = []
        if request.method == "POST":
            form = ValueForm(request.POST)
            if not form.is_valid():
                errors = [str(e) for errs in form.errors.values() for e in errs]
            else:
                try:
                    changed = services.set_credential(name=name, value=form.cleaned_data["value"], by=me(request))
                except SanomaError as err:
                    errors = [refusal(err)]
                else:
                    messages.success(request, f"{name} {'changed' if changed.was_stored else 'stored'} (encrypted)")
                    if changed.environment_wins:
                        messages.warning(request, f"{name} is set in this site's environment: where it is set, it "
                                                  "wins over the stored value")
                    return redirect("admin:credentials_credential_changelist")
        # The form is always a fresh one: a value is never filled back in.
        return TemplateResponse(request, "admin/credentials/credential/set.html", self._context(
            request, title=f"Set {name}", name=name, variables=variables, form=ValueForm(), errors=errors))

    def clear_view(self, request: HttpRequest, name: str) -> HttpResponse:
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if not self.has_view_permission(request):
            return self._denied(request)
        try:
            changed = services.clear_credential(name=name, by=me(request))
        except SanomaError as err:
            messages.error(request, refusal(err))
        else:
            messages.success(request, f"{name} cleared" if changed.was_stored else f"{name} was not stored")
        return redirect("admin:credentials_credential_changelist")

    def _denied(self, request: HttpRequest) -> HttpResponse:
        messages.error(request, "You may not see the credentials")
        return redirect("admin:index")


@admin.register(CredentialChange)
class CredentialChangeAdmin(ReadOnlyMixin, admin.ModelAdmin):
    """Who set or cleared which variable, and when (never a value)."""

    list_display = ["name", "action", "by", "when"]
    list_filter = ["action"]
    search_fields = ["name", "by"]

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_active and request.user.is_staff and selectors.can_view(me(request)))

    def has_module_permission(self, request: HttpRequest) -> bool:
        return self.has_view_permission(request)

    when = moment_column("at", "at")
