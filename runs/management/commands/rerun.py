from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs import recovery, selectors
from runs.management.commands._common import guarded, run_id_argument


class Command(BaseCommand):
    help = ("Rerun a failed run (a new run <run>~<n>, same input and starter, from the top), or every failed run "
            "matching a filter: the count is shown and confirmed first.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", nargs="?", help="the failed run; leave out to rerun by filter")
        parser.add_argument("--workflow")
        parser.add_argument("--error-code")
        parser.add_argument("--tag", action="append", default=[], help="key=value; repeat to narrow")
        parser.add_argument("--since", help="started at or after (ISO 8601)")
        parser.add_argument("--until", help="started before (ISO 8601)")
        parser.add_argument("--yes", action="store_true", help="do not ask: rerun what matches now")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        user = options["user"]
        filters = [options[k] for k in ("workflow", "error_code", "since", "until")] + options["tag"]
        if options["run_id"]:
            if any(filters):
                raise CommandError("give a run id or a filter (--workflow, --error-code, --tag, --since, --until), "
                                   "not both")
            run = recovery.rerun(run_id=run_id_argument(options["run_id"]), by=user)
            self.stdout.write(f"{run.id} queued (rerun of {run.source_run})")
            return
        if not any(filters):
            raise CommandError("give a run id, or a filter for a bulk rerun (--workflow, --error-code, --tag, ...)")
        where = selectors.RunFilter.parse(status="failed", workflow=options["workflow"],
                                          error_code=options["error_code"], tags=options["tag"],
                                          started_after=options["since"], started_before=options["until"])
        count = recovery.count_matching(where=where, by=user)
        self.stdout.write(f"{count} failed run(s) match")
        if count == 0:
            return
        if not options["yes"]:
            if not sys.stdin.isatty():
                raise CommandError("not rerun: confirm with --yes (standard input is not a terminal to ask on)")
            if input(f"Rerun {count} run(s)? [y/N] ").strip().lower() not in ("y", "yes"):
                self.stdout.write("not rerun")
                return
        result = recovery.rerun_matching(where=where, expect=count, by=user)
        for source, why in result.refused:
            self.stderr.write(f"{source} not rerun: {why}")
        self.stdout.write(f"rerun {len(result.done)} of {result.matched}: {', '.join(result.done)}")
