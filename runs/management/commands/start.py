from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import selectors, services
from runs.config.registry import get_config
from runs.config.resolution import input_schema
from runs.management.commands._common import dumps, guarded, read_input, run_id_argument


class Command(BaseCommand):
    help = "Start a run of a workflow: manage.py start refund --as alice --set order_id=1001 --set amount_cents=500"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("workflow")
        parser.add_argument("--as", dest="user", required=True, help="the username starting the run")
        parser.add_argument("--input", help="the input as a JSON object")
        parser.add_argument("--input-file", help="a file holding the input as JSON")
        parser.add_argument(
            "--set", action="append", default=[],
            help="key=value, read by the field's type: text for a text field, JSON otherwise (500, true, "
                 "[\"a\"]), +2m/+3h/+1d for a time from now in a date-time field",
        )
        parser.add_argument("--run-id", help="a run id of your own (1-200 characters: letters, digits, - _ . : @): "
                                             "starting again with it returns the same run")
        parser.add_argument("--wait", type=float, default=0, help="wait up to this many seconds for the result")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id = None if options["run_id"] is None else run_id_argument(options["run_id"])
        definition = get_config().workflows.get(options["workflow"])
        schema = input_schema(definition) if definition is not None else None
        data = read_input(input_json=options["input"], input_file=options["input_file"], sets=options["set"],
                          schema=schema)
        run = services.start(workflow=options["workflow"], input=data, started_by=options["user"], run_id=run_id)
        self.stdout.write(f"{run.id} {run.status}")
        if options["wait"]:
            output = selectors.result(run_id=run.id, timeout=options["wait"])
            self.stdout.write(dumps(output))
