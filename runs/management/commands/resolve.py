from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs import recovery
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded, run_id_argument
from runs.validation import parse_json


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Settle a call in doubt (a vendor that ignores idempotency keys, a worker that died before recording "
            "its reply): it happened, with the vendor's output, or it did not, and the run calls again. "
            "Without --happened or --did-not-happen, list the runs in doubt.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", nargs="?")
        said = parser.add_mutually_exclusive_group()
        said.add_argument("--happened", action="store_true", help="it took effect; give --output")
        said.add_argument("--did-not-happen", action="store_true", help="it did not; the run calls again")
        parser.add_argument("--output", help="the vendor's reply, as JSON (with --happened)")
        parser.add_argument("--note", default="", help="how you know")
        parser.add_argument("--as", dest="user")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        if not options["run_id"]:
            for run, intent in recovery.runs_in_doubt():
                self.stdout.write(f"{run.id}  {run.workflow}  step {intent.seq}: {intent.body.get('op')} "
                                  f"(attempt {intent.body.get('attempt')})")
            return
        if not (options["happened"] or options["did_not_happen"]):
            raise CommandError("say --happened (with --output) or --did-not-happen")
        if not options["user"]:
            raise CommandError("say who settles it: --as <username>")
        output = parse_json(options["output"], what="--output") if options["output"] else None
        run = recovery.resolve_in_doubt(run_id=run_id_argument(options["run_id"]), happened=bool(options["happened"]),
                                        output=output, by=options["user"], note=options["note"])
        self.stdout.write(f"{run.id} {run.status}: the call is settled")
