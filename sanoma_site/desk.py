"""The operator's desk as the admin site: the desk's own apps first, Django's under "Administration".

The home page lists what an operator works with (runs and approvals, declared state, schedules)
before anything else; the tables Django and its add-ons keep (users, tokens, django-q's task
records, object permissions) are grouped under one "Administration" heading that only
superusers see. Within a section what an operator opens most comes first, and a table is named
for the page it is (the wake-ups' ScheduleState is "Schedules"); who may start a workflow is
granted from the catalog's page of that workflow, so workflows are listed once. Every page's
header carries the count of approvals waiting for the signed-in user ("99+" past 99), linked to the inbox.
"""
from __future__ import annotations

from typing import Any

from django.apps import apps as django_apps
from django.conf import settings
from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils import timezone

from connectors.errors import SanomaError
from runs.approvals.selectors import pending_badge
from runs.engine import clock
from runs.preferences import set_time_zone, time_zone_of, time_zones
from sanoma_site import catalog
from sanoma_site.health_page import health_page
from sanoma_site.middleware import TIME_ZONE_SESSION_KEY
from sanoma_site.signin import DeskSignInForm

# The desk's apps, in the order the home page lists them.
DESK_APPS = ("runs", "changes", "wakeups")
# Apps of their own whose pages the desk shows in another's section: credentials and the life of a
# change sit under Changes, beside the declared state's Resources.
FOLDED = {"credentials": "changes", "lifecycle": "changes"}
# Within a section, what an operator opens most comes first (by model class name); the rest follow
# in Django's order.
FIRST = {"runs": ("Run", "Approval", "Pause", "LedgerRecord", "CollectionRecord", "AppVersion")}
# Tables named for what the page shows rather than for the table.
NAMES = {("wakeups", "ScheduleState"): "Schedules", ("wakeups", "WakeupRow"): "Worker wake-up"}
# Tables reached from another page, not from the sidebar: who may start a workflow is granted
# from that workflow's catalog page (the catalog's Workflows is the one list of workflows).
UNLISTED = {("runs", "WorkflowEntry")}


def _desk_models(app: dict[str, Any]) -> dict[str, Any]:
    label = app["app_label"]
    order = FIRST.get(label, ())
    models = [{**model, "name": NAMES.get((label, model["object_name"]), model["name"])}
              for model in app["models"] if (label, model["object_name"]) not in UNLISTED]
    models.sort(key=lambda m: order.index(m["object_name"]) if m["object_name"] in order else len(order))
    return {**app, "models": models}


def _folded(apps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`apps` with each folded app's models in its host's section (the host made from it when the
    person sees nothing of the host's own), models sorted by name as Django sorts them."""
    by_label = {app["app_label"]: app for app in apps if app["app_label"] not in FOLDED}
    kept: list[dict[str, Any]] = []
    for app in apps:
        host_label = FOLDED.get(app["app_label"])
        if host_label is None:
            kept.append(app)
            continue
        host = by_label.get(host_label)
        if host is None:
            host = by_label[host_label] = {**app, "app_label": host_label, "models": [],
                                           "name": django_apps.get_app_config(host_label).verbose_name}
            kept.append(host)
        host["models"] = sorted([*host["models"], *app["models"]], key=lambda m: m["name"])
    return kept


class DeskSite(admin.AdminSite):
    login_form = DeskSignInForm  # says why a person who gave their right password cannot sign in
    site_header = "sanoma: the operator's desk"
    site_title = "sanoma"
    index_title = "The desk"

    def get_app_list(self, request: HttpRequest, app_label: str | None = None) -> list[dict[str, Any]]:
        apps = [_desk_models(app) if app["app_label"] in DESK_APPS else app
                for app in _folded(super().get_app_list(request, app_label))]
        if app_label is not None:
            return apps
        desk = sorted((a for a in apps if a["app_label"] in DESK_APPS), key=lambda a: DESK_APPS.index(a["app_label"]))
        rest = [a for a in apps if a["app_label"] not in DESK_APPS]
        desk.insert(1 if desk else 0, {
            "name": "Catalog", "app_label": "catalog", "app_url": reverse("admin:catalog_workflows"),
            "has_module_perms": True, "models": [
                {"name": "Workflows", "object_name": "workflow", "admin_url": reverse("admin:catalog_workflows"),
                 "view_only": True, "perms": {"view": True}},
                {"name": "Connectors", "object_name": "connector", "admin_url": reverse("admin:catalog_connectors"),
                 "view_only": True, "perms": {"view": True}},
            ]})
        desk.append({  # after the desk's apps: what the alert rules watch, as the page reads it
            "name": "Health", "app_label": "health", "app_url": reverse("admin:health"), "has_module_perms": True,
            "models": [{"name": "Conditions", "object_name": "condition", "admin_url": reverse("admin:health"),
                        "view_only": True, "perms": {"view": True}}]})
        if rest and request.user.is_superuser:
            models = [{**model, "name": f"{app['name']}: {model['name']}"} for app in rest for model in app["models"]]
            desk.append({"name": "Administration", "app_label": "administration", "app_url": rest[0]["app_url"],
                         "has_module_perms": True, "models": models})
        return desk

    def get_urls(self) -> list[Any]:
        def page(view: Any) -> Any:
            return self.admin_view(lambda request, **kw: view(request, context=self.each_context(request), **kw))

        return [
            path("preferences/", self.admin_view(self.preferences_view), name="preferences"),
            path("catalog/connectors/", page(catalog.connectors_page), name="catalog_connectors"),
            path("catalog/connectors/<str:vendor>/", page(catalog.connector_page), name="catalog_connector"),
            path("catalog/workflows/", page(catalog.workflows_page), name="catalog_workflows"),
            path("catalog/workflows/<str:name>/", page(catalog.workflow_page), name="catalog_workflow"),
            path("health/", page(health_page), name="health"),
            *super().get_urls(),
        ]

    def preferences_view(self, request: HttpRequest) -> HttpResponse:
        """Your own settings of the desk: the time zone its pages show moments in."""
        if request.method == "POST":
            try:
                zone = set_time_zone(user=request.user, zone=request.POST.get("time_zone", ""))
            except SanomaError as err:
                messages.error(request, err.message)
            else:
                request.session[TIME_ZONE_SESSION_KEY] = zone
                shown = zone or f"the site time zone ({settings.TIME_ZONE})"
                messages.success(request, f"Moments are shown in {shown}")
                return redirect("admin:preferences")
        return TemplateResponse(request, "admin/preferences.html", {
            **self.each_context(request), "title": "Your preferences", "zones": time_zones(),
            "current": time_zone_of(request.user), "site_zone": settings.TIME_ZONE,
        })

    def each_context(self, request: HttpRequest) -> dict[str, Any]:
        context = super().each_context(request)
        context["desk_now_ms"] = clock.now_ms()  # what a page's "(3 minutes ago)" counts from as it sits
        user = getattr(request, "user", None)
        if user is not None and user.is_active and user.is_staff:
            context["pending_for_me"] = pending_badge(principal=user.get_username())  # "", "7", "99+"
            context["time_zone_shown"] = timezone.get_current_timezone_name()
        return context
