"""How the runtime reads the company's scenarios for sandbox runs: through a reader the site installs.

The scenario library (`features`) sits above the runtime, so the runtime names only what it needs
of it (`ScenarioReader`); the site installs the library's (`features.library.sandbox.SCENARIOS`)
when Django starts. Without one, starting or checking a sandbox run says so.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from connectors.errors import ErrorCode, SanomaError
from runs.config.resolution import ResolvedConfig


@dataclass(frozen=True)
class Chosen:
    """One scenario as a sandbox run needs it: where it is, the workflow it runs and its input."""

    name: str
    file: str
    line: int
    workflow: str
    input: dict[str, Any]
    steps: list[str] = field(default_factory=list)  # each step as written, keyword first
    problem: str = ""  # why no sandbox run can be seeded from it (starting one is refused so); "" when one can

    @property
    def input_json(self) -> str:
        return json.dumps(self.input, indent=2, sort_keys=True, default=str)


class ScenarioReader(Protocol):
    def of_workflow(self, config: ResolvedConfig, workflow: str | None) -> list[Chosen]:
        """The readable scenarios (running `workflow`, when given), by file and line."""

    def find(self, config: ResolvedConfig, *, name: str, workflow: str | None = None) -> Chosen:
        """The scenario called `name` (running `workflow`); else `invalid_input` naming those there are."""

    def seed(self, config: ResolvedConfig, chosen: Chosen) -> None:
        """Its `Given` steps against `config`'s fakes, then its faults queued."""

    def checks(self, config: ResolvedConfig, chosen: Chosen, *, run_id: str,
               calls_before: dict[str, int]) -> list[dict[str, Any]]:
        """Its `Then` steps against the run and `config`'s fakes: `{step, line, ok, detail}` each."""


_reader: ScenarioReader | None = None


def install(reader: ScenarioReader | None) -> None:
    global _reader
    _reader = reader


def reader() -> ScenarioReader:
    if _reader is None:
        raise SanomaError("No scenario reader is installed, so sandbox runs cannot be seeded or checked: the site "
                          "installs one when Django starts (sanoma_site in INSTALLED_APPS)",
                          code=ErrorCode.CONFIG_INVALID)
    return _reader
