"""What `fork` and `rerun` show before they act: the plan `runs.recovery` answers, and the question."""
from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import CommandError

from runs.recovery import PlannedStep, RecoveryPlan


def _line(step: PlannedStep) -> str:
    effect = f" [{step.effect}]" if step.effect else ""
    return f"    step {step.seq}: {step.kind} {step.name}{effect} (was {step.outcome}): {step.again}"


def plan_lines(plan: RecoveryPlan) -> list[str]:
    """The plan as lines: the steps reused, the steps made live again with their effects."""
    source = plan.source
    what = f"{source.id} ({source.workflow}, {source.status})"
    if plan.act == "fork":
        lines = [f"Fork {what} from step {plan.from_step} onto the current code:"]
    else:
        lines = [f"Rerun {what} from the top on the current code:"]
    if plan.reused:
        lines.append("  reused (not done again):")
        lines += [_line(step) for step in plan.reused]
    lines.append("  made live again:" if plan.live else "  made live again: nothing the source recorded")
    lines += [_line(step) for step in plan.live]
    if plan.effects:
        lines.append(f"  done again at the vendors: {', '.join(plan.effects)}")
    lines.append("  and whatever the current code does after the steps the source recorded")
    return lines


def confirmed(command: Any, question: str, *, yes: bool, what: str) -> bool:
    """Ask `question` on a terminal, unless --yes; without a terminal, --yes is required."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise CommandError(f"not {what}: confirm with --yes (standard input is not a terminal to ask on)")
    if input(f"{question} [y/N] ").strip().lower() in ("y", "yes"):
        return True
    command.stdout.write(f"not {what}")
    return False


def summary_line(plan: RecoveryPlan) -> str:
    """One line a run of a bulk rerun: the calls it makes again, with their effects."""
    calls = [f"{step.name} [{step.effect}]" for step in plan.live if step.kind == "call"]
    return f"  {plan.source.id}: calls again {', '.join(calls)}" if calls else f"  {plan.source.id}: no calls"
