"""Scenarios for sandbox runs (`runs.sandbox`): which of the company's scenarios exercise a
workflow, seeding a sandbox's fakes from one's `Given` steps, and its `Then` steps checked against a
sandbox run that ended. The site installs `SCENARIOS` as the runtime's scenario reader
(`runs.sandbox.scenarios.install`): the runtime sits below the scenario library and asks through it.

Each step is run by the scenario library's own implementation (`features.library.world`), the one
behave runs: a seed calls the operation on its fake, a state step edits the fake's state, a fault is
queued on the fake; a check reads the run's ledger and the fakes as the run left them. What a
sandbox run does not take from its scenario: who starts it (the operator who asks), the people and
groups it names (the desk's people decide), its decisions and messages (decided and sent on the
desk, as for any run) and its clock (sleeps take their time).
"""
from __future__ import annotations

import difflib
from typing import Any

from connectors.errors import InvalidInput, IssueCode, SanomaError
from features.library import model as m
from features.library.errors import DriveError, StepFailed
from features.library.loader import load_scenarios
from features.library.world import ScenarioWorld
from runs.config.resolution import ResolvedConfig
from runs.sandbox.fakes import base_config
from runs.sandbox.scenarios import Chosen

# The Given actions that seed the fakes (a Custom Given is a step set's, run the same way).
SEEDS = (m.Seed, m.SetState, m.Custom)
# The Then actions that are checks.
CHECKS = (m.ExpectCall, m.ExpectOutcome, m.ExpectWaiting, m.ExpectOutput, m.ExpectLedger, m.ExpectLedgerOrder,
          m.ExpectState, m.ExpectCollection, m.ExpectVendorCalls, m.Custom)


def scenarios_of(config: ResolvedConfig, workflow: str | None = None) -> list[m.Scenario]:
    """The config's readable scenarios (those running `workflow`, when given), by file and line.
    Read from the config a sandbox's was made from: read once, while the files do not change."""
    found = load_scenarios(base_config(config)).scenarios
    return sorted((s for s in found if workflow is None or s.workflow == workflow), key=lambda s: (s.file, s.line))


def check_workflow(config: ResolvedConfig, workflow: str | None) -> None:
    """Nothing when `workflow` is None or the config's; else `invalid_input` naming it, the closest
    workflow names and every workflow there is."""
    if workflow is None or workflow in config.workflows:
        return
    names = sorted(config.workflows)
    close = difflib.get_close_matches(workflow, names, n=SUGGESTED, cutoff=0.6)
    meant = f" Did you mean {' or '.join(close)}?" if close else ""
    said = f"No workflow {workflow!r}.{meant} The workflows are {', '.join(names)}"
    raise InvalidInput(said, data={"issues": [{"path": ["workflow"], "code": IssueCode.NOT_FOUND,
                                               "message": said}]})


def find_scenario(config: ResolvedConfig, *, name: str, workflow: str | None = None) -> m.Scenario:
    """The scenario called `name` (running `workflow`, when given); else `invalid_input` naming those there are."""
    check_workflow(config, workflow)
    mine = scenarios_of(config, workflow)
    scenario = next((s for s in mine if s.name == name), None)
    if scenario is not None:
        return scenario
    other = next((s for s in scenarios_of(config) if s.name == name), None)
    if other is not None:
        message = f'Scenario "{name}" runs workflow {other.workflow}, not {workflow}'
    else:
        message = _not_found(name, workflow, [s.name for s in mine])
    raise InvalidInput(message, data={"issues": [{"path": ["scenario"], "code": IssueCode.NOT_FOUND,
                                                  "message": message}]})


SUGGESTED = 3  # at most this many names are suggested for one that matches no scenario


def close_names(name: str, names: list[str]) -> list[str]:
    """The scenario names closest to `name` (case and spacing aside), best first, at most SUGGESTED:
    those spelled alike, then those holding every word typed."""
    folded = {" ".join(known.lower().split()): known for known in names}
    typed = " ".join(name.lower().split())
    alike = [folded[f] for f in difflib.get_close_matches(typed, list(folded), n=SUGGESTED, cutoff=0.6)]
    words = typed.split()
    holding = [known for f, known in folded.items() if words and all(w in f for w in words) and known not in alike]
    return (alike + holding)[:SUGGESTED]


def _not_found(name: str, workflow: str | None, names: list[str]) -> str:
    """No scenario `name`: the closest names, if any, and how to list them all (never all of them)."""
    where = f"of workflow {workflow}" if workflow else "of the company"
    if not names:
        return f'No scenario "{name}" {where}: there is none'
    close = close_names(name, names)
    meant = (" Did you mean " + ", ".join(f'"{c}"' for c in close[:-1]) + (" or " if len(close) > 1 else "")
             + f'"{close[-1]}"?') if close else ""
    listing = (f"`manage.py sandbox --workflow {workflow}` (or `GET /api/scenarios?workflow={workflow}`)" if workflow
               else "`manage.py sandbox` (or `GET /api/scenarios`)")
    return f'No scenario "{name}" {where}.{meant} {listing} lists all {len(names)}.'


def _world(config: ResolvedConfig, scenario: m.Scenario) -> ScenarioWorld:
    world = ScenarioWorld(config, scenario)
    # A config's own steps may write to the site's tables (the spend steps do): they ask this to refuse.
    world.sandbox = True
    return world


def _run_step(world: Any, step: m.ScenarioStep) -> None:
    """One step by the world's own handler (as `ScenarioWorld.execute` runs it, without its end-of-scenario
    decision check: a sandbox run's approvals are decided on the desk)."""
    world.step, world.text, world.table = step, None, None
    handler = getattr(world, f"_do_{type(step.action).__name__}")
    try:
        handler(step.action)
    except StepFailed:
        raise
    except DriveError as err:
        raise StepFailed(str(err)) from None
    except AssertionError as err:
        raise StepFailed(str(err) or f"{step.describe()} did not hold") from None


def sandbox_problem(scenario: m.Scenario) -> str | None:
    """Why a sandbox run can never be seeded from the scenario, known before seeding it: a `Given`
    of a step set whose function refuses the sandbox (its `sandbox_refusal(*values)` says why, as
    the spend steps' do: they write the company's own table). None when nothing refuses."""
    for step in scenario.steps:
        if step.kind != "given" or not isinstance(step.action, m.Custom):
            continue
        refusal = getattr(step.action.function, "sandbox_refusal", None)
        if refusal is not None:
            return (f"The scenario's step {step.describe()!r} ({scenario.file}:{step.line}) cannot seed a sandbox "
                    f"run: {refusal(*step.action.values)}")
    return None


def _seed_refused(said: str, detail: str) -> InvalidInput:
    return InvalidInput(said, data={"issues": [{"path": ["scenario"], "code": IssueCode.INVALID, "message": detail}]})


def seed(config: ResolvedConfig, scenario: m.Scenario) -> None:
    """The scenario's `Given` steps against `config`'s fakes (fresh ones: a sandbox's), then its
    faults queued, as a scenario run does before its run starts. A scenario with a `sandbox_problem`,
    or a seed that fails, is `invalid_input` naming the step and its place from the config root."""
    problem = sandbox_problem(scenario)
    if problem is not None:
        raise _seed_refused(problem, problem)
    world = _world(config, scenario)
    for step in scenario.steps:
        if step.kind == "given" and isinstance(step.action, SEEDS):
            try:
                _run_step(world, step)
            except StepFailed as err:
                # The world's failure starts with `<file>:<line>: <step>`: said here once, from the config root.
                head, _, rest = str(err).partition("\n")
                why = rest if rest and head.endswith(step.describe()) else str(err)
                raise _seed_refused(f"The scenario's step {step.describe()!r} ({scenario.file}:{step.line}) could not "
                                    f"seed the fakes: {why}", why) from None
    for fault in scenario.actions(m.Fault):
        vendor = config.ops[fault.op].vendor
        getattr(config.fakes[vendor], fault.fault)(fault.op)


def checks(config: ResolvedConfig, scenario: m.Scenario, *, run_id: str,
           calls_before: dict[str, int]) -> list[dict[str, Any]]:
    """Each `Then` step of the scenario against the run `run_id` and `config`'s fakes (as the run
    left them): `{"step", "line", "ok", "detail"}`, in the scenario's order."""
    world = _world(config, scenario)
    world.run_id = run_id
    world.calls_before = dict(calls_before)
    out = []
    for step in scenario.steps:
        if step.kind != "then" or not isinstance(step.action, CHECKS):
            continue
        try:
            _run_step(world, step)
        except StepFailed as err:
            head, _, rest = str(err).partition("\n")
            detail = rest if rest and head.endswith(step.describe()) else str(err)  # the step is shown beside it
            out.append({"step": step.describe(), "line": step.line, "ok": False, "detail": detail})
        except SanomaError as err:
            out.append({"step": step.describe(), "line": step.line, "ok": False, "detail": str(err)})
        except Exception as err:  # a step set's own function that broke: shown, not raised
            out.append({"step": step.describe(), "line": step.line, "ok": False,
                        "detail": f"{type(err).__name__}: {err}"})
        else:
            out.append({"step": step.describe(), "line": step.line, "ok": True, "detail": ""})
    return out


def _chosen(scenario: m.Scenario) -> Chosen:
    return Chosen(name=scenario.name, file=scenario.file, line=scenario.line, workflow=scenario.workflow,
                  input=dict(scenario.input), steps=[s.describe() for s in scenario.steps],
                  problem=sandbox_problem(scenario) or "")


class ScenarioBook:
    """The runtime's scenario reader (`runs.sandbox.scenarios.ScenarioReader`) over this library."""

    def of_workflow(self, config: ResolvedConfig, workflow: str | None) -> list[Chosen]:
        check_workflow(config, workflow)
        return [_chosen(s) for s in scenarios_of(config, workflow)]

    def find(self, config: ResolvedConfig, *, name: str, workflow: str | None = None) -> Chosen:
        return _chosen(find_scenario(config, name=name, workflow=workflow))

    def seed(self, config: ResolvedConfig, chosen: Chosen) -> None:
        seed(config, find_scenario(config, name=chosen.name))

    def checks(self, config: ResolvedConfig, chosen: Chosen, *, run_id: str,
               calls_before: dict[str, int]) -> list[dict[str, Any]]:
        return checks(config, find_scenario(config, name=chosen.name), run_id=run_id, calls_before=calls_before)


SCENARIOS = ScenarioBook()
