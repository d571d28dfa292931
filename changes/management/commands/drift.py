"""`manage.py drift [--as U] [--json]`: compare what the vendors hold with the data files.

Exit status 0 when every resource is clean, 2 when something drifted or is gone, 1 on an error
(a resource's, or the run's)."""
from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from changes import services
from changes.management.commands._resources import add_common, drift_lines
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Compare what the vendors hold with what the data files declare (a drift run)"

    def add_arguments(self, parser: CommandParser) -> None:
        add_common(parser)
        parser.add_argument("--json", action="store_true", help="print the report as one JSON document")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run, report = services.drift(by=options["user"], here=options["here"], timeout=options["timeout"])
        if options["json"]:
            self.stdout.write(json.dumps({"run": run.id, **report}, indent=2))
        else:
            self.stdout.write(f"drift run {run.id}")
            for line in drift_lines(report):
                self.stdout.write(line)
        counts = report["summary"]
        code = 1 if counts["error"] else 2 if counts["drifted"] or counts["gone"] else 0
        if code:
            sys.exit(code)
