"""`GET /api/`: the API's own index, read from its OpenAPI schema: every endpoint, its methods and
what each does, and where the schema and the interactive docs are."""
from __future__ import annotations

from typing import Any

from drf_spectacular.generators import SchemaGenerator
from drf_spectacular.utils import extend_schema
from rest_framework.permissions import AllowAny
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

METHODS = ("get", "post", "put", "patch", "delete")


def endpoints() -> list[dict[str, Any]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    found = []
    for path, item in sorted(schema.get("paths", {}).items()):
        methods = {m.upper(): (item[m].get("summary") or item[m].get("operationId", "")) for m in METHODS if m in item}
        found.append({"path": path, "methods": methods})
    return found


class ApiIndexView(APIView):
    """Open to anyone: it says what exists, never anything about a run."""

    permission_classes = [AllowAny]
    authentication_classes: list[Any] = []
    renderer_classes = [JSONRenderer]

    @extend_schema(exclude=True)  # the index of the schema is not itself an endpoint of it
    def get(self, request: Request) -> Response:
        return Response({"schema": "/api/schema/", "docs": "/api/docs/", "endpoints": endpoints()})
