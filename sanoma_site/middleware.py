"""The site's own middleware: a request body over `SANOMA_MAX_BODY_BYTES` is refused before it is
read; a signed-in person sees moments in the time zone they chose."""
from __future__ import annotations

from collections.abc import Callable
from zoneinfo import ZoneInfo

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone

from connectors.errors import ErrorCode
from runs.preferences import time_zone_of

TIME_ZONE_SESSION_KEY = "sanoma_time_zone"


class BodyLimitMiddleware:
    """413 with a JSON error for a body larger than the limit (by its Content-Length), on every URL.

    It runs first, so nothing (no session, no view, no database) sees such a request. A body without
    a Content-Length is read by Django as empty under WSGI; forms are also held to the limit by
    Django's own DATA_UPLOAD_MAX_MEMORY_SIZE, set to the same value.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.SANOMA_MAX_BODY_BYTES
        declared = request.META.get("CONTENT_LENGTH") or ""
        try:
            length = int(declared) if declared else 0
        except ValueError:
            return _refuse(400, "Content-Length is not a number", ErrorCode.INVALID_INPUT)
        if length > limit:
            return _refuse(413, f"The body is {length} bytes; the limit is {limit} bytes (SANOMA_MAX_BODY_BYTES)",
                           ErrorCode.TOO_LARGE)
        return self.get_response(request)


def _refuse(status: int, message: str, code: str) -> HttpResponse:
    response = JsonResponse({"error": message, "code": code}, status=status)
    response["Cache-Control"] = "no-store"
    response["X-Content-Type-Options"] = "nosniff"
    # No `Connection: close`, though the body was not read: a WSGI application may not set a
    # hop-by-hop header (wsgiref, so runserver, answers 500 to one). The server deals with the unread
    # body: runserver and gunicorn read past it before the connection's next request.
    return response


class OperatorTimeZoneMiddleware:
    """Activates the signed-in person's own time zone (see `runs.preferences`), read once per
    session and kept there; everyone else sees the site's (`TIME_ZONE`)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        zone = ""
        if user is not None and user.is_authenticated and hasattr(request, "session"):
            if TIME_ZONE_SESSION_KEY not in request.session:
                request.session[TIME_ZONE_SESSION_KEY] = time_zone_of(user)
            zone = request.session[TIME_ZONE_SESSION_KEY]
        if zone:
            timezone.activate(ZoneInfo(zone))
        else:
            timezone.deactivate()
        return self.get_response(request)
