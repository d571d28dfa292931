"""`manage.py schedules`: each scheduled workflow, its next fires (its timezone and UTC), its last
fire and run, skips and back-fills. `--run-now <workflow>` starts a run of it at once."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import ConfigError, SanomaError
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from wakeups.selectors import schedules
from wakeups.services import run_now


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "List the scheduled workflows: next fires, last fire and run, skips, back-fills and missed fires."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--count", type=int, default=5, help="how many next fires to show")
        parser.add_argument("--json", action="store_true", help="one JSON document")
        parser.add_argument("--run-now", metavar="WORKFLOW", help="start a run of a scheduled workflow now")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        if options["run_now"]:
            try:
                run = run_now(config=config, workflow=options["run_now"])
            except SanomaError as err:
                raise CommandError(str(err)) from None
            self.stdout.write(f"started {run.id}")
            return
        views = schedules(config, count=options["count"])
        if options["json"]:
            self.stdout.write(json.dumps([v.as_dict() for v in views], indent=2))
            return
        if not views:
            self.stdout.write("no scheduled workflows")
            return
        for view in views:
            data = view.as_dict()
            self.stdout.write(f"{view.workflow}: {view.trigger} ({view.timezone}), overlap {view.overlap}, "
                              f"catch-up {view.catchup_seconds:g} s")
            for local, utc in zip(view.next_fires_local, view.next_fires, strict=True):
                self.stdout.write(f"  next  {local.isoformat()}  ({utc.strftime('%Y-%m-%dT%H:%M:%SZ')})")
            last = data["last_run"]
            last_run = f"{last['id']} ({last['status']})" if last else "-"
            self.stdout.write(f"  last fire {data['last_fire_at'] or '-'}; last run {last_run}")
            self.stdout.write(f"  skipped {data['skipped']}, back-filled {data['backfilled']}, "
                              f"missed (older than catch-up) {data['missed']}")
