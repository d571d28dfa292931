"""The desk's Limits page: every rate and concurrency limit (declared, in force, in use now) above
the operators' overrides; adding or changing an override changes the limit from the next call on,
on every worker; deleting one goes back to the declared limit (`runs.limits.services`).

Everyone on the desk sees the page; only operators (`runs.pause`) change limits.
"""
from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.http import HttpRequest

from connectors.errors import SanomaError
from runs.admin.base import is_staff, me
from runs.config.registry import get_config
from runs.display import moment_column
from runs.limits import selectors, services
from runs.limits.models import LimitOverride


class LimitOverrideForm(forms.ModelForm):
    rate = forms.CharField(required=False, help_text="Calls per unit: 5/s, 600/min, 1000/h, 20000/day; off lifts "
                                                     "the rate; empty keeps the declared one.")
    concurrency = forms.CharField(required=False, help_text="Calls at once, 1 to 10,000; 0 or off lifts it; empty "
                                                            "keeps the declared one.")

    class Meta:
        model = LimitOverride
        fields = ("target", "rate", "concurrency")
        error_messages = {"target": {"unique": "This limit is already changed: open its override in the list and "
                                               "edit it (or delete it to go back to the declared limit)."}}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.instance.pk is not None and self.instance.concurrency is not None:
            self.initial["concurrency"] = "off" if self.instance.concurrency == 0 else str(self.instance.concurrency)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        checks = (("target", lambda v: services.check_target(v, get_config())),
                  ("rate", services.check_rate_text), ("concurrency", services.check_concurrency_value))
        for name, check in checks:
            if name == "target" and name not in data:
                continue  # an existing override's target is read-only; a missing one is the field's own error
            try:
                data[name] = check(data.get(name))
            except SanomaError as err:
                self.add_error(name, err.message)
        if not self.errors and data.get("rate") == "" and data.get("concurrency") is None:
            raise forms.ValidationError("Say what changes: a rate (5/s, or off), a concurrency (2, or off), or both.")
        return data


@admin.register(LimitOverride)
class LimitOverrideAdmin(admin.ModelAdmin):
    form = LimitOverrideForm
    change_list_template = "admin/runs/limitoverride/change_list.html"
    list_display = ("target", "rate_set", "concurrency_set", "set_by", "set")
    list_display_links = ("target",)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def _may_change(self, request: HttpRequest) -> bool:
        return is_staff(request) and me(request).has_global("runs.pause")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return self._may_change(request)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_change(request)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._may_change(request)

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> tuple[str, ...]:
        return ("target",) if obj is not None else ()

    @admin.display(description="rate")
    def rate_set(self, override: LimitOverride) -> str:
        return override.rate or "as declared"

    @admin.display(description="at once")
    def concurrency_set(self, override: LimitOverride) -> str:
        if override.concurrency is None:
            return "as declared"
        return "off" if override.concurrency == 0 else str(override.concurrency)

    set = moment_column("set_at", "set at")

    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        extra = {**(extra_context or {}), "limits": selectors.limits_in_force(get_config()),
                 "title": "Limits"}
        return super().changelist_view(request, extra)

    def save_model(self, request: HttpRequest, obj: LimitOverride, form: Any, change: bool) -> None:
        data = form.cleaned_data
        made = services.set_override(target=obj.target, rate=data["rate"] or None,
                                     concurrency="off" if data["concurrency"] == 0 else data["concurrency"],
                                     by=me(request))
        obj.pk, obj.set_by, obj.set_at = made.pk, made.set_by, made.set_at

    def delete_model(self, request: HttpRequest, obj: LimitOverride) -> None:
        services.reset(target=obj.target, by=me(request))

    def delete_queryset(self, request: HttpRequest, queryset: Any) -> None:
        for override in list(queryset):
            services.reset(target=override.target, by=me(request))
