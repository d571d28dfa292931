from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import selectors
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded
from runs.sandbox.selectors import sandbox_run_ids


def _within(low: int, high: int) -> Any:
    """An argparse type: a whole number from low to high (argparse turns the ValueError into a usage error)."""
    def parse(text: str) -> int:
        value = int(text)
        if not low <= value <= high:
            raise ValueError(text)
        return value
    parse.__name__ = f"whole number from {low} to {high}"
    return parse


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "List runs, newest first."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--status")
        parser.add_argument("--workflow")
        parser.add_argument("--started-by")
        parser.add_argument("--error-code", help="runs that failed with this code")
        parser.add_argument("--tag", action="append", default=[], help="key=value (ctx.tag); repeat to narrow")
        parser.add_argument("--since", help="started at or after (ISO 8601)")
        parser.add_argument("--until", help="started before (ISO 8601)")
        parser.add_argument("--sandbox", choices=("yes", "no"), help="only sandbox runs (yes), or none of them (no)")
        parser.add_argument("--limit", type=_within(1, 500), default=20, help="1 to 500")
        parser.add_argument("--offset", type=_within(0, 2**63 - 1), default=0)
        parser.add_argument("--as", dest="user", help="list only what this user may see")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        where = selectors.RunFilter.parse(
            status=options["status"], workflow=options["workflow"], started_by=options["started_by"],
            error_code=options["error_code"], tags=options["tag"], started_after=options["since"],
            started_before=options["until"],
            sandbox=None if options["sandbox"] is None else options["sandbox"] == "yes")
        page = selectors.list_runs(viewer=options["user"], where=where, limit=options["limit"],
                                   offset=options["offset"])
        sandboxes = sandbox_run_ids(run.id for run in page.runs)
        for run in page.runs:
            error = f"  {run.error.get('code') or ''} {run.error.get('message', '')}" if run.error else ""
            mark = "  [sandbox]" if run.id in sandboxes else ""
            self.stdout.write(
                f"{run.created_at:%Y-%m-%d %H:%M:%S}  {run.status:<9}  {run.workflow:<24} {run.id}  "
                f"by {run.started_by}{mark}{error}"
            )
        shown = f"{page.offset + 1}-{page.offset + len(page.runs)}" if page.runs else "none"
        self.stdout.write(f"{shown} of {page.counted}")
