from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import SanomaError
from runs import recovery, selectors
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded, run_id_argument
from runs.management.commands._plan import confirmed, plan_lines, summary_line


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Rerun a failed run (a new run <run>~<n>, same input and starter, from the top), or every failed run "
            "matching a filter. A run's steps made live again are listed with their effects, a filter's count is "
            "shown, and either is confirmed first (--yes to skip the question, --dry-run to only list).")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id", nargs="?", help="the failed run; leave out to rerun by filter")
        parser.add_argument("--workflow")
        parser.add_argument("--error-code")
        parser.add_argument("--tag", action="append", default=[], help="key=value; repeat to narrow")
        parser.add_argument("--since", help="started at or after (ISO 8601)")
        parser.add_argument("--until", help="started before (ISO 8601)")
        parser.add_argument("--yes", action="store_true", help="do not ask: rerun (what matches now)")
        parser.add_argument("--dry-run", action="store_true", help="only list what would be rerun")
        parser.add_argument("--as", dest="user", required=True)

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        user = options["user"]
        filters = [options[k] for k in ("workflow", "error_code", "since", "until")] + options["tag"]
        if options["run_id"]:
            if any(filters):
                raise CommandError("give a run id or a filter (--workflow, --error-code, --tag, --since, --until), "
                                   "not both")
            run_id = run_id_argument(options["run_id"])
            self.stdout.write("\n".join(plan_lines(recovery.check_rerun(run_id=run_id, by=user))))
            if options["dry_run"] or not confirmed(self, f"Rerun {run_id}?", yes=options["yes"], what="rerun"):
                return
            run = recovery.rerun(run_id=run_id, by=user)
            self.stdout.write(f"{run.id} queued (rerun of {run.source_run})")
            return
        if not any(filters):
            raise CommandError("give a run id, or a filter for a bulk rerun (--workflow, --error-code, --tag, ...)")
        where = selectors.RunFilter.parse(status="failed", workflow=options["workflow"],
                                          error_code=options["error_code"], tags=options["tag"],
                                          started_after=options["since"], started_before=options["until"])
        count = recovery.count_matching(where=where, by=user)
        self.stdout.write(f"{count} failed run(s) match")
        for matched in recovery.runs_matching(where=where, by=user):
            try:
                self.stdout.write(summary_line(recovery.check_rerun(run_id=matched.id, by=user)))
            except SanomaError as err:
                self.stdout.write(f"  {matched.id}: not rerun: {err.message}")
        if count == 0 or options["dry_run"]:
            return
        if not confirmed(self, f"Rerun {count} run(s)?", yes=options["yes"], what="rerun"):
            return
        result = recovery.rerun_matching(where=where, expect=count, by=user)
        for source, why in result.refused:
            self.stderr.write(f"{source} not rerun: {why}")
        self.stdout.write(f"rerun {len(result.done)} of {result.matched}: {', '.join(result.done)}")
