"""The API's one parser: JSON read strictly, within the body limit, judged before any view sees it."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import status
from rest_framework.parsers import JSONParser

from connectors.errors import ErrorCode
from runs.api.errors import ApiError
from runs.validation import parse_json


def body_limit() -> int:
    return int(settings.SANOMA_MAX_BODY_BYTES)


def too_large(limit: int) -> ApiError:
    return ApiError(f"The body is larger than {limit} bytes (SANOMA_MAX_BODY_BYTES)", code=ErrorCode.TOO_LARGE,
                    http_status=status.HTTP_413_REQUEST_ENTITY_TOO_LARGE)


class StrictJSONParser(JSONParser):
    """UTF-8 JSON, no NaN or Infinity, at most 64 levels deep, no NUL or lone surrogate in any key or
    value; a refusal is `400 invalid_input` naming the path (413 `too_large` over the limit)."""

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        limit = body_limit()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise too_large(limit)
        return parse_json(raw, what="The body")
