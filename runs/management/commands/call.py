"""`manage.py call <vendor.resource.op> --as U [--json J | --json-file F | --set k=v ...] [--key K] [--wait S]`:
call one operation directly, outside any workflow.

The call is a run of the built-in `call` workflow made here, in this process: the policy is asked,
and the call is made (the reply printed as JSON, exit 0), held for an approver (the run and the
approver said, exit 3: a worker makes the call once it is approved; with `--wait S` this command
waits up to S seconds for the decision and makes it itself), or refused (denied, rejected, or the
vendor's error: a one-line error naming the run, exit 1). `--key` makes it safe to run again: the
same key answers the first call's run and never calls the vendor twice.

While `--wait` waits it says so on stderr, in one line naming what it waits for (the approval, by
title and approver), and in one more when the wait ends; stdout keeps the reply alone, for scripts."""
from __future__ import annotations

import sys
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import SanomaError
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.direct_calls import Outcome, call
from runs.direct_calls.workflow import directly_callable
from runs.management.commands._common import dumps, guarded, read_document, read_input


def read_call_input(*, text: str | None, file: str | None, sets: list[str], schema: dict[str, Any] | None) -> Any:
    """The input from --json or --json-file (any JSON: the operation's schema judges it), then each
    --set read against the operation's schema."""
    data = read_document(text=text, file=file, flags=("--json", "--json-file"), require_object=False)
    if sets:
        if not isinstance(data, dict):
            raise CommandError("--set adds to a JSON object; --json is not one")
        data.update(read_input(input_json=None, input_file=None, sets=sets, schema=schema))
    return data


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Call one operation directly, outside any workflow: "
            "manage.py call shop.order.get --json '{\"order_id\": \"1001\"}' --as alice")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("op", help="the operation: <vendor>.<resource>.<name>, e.g. shop.order.get")
        parser.add_argument("--as", dest="user", required=True, help="the username making the call")
        parser.add_argument("--json", dest="json", help="the operation's input as a JSON object")
        parser.add_argument("--json-file", help="a file holding the input as JSON")
        parser.add_argument("--set", action="append", default=[],
                            help="key=value, read by the input field's type (text for a text field, JSON otherwise)")
        parser.add_argument("--key", help="an idempotency key (1-195 characters: letters, digits, - _ . : @ ~): "
                                          "calling again with it answers the first call, never calling twice")
        parser.add_argument("--wait", type=float, default=0,
                            help="when the call is held, wait up to this many seconds for the decision and make "
                                 "the call here")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        op = directly_callable(config.ops).get(options["op"])
        schema = op.input.model_json_schema() if op is not None else None
        data = read_call_input(text=options["json"], file=options["json_file"], sets=options["set"], schema=schema)
        began: list[float] = []

        def waiting(line: str) -> None:
            began.append(time.monotonic())
            self.stderr.write(line)

        try:
            answer = call(op=options["op"], input=data, by=options["user"], key=options["key"],
                          wait=options["wait"], config=config, on_wait=waiting)
        except SanomaError:
            if began:
                self.stderr.write(f"stopped waiting after {time.monotonic() - began[0]:.0f} s: the call was refused")
            raise
        if began:
            ended = ("it is still held" if answer.outcome == Outcome.HELD else
                     "the call was made" if answer.outcome == Outcome.MADE else "it is under way")
            self.stderr.write(f"stopped waiting after {time.monotonic() - began[0]:.0f} s: {ended}")
        if answer.outcome == Outcome.MADE:
            self.stderr.write(answer.message)
            self.stdout.write(dumps(answer.output))
            return
        self.stdout.write(answer.message)  # held, or under way: the run goes on without this command
        sys.exit(3)
