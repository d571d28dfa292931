"""`/metrics`: every metric of this host in Prometheus' text format, for a scraper holding the
token (`Authorization: Bearer $SANOMA_METRICS_TOKEN`) or a signed-in superuser, and nobody else.

No credentials: 401; a wrong token, or a signed-in user who is not a superuser: 403. Both in the
API's error shape (`{"error": ..., "code": ...}`). With no token set, only superusers read it.
"""
from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils.module_loading import import_string
from django.views.decorators.http import require_GET

from connectors.errors import ErrorCode
from runs.api.base import error_body
from runs.telemetry import metrics as metrics_values
from runs.telemetry.collector import DatabaseCollector

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry
    from prometheus_client.metrics_core import Metric

BEARER = "bearer "
log = logging.getLogger("sanoma.telemetry")


def _refusal(status: int, message: str, code: str) -> JsonResponse:
    response = JsonResponse(error_body(message, code=code), status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="metrics"'
    return response


def _refused(request: HttpRequest) -> JsonResponse | None:
    header = request.headers.get("Authorization", "")
    token = settings.SANOMA_METRICS_TOKEN
    if header:
        if not header.lower().startswith(BEARER):
            return _refusal(401, "Send the metrics token as 'Authorization: Bearer <token>'",
                            ErrorCode.NOT_AUTHENTICATED)
        if token and hmac.compare_digest(header[len(BEARER):].strip().encode(), token.encode()):
            return None
        if not token:
            return _refusal(403, "No metrics token is set on this site (SANOMA_METRICS_TOKEN), so no token reads "
                                 "the metrics; set one, or sign in as a superuser", ErrorCode.PERMISSION_DENIED)
        return _refusal(403, "That token does not read the metrics (SANOMA_METRICS_TOKEN)", ErrorCode.PERMISSION_DENIED)
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return _refusal(401, "Sign in as a superuser, or send the metrics token as 'Authorization: Bearer <token>'",
                        ErrorCode.NOT_AUTHENTICATED)
    if not user.is_superuser:
        return _refusal(403, "Only a superuser, or a scraper with the metrics token, reads the metrics",
                        ErrorCode.PERMISSION_DENIED)
    return None


def extra_collectors() -> list[Any]:
    """The collectors `SANOMA_METRICS_COLLECTORS` names by dotted path (a class, made with no arguments).

    A path that names nothing importable is ImproperlyConfigured, naming it."""
    made: list[Any] = []
    for path in settings.SANOMA_METRICS_COLLECTORS:
        try:
            made.append(import_string(path)())
        except ImportError as err:
            raise ImproperlyConfigured(f"SANOMA_METRICS_COLLECTORS names {path!r}, which cannot be imported: {err}"
                                       ) from None
    return made


def registry(collectors: Iterable[Any] = ()) -> CollectorRegistry:
    """What one scrape reads: the process files of the host (or this process alone, without a
    folder), the database's gauges and the configured collectors."""
    from prometheus_client import CollectorRegistry
    from prometheus_client.multiprocess import MultiProcessCollector

    metrics_values.flush()  # this process's own values added up since its last write
    scrape = CollectorRegistry(auto_describe=False)
    folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    if folder:
        MultiProcessCollector(scrape, path=folder)
    else:
        scrape.register(_Default())
    scrape.register(DatabaseCollector())
    for collector in collectors:
        scrape.register(collector)
    return scrape


class _Default:
    """This process's own metrics (no multi-process folder): the default registry's."""

    def collect(self) -> Iterable[Metric]:
        from prometheus_client import REGISTRY

        return REGISTRY.collect()


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

    refused = _refused(request)
    if refused is not None:
        return refused
    try:
        collectors = extra_collectors()
    except ImproperlyConfigured as err:
        log.error("/metrics: %s", err)
        return _refusal(500, str(err), ErrorCode.CONFIG_INVALID)
    return HttpResponse(generate_latest(registry(collectors)), content_type=CONTENT_TYPE_LATEST)
