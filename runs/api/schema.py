"""The API's OpenAPI schema class: what drf-spectacular cannot read from the views themselves.

- A run id in a path follows the run-id rule, so the schema gives its pattern (the route itself
  takes any segment, so that a bad id is answered `400` stating the rule rather than a bare 404).
- Every operation with a run id in its path documents that `400`.
- Every operation with a path parameter documents `404`: a value that names nothing, or one holding
  a `/` (decoded before routing), which names no endpoint.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.openapi import AutoSchema
from drf_spectacular.utils import OpenApiResponse

from runs.api.serializers import ErrorSerializer
from runs.validation import MAX_RUN_ID_LENGTH

RUN_ID_PATTERN = rf"^[A-Za-z0-9_.:@~-]{{1,{MAX_RUN_ID_LENGTH}}}$"
BAD_RUN_ID = OpenApiResponse(ErrorSerializer, description="invalid_input: the run id breaks the run-id rule")
NAMES_NOTHING = OpenApiResponse(ErrorSerializer, description="run_not_found, not_found (a path naming nothing) "
                                                             "or another code of a missing thing")


class SanomaAutoSchema(AutoSchema):
    def _resolve_path_parameters(self, variables: list[str]) -> list[Any]:
        parameters = super()._resolve_path_parameters(variables)
        for parameter in parameters:
            if parameter["name"] in ("run_id", "other_id"):
                parameter["schema"] = {"type": "string", "pattern": RUN_ID_PATTERN,
                                       "minLength": 1, "maxLength": MAX_RUN_ID_LENGTH}
                parameter["description"] = "A run id: letters, digits, -, _, ., :, @ and ~ (1-200)."
        return parameters

    def _get_response_bodies(self, direction: Any = "response") -> dict[str, Any]:
        responses: dict[str, Any] = super()._get_response_bodies(direction)
        if "{run_id}" in self.path and "400" not in responses:
            responses["400"] = self._get_response_for_code(BAD_RUN_ID, "400", direction=direction)
        if "{" in self.path and "404" not in responses:
            responses["404"] = self._get_response_for_code(NAMES_NOTHING, "404", direction=direction)
        return dict(sorted(responses.items()))
