"""`GET /api/scenarios`: the config's scenarios (its feature files), each with where it is and the
workflow it runs; a scenario that cannot be read is listed with its problem instead, and one no
sandbox run can be seeded from with why.

It lives here, not in `runs.api`, because the scenarios are read by `features` (which sits above
`runs`); it answers through the API's own view class, so errors, paging and headers are the API's.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from runs.api.base import SanomaAPIView, errors
from runs.api.pagination import Page
from runs.api.serializers import StrictCharField, StrictSerializer
from runs.config.paths import root_path
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig


@dataclass(frozen=True)
class ScenarioEntry:
    file: str | None
    line: int | None
    name: str | None
    workflow: str | None
    tags: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    problem: str | None = None


class ScenarioSerializer(serializers.Serializer):
    file = serializers.CharField(allow_null=True, help_text="The feature file, from the config root.")
    line = serializers.IntegerField(allow_null=True, help_text="The scenario's first line (from 1).")
    name = serializers.CharField(allow_null=True, help_text="null for a file that cannot be read at all")
    workflow = serializers.CharField(allow_null=True, help_text="The workflow its When runs; null with a problem.")
    tags = serializers.ListField(child=serializers.CharField())
    ops = serializers.ListField(child=serializers.CharField(), help_text="The operations its steps name.")
    problem = serializers.CharField(allow_null=True, help_text=(
        "Why it cannot be read (its workflow null), or why no sandbox run can be seeded from it (a start "
        "is refused with these words); null when it can be read and started."))


class ScenarioQuery(StrictSerializer):
    workflow = StrictCharField(required=False, max_length=200, help_text="only the scenarios running it")


def scenario_entries(config: ResolvedConfig) -> list[ScenarioEntry]:
    """Every scenario in file order, then every problem, each placed at its file and line."""
    # Here, not at the top: the URLs (which every `manage.py migrate` or `check` imports to check
    # them) import this module, and the scenario library brings behave and its parsers.
    from features.library.errors import ScenarioConfigError
    from features.library.loader import load_scenarios
    from features.library.sandbox import sandbox_problem

    try:
        loaded = load_scenarios(config)
    except ScenarioConfigError as err:
        return [ScenarioEntry(file=None, line=None, name=None, workflow=None, problem=str(p)) for p in err.problems]
    entries = [
        ScenarioEntry(file=s.file, line=s.line, name=s.name, workflow=s.workflow, tags=list(s.tags),
                      ops=sorted({step.op for step in s.steps if step.op}), problem=sandbox_problem(s))
        for s in sorted(loaded.scenarios, key=lambda s: (s.file, s.line))
    ]
    root = getattr(config, "root", None)
    for problem in loaded.problems:
        entries.append(ScenarioEntry(file=root_path(problem.file, root) if problem.file else None, line=problem.line,
                                     name=None, workflow=None, problem=problem.message))
    return entries


class ScenarioListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(
        operation_id="scenarios_list", summary="The scenarios of the feature files, with the workflow each runs",
        description="Readable scenarios by file and line, then the problems that keep others from being read.",
        parameters=[ScenarioQuery],
        responses={200: ScenarioSerializer(many=True), **errors(400)},
    )
    def get(self, request: Request) -> Response:
        # limit and offset are the paginator's to check
        query = self.checked(ScenarioQuery, {k: v for k, v in request.query_params.items()
                                             if k not in ("limit", "offset")})
        entries = scenario_entries(get_config())
        if query.get("workflow"):
            entries = [e for e in entries if e.workflow == query["workflow"]]
        rows: list[dict[str, Any]] = [asdict(e) for e in entries]
        return self.paged(request, rows, lambda page: ScenarioSerializer(page, many=True).data)
