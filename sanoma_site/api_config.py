"""`GET /api/config`: the whole config as plain JSON (see `runs.config.describe`)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.base import SanomaAPIView, errors
from runs.config.describe import describe_config
from runs.config.registry import get_config


class ConfigView(SanomaAPIView):
    @extend_schema(operation_id="config_get", summary="The whole config, as plain JSON (never a credential)",
                   responses={200: OpenApiTypes.OBJECT, **errors()})
    def get(self, request: Request) -> Response:
        return Response(describe_config(get_config()))
