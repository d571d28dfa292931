from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import services
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded, run_id_argument


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Cancel a run that has not ended, saying why (--reason, kept in its run.cancelled record); its "
            "pending approvals are withdrawn and its unfinished child runs cancelled with it.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--reason", required=True, help="why (required): kept in the run's ledger")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run = services.cancel(run_id=run_id_argument(options["run_id"]), by=options["user"], reason=options["reason"])
        self.stdout.write(f"{run.id} {run.status} by {options['user']}: {options['reason'].strip()}")
