"""`manage.py ledger verify [--run R] [--export FILE ...]`: check the ledger's hash chains (see
`runs.ledger`), or export files offline (see `runs.retention.export`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs import ledger
from runs.config.checks import COMMAND_CHECKS
from runs.health.services import record_verification
from runs.health.timeouts import lifted
from runs.retention.export import verify_paths
from runs.retention.models import PrunedRun


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("verify: check every run's hash chain (or one run's with --run) and name the first broken record "
            "of each broken chain; exit status 1 when any is broken. A verify of every chain is kept: the "
            "desk's health page and the sanoma_ledger_verify_ok gauge show the last one. With --export FILE, "
            "check retention's export files (or a folder of them) instead, without the database.")

    def add_arguments(self, parser: Any) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        verify = actions.add_parser("verify", help="check the hash chains")
        verify.add_argument("--run", dest="run_id", default=None, help="only this run's chain")
        verify.add_argument("--export", dest="exports", type=Path, action="append", default=[],
                            help="an export file (runs-YYYY-MM-DD.jsonl) or a folder of them; may be repeated")
        verify.add_argument("--database", default="default",
                            help="the database to read, as named in DATABASES (default: default; owner: "
                                 "DATABASE_OWNER_URL's)")
        verify.add_argument("--heads", action="store_true",
                            help="also print each chain's last record (run, index, hash), one a line: keep them "
                                 "where the database's owner cannot write, to show later that no run's last "
                                 "records were removed")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["exports"]:
            self._verify_exports(options["exports"])
            return
        using = options["database"]
        with lifted(using):  # every chain may take longer than the site's statement timeout
            result = ledger.verify(options["run_id"], using=using)
        if options["run_id"] is not None and result.records == 0:
            pruned = PrunedRun.objects.using(using).filter(run_id=options["run_id"]).first()
            if pruned is not None:
                raise CommandError(f"Run {options['run_id']} was removed by retention on {pruned.pruned_at:%Y-%m-%d}: "
                                   f"its {pruned.records} records (head {pruned.head or '-'}) are in the export "
                                   f"{pruned.export_file}; check it with ledger verify --export")
            raise CommandError(f"No run {options['run_id']} in the ledger")
        if options["run_id"] is None:
            record_verification(result=result, using=using)
        if result.breaks:
            for broken in result.breaks:
                self.stderr.write(f"BROKEN {broken}")
            raise CommandError(f"{len(result.breaks)} of {result.runs} chains broken "
                               f"({result.records} records checked); the first broken record of each is named above")
        if options["heads"]:
            for run_id, index, hash in result.heads:
                self.stdout.write(f"{run_id} {index} {hash}")
        self.stdout.write(f"verified: {_n(result.runs, 'chain')}, {_n(result.records, 'record')}")

    def _verify_exports(self, paths: list[Path]) -> None:
        checked = verify_paths(paths)
        if checked.problems:
            for problem in checked.problems:
                self.stderr.write(f"BROKEN {problem}")
            count = len(checked.problems)
            raise CommandError(f"{count} {'problem' if count == 1 else 'problems'} in the export ({checked.runs} runs, "
                               f"{checked.records} records checked); each is named above")
        self.stdout.write(f"verified export: {_n(checked.runs, 'run')}, {_n(checked.records, 'record')}, "
                          f"{_n(len(checked.heads), 'chain head')}")
