"""The site's icon: what a browser shows in its tab, and asks for at /favicon.ico on a page that
names none (the API's pages, /metrics), so no request for it ends in a 404 in the site's log."""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.views.decorators.cache import cache_control
from django.views.decorators.http import require_GET

# A rounded square with an "s": small enough to send inline on every desk page too.
ICON_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" '
            'fill="#417690"/><text x="8" y="12" font-family="sans-serif" font-size="11" text-anchor="middle" '
            'fill="#fff">s</text></svg>')


@require_GET
@cache_control(max_age=86400, public=True)
def favicon(request: HttpRequest) -> HttpResponse:
    return HttpResponse(ICON_SVG, content_type="image/svg+xml")
