from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import recovery
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded, run_id_argument
from runs.management.commands._plan import confirmed, plan_lines


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Fork a run from step N onto the current code: a new run <run>~<n> that reuses the steps before N "
            "(their calls are not made again) and goes on live from N. Lists the steps reused and those made live "
            "again, with their effects, and asks first (--yes to skip the question, --dry-run to only list).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--from", dest="from_step", type=int, required=True, help="the step to go on live from")
        parser.add_argument("--yes", action="store_true", help="do not ask: fork after listing what it does")
        parser.add_argument("--dry-run", action="store_true", help="only list what the fork would do")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id, from_step, user = run_id_argument(options["run_id"]), options["from_step"], options["user"]
        plan = recovery.check_fork(run_id=run_id, from_step=from_step, by=user)
        self.stdout.write("\n".join(plan_lines(plan)))
        if options["dry_run"]:
            return
        if not confirmed(self, f"Fork {run_id} from step {from_step}?", yes=options["yes"], what="forked"):
            return
        run = recovery.fork(run_id=run_id, from_step=from_step, by=user)
        self.stdout.write(f"{run.id} queued (fork of {run.source_run} from step {from_step})")
