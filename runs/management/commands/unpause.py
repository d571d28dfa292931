from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import pausing
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Lift a pause: the runs it held go on."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("target")
        parser.add_argument("--kind", choices=["connector", "operation", "workflow"])
        parser.add_argument("--reason", default="")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        kind = options["kind"] or pausing.kind_of(options["target"], get_config())
        pause = pausing.unpause(kind=kind, target=options["target"], by=options["user"], reason=options["reason"])
        self.stdout.write(f"{pause.kind} {pause.target} unpaused")
