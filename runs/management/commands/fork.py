from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import recovery
from runs.management.commands._common import guarded, run_id_argument


class Command(BaseCommand):
    help = ("Fork a run from step N onto the current code: a new run <run>~<n> that reuses the steps before N "
            "(their calls are not made again) and goes on live from N.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--from", dest="from_step", type=int, required=True, help="the step to go on live from")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run = recovery.fork(run_id=run_id_argument(options["run_id"]), from_step=options["from_step"],
                            by=options["user"])
        self.stdout.write(f"{run.id} queued (fork of {run.source_run} from step {options['from_step']})")
