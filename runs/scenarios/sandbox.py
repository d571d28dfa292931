"""What a sandbox run (SPEC 20.4, check 105) needs from the scenarios, for the engine to call.

`scenario_for_run(config, name, workflow)` finds the scenario or raises `invalid_input`;
`seed_fakes(config, scenario, run_id)` resets every fake, applies each seeding Given (an operation
called through its fake, or a state edit) in order, then injects the faults, and returns what was seeded (for the `scenario.seeded` record). The
engine records it once, in a step, so a replay never seeds twice. Plain Python: no database.
"""
from __future__ import annotations

from typing import Any

from connectors.drivers import CallContext
from connectors.errors import InvalidInput
from runs.scenarios import model as m
from runs.scenarios.loader import load_scenarios
from runs.scenarios.values import put_path


def scenario_for_run(config: Any, name: str, workflow: str) -> m.Scenario:
    result = load_scenarios(config)
    scenario = result.named(name)
    if scenario is None:
        why = f"; these did not load: {'; '.join(str(p) for p in result.problems)}" if result.problems else ""
        raise InvalidInput(f'No scenario named "{name}"{why}', data={"scenario": name})
    if scenario.workflow != workflow:
        raise InvalidInput(f'Scenario "{name}" runs {scenario.workflow}, not {workflow}',
                           data={"scenario": name, "workflow": scenario.workflow})
    for action in scenario.given:
        vendor = config.ops[action.op].vendor
        if vendor not in config.fakes:
            raise InvalidInput(f"No fake for {action.op}: its connector {vendor} declares none", data={"op": action.op})
    return scenario


def seed_fakes(config: Any, scenario: m.Scenario, run_id: str) -> list[dict[str, Any]]:
    """Reset the fakes, seed them, inject the faults; the seeds as `{op, input, output}`."""
    for fake in config.fakes.values():
        fake.reset()
    seeds: list[dict[str, Any]] = []
    for index, action in enumerate(scenario.actions(m.Seed, m.SetState)):
        if isinstance(action, m.SetState):
            config.fakes[action.vendor].update(lambda state, a=action: put_path(state, a.path, a.value))
            continue
        fake = config.fakes[config.ops[action.op].vendor]
        context = CallContext(idempotency_key=f"{run_id}:seed:{index}", run_id=run_id, op_id=action.op)
        seeds.append({"op": action.op, "input": action.input, "output": fake.call(action.op, action.input, context)})
    for action in scenario.actions(m.Fault):
        getattr(config.fakes[config.ops[action.op].vendor], action.fault)(action.op)
    return seeds
