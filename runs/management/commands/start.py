"""`manage.py start <workflow> --as U [--input J | --input-file F | --set k=v ...] [--run-id R]
[--wait S] [--here]`: start a run; with `--wait`, wait up to S seconds for its result.

A run is advanced by a worker. `--wait` with no worker up (`runs.presence`) starts nothing and says
so at once, naming the two ways on; `--here` advances the run (and the runs it starts) in this
process instead, until it ends or waits (with `--wait S`, for up to S seconds more while it waits:
a decision made elsewhere, a message, a sleep coming due). A run that has not ended when the
waiting stops is left as it is, and said so (`--here`: exit status 3)."""
from __future__ import annotations

import sys
import time
from typing import Any, NoReturn

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import SanomaError
from runs import presence, selectors, services
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.config.resolution import input_schema
from runs.config.versioning import version_of
from runs.management.commands._common import dumps, guarded, read_input, run_id_argument
from runs.models import ENDED_STATUSES, RunStatus
from runs.waiting import Watch, give_up, require_worker, run_here


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
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
        parser.add_argument("--wait", type=float, default=0,
                            help="wait up to this many seconds for the result (a worker must be running, or --here)")
        parser.add_argument("--here", action="store_true",
                            help="advance the run in this process (no worker needed) until it ends or waits; "
                                 "with --wait S, for up to S seconds more while it waits")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id = None if options["run_id"] is None else run_id_argument(options["run_id"])
        config = get_config()
        definition = config.workflows.get(options["workflow"])
        schema = input_schema(definition) if definition is not None else None
        data = read_input(input_json=options["input"], input_file=options["input_file"], sets=options["set"],
                          schema=schema)
        if options["wait"] and not options["here"]:
            # Who may start what, and the input, are checked first: their errors come before a missing worker.
            services.check_start(config=config, workflow=options["workflow"], input=data, started_by=options["user"])
            require_worker(version_of(config, options["workflow"]), what="--wait waits for the run's result")
        run, created = services.start_or_get(workflow=options["workflow"], input=data, started_by=options["user"],
                                             run_id=run_id, config=config)
        if not created:  # the same id and input as a start made before: that run, not a new one
            self.stderr.write(f"{run.id} was started before with this id and input: this is that run, not a new one")
        if options["here"]:
            run = run_here(run, config, seconds=options["wait"])
            self.stdout.write(f"{run.id} {run.status}")
            self._after_here(run)
            return
        self.stdout.write(f"{run.id} {run.status}")
        if options["wait"]:
            self.stdout.write(dumps(self._wait(run, run.app_version, options["wait"], options["user"])))
        elif run.status == RunStatus.QUEUED:
            found = presence.worker_for(run.app_version)
            if not found.ok:
                self.stderr.write(f"{run.id} is queued until a worker runs it: {found.reason}")

    def _wait(self, run: Any, version: str, seconds: float, by: str) -> Any:
        """The run's output once it ends, within `seconds`; stops early when no worker is left to run it,
        or at Ctrl-C, leaving the run (it is the starter's) and saying so."""
        watch = Watch(version)
        deadline = time.monotonic() + seconds
        try:
            while True:
                try:
                    return selectors.result(run_id=run.id, timeout=min(1.0, max(0.0, deadline - time.monotonic())))
                except SanomaError as err:
                    if err.code != "run_running":
                        raise
                    if time.monotonic() >= deadline:
                        run.refresh_from_db()
                        self._left(run, waited=seconds)
                run.refresh_from_db()
                why = watch.stranded(run)
                if why:
                    raise CommandError(f"Stopped waiting: {why}; {give_up(run, by=by, why=why, cancel=False)}")
        except KeyboardInterrupt:
            raise CommandError(f"Stopped waiting (interrupted); {give_up(run, by=by, why='', cancel=False)}") from None

    def _after_here(self, run: Any) -> None:
        if run.status == RunStatus.FINISHED:
            self.stdout.write(dumps(run.result))
            return
        if run.status in ENDED_STATUSES:
            selectors.result(run_id=run.id, timeout=0)  # raises the run's error, code kept
            raise CommandError(f"Run {run.id} was {run.status}")
        self._left(run)

    def _left(self, run: Any, *, waited: float | None = None) -> NoReturn:
        """The run has not ended: say what it waits for and how to follow it; exit status 3."""
        waiting = selectors.waiting_on(run) or {} if run.status == RunStatus.WAITING else {}
        after = f" after {waited:g} s" if waited is not None else ""
        self.stderr.write(f"{run.id} is left {run.status}"
                          + (f" for {_described(waiting)}" if waiting else "") + after
                          + f": a worker (`manage.py worker`) takes it on from there; follow it with "
                            f"`manage.py show {run.id}`")
        sys.exit(3)


def _described(waiting: dict[str, Any]) -> str:
    kind = waiting.get("kind")
    if kind == "approval":
        pending = waiting.get("approvals") or []
        names = ", ".join(f"{a['approval_id']} ({a['approver']})" for a in pending)
        return f"approval {names}" if names else "an approval"
    if kind == "message":
        return f"a message on {waiting.get('topic')!r}"
    if kind == "sleep":
        return f"a sleep until {waiting.get('until')}"
    if kind == "run":
        return f"the run {waiting.get('run_id')}"
    return str(kind)
