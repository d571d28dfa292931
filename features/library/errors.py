"""Errors a scenario writer can act on: each names the feature file and line it is about."""
from __future__ import annotations

from connectors.errors import ConfigError, SanomaError


class ScenarioProblem(Exception):
    """A feature file that cannot be read as scenarios: `file:line: what is wrong`."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.file = file
        self.line = line

    @property
    def location(self) -> str:
        if self.file is None:
            return ""
        return f"{self.file}:{self.line}" if self.line else self.file

    def at(self, file: str, line: int | None) -> ScenarioProblem:
        """This problem, placed at `file:line` unless it already names a place."""
        if self.file is None:
            self.file, self.line = file, line
        return self

    def __str__(self) -> str:
        return f"{self.location}: {self.message}" if self.location else self.message


class ScenarioConfigError(ConfigError):
    """The config makes every scenario unreadable (an operation's phrase names a field its input
    does not have, a step set that cannot be read): the whole load fails."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        # A problem over several lines (an expression with a pointer under it) stays under its dash.
        lines = "\n".join("- " + str(p).replace("\n", "\n  ") for p in self.problems)
        self.message = f"No scenario can be read: the config's scenario steps are broken:\n{lines}"

    def __str__(self) -> str:
        return self.message


class StepFailed(AssertionError):
    """A step that ran and did not hold: an expectation, a seed the fake refused, a run that
    could not be driven. An AssertionError, so behave reports it without a traceback."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None) -> None:
        self.file = file
        self.line = line
        where = f"{file}:{line}: " if file else ""
        super().__init__(where + message)


class DriveError(SanomaError):
    """Driving a run as the scenario says failed (no decision for an approval, an unread
    decision, a run that did not end). Codes: `run_running`, `not_approver`, `invalid_input`."""
