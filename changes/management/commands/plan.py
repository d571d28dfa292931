"""`manage.py plan [--as U] [--json]`: what apply would change, and what the policy would say to
each call if U applied it now (allowed, denied and why, held for whom).

Runs drift first (a run). Exit status 0 when there is nothing to change, 2 when there are changes."""
from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from changes import services
from changes.management.commands._resources import add_common, plan_lines
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "What apply would change, with the policy's verdict on each call"

    def add_arguments(self, parser: CommandParser) -> None:
        add_common(parser)
        parser.add_argument("--json", action="store_true", help="print the plan as one JSON document")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run, report = services.drift(by=options["user"], here=options["here"], timeout=options["timeout"],
                                     purpose="plan")
        plan = services.plan(report, by=options["user"])
        if options["json"]:
            self.stdout.write(json.dumps({"drift_run": run.id, **plan}, indent=2))
        else:
            for line in plan_lines(plan, by=options["user"]):
                self.stdout.write(line)
        if not plan["empty"]:
            sys.exit(2)
