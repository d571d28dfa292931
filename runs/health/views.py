"""`/healthz` and `/readyz`, for load balancers and container platforms: JSON, no sign-in, no cookies.

`/healthz` answers 200 as soon as the process serves requests, reading nothing; `/readyz` answers
200 when the database answers, every migration is applied and the config resolves, else 503 with
the checks by name, each failed one saying what failed (without the config's own error, which
names files, nor a missing database file's path: `manage.py health` prints them).

Both take GET and HEAD only: any other method is 405 with a short JSON body naming them (and the
`Allow` header), answered before the CSRF check, which would otherwise answer a POST with its HTML
page.
"""
from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.csrf import csrf_exempt

from runs.health import probes

ALLOWED = ("GET", "HEAD")


def safe_only(view: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """GET and HEAD; another method is 405 in JSON. CSRF-exempt: these views change nothing, and a
    probe sending POST should learn which methods to use, not meet the CSRF page."""
    @wraps(view)
    def checked(request: HttpRequest) -> HttpResponse:
        if request.method not in ALLOWED:
            refused = JsonResponse({"ok": False, "error": f"{request.method} is not allowed here: use GET or HEAD",
                                    "allowed": list(ALLOWED)}, status=405)
            refused["Allow"] = ", ".join(ALLOWED)
            return refused
        return view(request)
    return csrf_exempt(checked)


@never_cache
@safe_only
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


@never_cache
@safe_only
def readyz(request: HttpRequest) -> JsonResponse:
    checks = probes.readiness()
    failed = [check.name for check in checks if not check.ok]
    return JsonResponse({"ok": not failed, "failed": failed, "checks": {c.name: c.as_dict() for c in checks}},
                        status=503 if failed else 200)
