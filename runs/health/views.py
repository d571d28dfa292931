"""`/healthz` and `/readyz`, for load balancers and container platforms: JSON, no sign-in, no cookies.

`/healthz` answers 200 as soon as the process serves requests, reading nothing; `/readyz` answers
200 when the database answers, every migration is applied and the config resolves, else 503 with
the checks by name, each failed one saying what failed (without the config's own error, which
names files: `manage.py health` prints it).
"""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_safe

from runs.health import probes


@never_cache
@require_safe
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"ok": True})


@never_cache
@require_safe
def readyz(request: HttpRequest) -> JsonResponse:
    checks = probes.readiness()
    failed = [check.name for check in checks if not check.ok]
    return JsonResponse({"ok": not failed, "failed": failed, "checks": {c.name: c.as_dict() for c in checks}},
                        status=503 if failed else 200)
