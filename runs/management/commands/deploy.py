"""`manage.py deploy [--json]`: what a worker does when it starts on new code, on its own.

Registers this code's version, proves every parked run of other versions against it, moves each
run that migrates (with its `run.migrated` record), pins the others (`run.pinned`, with the
reason), and judges held calls again when the policy changed (`runs.deploys`). Safe to run again
and beside a starting worker: a run is never moved twice. From an older version's code it deploys
nothing and fails (exit 1) naming the latest, unless `--promote` makes it the latest again.
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.deploys import deploy
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Deploy this code: prove every parked run of other versions against it, migrate those that "
            "replay to the same point, pin the others, and judge held calls again if the policy changed.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument("--promote", action="store_true",
                            help="make this version the latest again when a newer one has run")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        report = deploy(config=get_config(), promote=options["promote"])
        if report.note:  # refused: an older version, not promoted
            raise CommandError(report.lines()[0])
        if options["json"]:
            self.stdout.write(json.dumps(report.as_json(), indent=2))
            return
        for line in report.lines(shown=20):
            self.stdout.write(line)
