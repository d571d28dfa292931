from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import selectors, services
from runs.management.commands._common import dumps, guarded, read_input


class Command(BaseCommand):
    help = "Start a run of a workflow: manage.py start refund --as alice --set order_id=1001 --set amount_cents=500"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("workflow")
        parser.add_argument("--as", dest="user", required=True, help="the username starting the run")
        parser.add_argument("--input", help="the input as a JSON object")
        parser.add_argument("--input-file", help="a file holding the input as JSON")
        parser.add_argument(
            "--set", action="append", default=[], help="key=value (JSON, text, or +2m for a time from now)"
        )
        parser.add_argument("--run-id", help="a run id of your own: starting again with it returns the same run")
        parser.add_argument("--wait", type=float, default=0, help="wait up to this many seconds for the result")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        data = read_input(input_json=options["input"], input_file=options["input_file"], sets=options["set"])
        run = services.start(
            workflow=options["workflow"], input=data, started_by=options["user"], run_id=options["run_id"]
        )
        self.stdout.write(f"{run.id} {run.status}")
        if options["wait"]:
            output = selectors.result(run_id=run.id, timeout=options["wait"])
            self.stdout.write(dumps(output))
