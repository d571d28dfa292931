"""Scenarios: a company's behaviour in Gherkin feature files, run against its fakes.

- `load_scenarios(config)` reads `scenarios/` and `apps/<app>/scenarios/` of the config root:
  `LoadResult(scenarios, problems)`; every problem names `file:line`.
- `StepLibrary.of(config)`: the generic steps, each operation's phrases, the step sets.
- `check(scenario, records)`: expectations against a run's ledger (pure).
- `Driver`: drives a run in-process, deciding its approvals as the scenario says.
- `StepSet`: steps a connector or the config adds.
- `features.library.behave_support`: the behave hooks `features/environment.py` uses.

Modules that touch the database (`drive`, `world`, `behave_support`) are imported on demand.
"""
from features.library.checks import Check, check
from features.library.errors import DriveError, ScenarioConfigError, ScenarioProblem, StepFailed
from features.library.library import StepLibrary
from features.library.loader import LoadResult, compile_features, load_scenarios, scenario_files
from features.library.model import Decision, Scenario, ScenarioStep
from features.library.stepsets import StepSet

__all__ = [
    "Check",
    "Decision",
    "DriveError",
    "LoadResult",
    "Scenario",
    "ScenarioConfigError",
    "ScenarioProblem",
    "ScenarioStep",
    "StepFailed",
    "StepLibrary",
    "StepSet",
    "check",
    "compile_features",
    "load_scenarios",
    "scenario_files",
]
