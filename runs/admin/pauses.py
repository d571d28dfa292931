"""Pauses: what is paused, by whom and why, the runs each holds; pausing and unpausing.

Pausing goes through `runs.pausing` (the same checks as the command and the API): the add form
takes what to pause and why; "Unpause selected" lifts pauses. Pauses are kept after they are
lifted, read-only.
"""
from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.template.response import TemplateResponse
from django.utils.html import format_html_join

from connectors.errors import SanomaError
from runs import pausing
from runs.admin.base import is_staff, me, refusal, run_link
from runs.approvals.permissions import Principal
from runs.config.registry import get_config
from runs.display import moment_column
from runs.models import Pause


class PauseForm(forms.ModelForm):
    class Meta:
        model = Pause
        fields = ("kind", "target", "reason")
        help_texts = {"target": "A connector's vendor (shop), an operation's id (shop.order.refund) or a workflow's "
                                "name.", "reason": "What is wrong: the people whose runs are held read it."}

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("kind") and data.get("target"):
            try:
                pausing.check_target(kind=data["kind"], target=data["target"], config=get_config())
            except SanomaError as err:
                raise forms.ValidationError(err.message) from None
            active = pausing.active_pause(kind=data["kind"], target=data["target"])
            if active is not None:
                raise forms.ValidationError(f"{active.target} is already paused, by {active.paused_by}: "
                                            f"{active.reason}")
        return data


_viewer: ContextVar[Principal | None] = ContextVar("sanoma_pause_viewer", default=None)


def _rendered_for(request: HttpRequest, view: Callable[..., Any], *args: Any) -> Any:
    """`view(*args)`, its template rendered while `_viewer` is the request's person."""
    token = _viewer.set(me(request))
    try:
        response = view(*args)
        if isinstance(response, TemplateResponse):
            response.render()
        return response
    finally:
        _viewer.reset(token)


@admin.register(Pause)
class PauseAdmin(admin.ModelAdmin):
    form = PauseForm
    list_display = ("target", "kind", "state", "reason", "paused_by", "paused", "unpaused_by", "unpaused", "held")
    list_filter = ("kind",)
    actions = ("unpause_selected",)
    readonly_fields = ("held",)

    def has_module_permission(self, request: HttpRequest) -> bool:
        return is_staff(request)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return is_staff(request)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return is_staff(request) and me(request).has_global("runs.pause")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_actions(self, request: HttpRequest) -> dict[str, Any]:
        actions = super().get_actions(request)
        if not me(request).has_global("runs.pause"):
            actions.pop("unpause_selected", None)
        return actions

    @admin.display(description="state", boolean=False)
    def state(self, pause: Pause) -> str:
        return "active" if pause.active else "lifted"

    paused = moment_column("paused_at", "paused at")
    unpaused = moment_column("unpaused_at", "unpaused at")

    # The "runs held" column names only the runs the person looking may see. A display method has
    # no request, so the views below set who is looking while their page is rendered.
    def changelist_view(self, request: HttpRequest, extra_context: Any = None) -> Any:
        return _rendered_for(request, super().changelist_view, request, extra_context)

    def changeform_view(self, request: HttpRequest, object_id: Any = None, form_url: str = "",
                        extra_context: Any = None) -> Any:
        return _rendered_for(request, super().changeform_view, request, object_id, form_url, extra_context)

    @admin.display(description="runs held")
    def held(self, pause: Pause) -> str:
        viewer = _viewer.get()
        runs = pausing.held_runs(pause, viewer=viewer) if pause.active and viewer is not None else []
        if not runs:
            return "-"
        return format_html_join(", ", "{}", ((run_link(run.id),) for run in runs))

    def save_model(self, request: HttpRequest, obj: Pause, form: Any, change: bool) -> None:
        made = pausing.pause(kind=obj.kind, target=obj.target, reason=obj.reason, by=me(request))
        obj.pk = made.pk
        obj.paused_by, obj.paused_at = made.paused_by, made.paused_at

    @admin.action(description="Unpause selected")
    def unpause_selected(self, request: HttpRequest, queryset) -> None:
        for pause in queryset.filter(unpaused_at__isnull=True):
            try:
                pausing.unpause(kind=pause.kind, target=pause.target, by=me(request))
            except SanomaError as err:
                self.message_user(request, f"{pause.target} was not unpaused: {refusal(err)}", messages.ERROR)
            else:
                self.message_user(request, f"Unpaused {pause.kind} {pause.target}", messages.SUCCESS)
