"""`manage.py ledger verify [--run R]`: check the ledger's hash chains (see `runs.ledger`)."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs import ledger
from runs.config.checks import COMMAND_CHECKS


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("verify: check every run's hash chain (or one run's with --run) and name the first broken record "
            "of each broken chain; exit status 1 when any is broken.")

    def add_arguments(self, parser: Any) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        verify = actions.add_parser("verify", help="check the hash chains")
        verify.add_argument("--run", dest="run_id", default=None, help="only this run's chain")
        verify.add_argument("--database", default="default")

    def handle(self, *args: Any, **options: Any) -> None:
        result = ledger.verify(options["run_id"], using=options["database"])
        if options["run_id"] is not None and result.records == 0:
            raise CommandError(f"No run {options['run_id']} in the ledger")
        if result.breaks:
            for broken in result.breaks:
                self.stderr.write(f"BROKEN {broken}")
            raise CommandError(f"{len(result.breaks)} of {result.runs} chains broken "
                               f"({result.records} records checked); the first broken record of each is named above")
        self.stdout.write(f"verified: {result.runs} chains, {result.records} records")
