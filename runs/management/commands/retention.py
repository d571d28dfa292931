"""`manage.py retention [--dry-run]`: export ended runs past their keep and remove them, in batches."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.engine import clock
from runs.retention import services
from runs.retention.services import Batch, Done, RetentionError, Rules


def _n(count: int, word: str) -> str:
    return f"{count:,} {word}" if count == 1 else f"{count:,} {word}s"


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Export ended runs older than their workflow's keep (or SANOMA_KEEP_ENDED_RUNS_DAYS) to JSON Lines "
            "files, one per day, and remove them from the database in small batches. --dry-run says what it "
            "would do and changes nothing.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--dry-run", action="store_true", help="say what would be exported and removed")
        parser.add_argument("--export-dir", type=Path, default=None,
                            help="where the export files go (default: SANOMA_RETENTION_DIR)")
        parser.add_argument("--batch-size", type=int, default=200, help="runs in the first batch (default 200)")
        parser.add_argument("--batch-seconds", type=float, default=1.0,
                            help="the longest a batch's removal should take; batches shrink or grow to it")
        parser.add_argument("--pause", type=float, default=0.0, help="seconds to wait between batches")
        parser.add_argument("--limit", type=int, default=None, help="remove at most this many runs")
        parser.add_argument("--database", default="default",
                            help="the connection (PostgreSQL: the tables' owner, --database owner)")

    def handle(self, *args: Any, **options: Any) -> None:
        for name in ("batch_size", "limit"):
            if options[name] is not None and options[name] < 1:
                raise CommandError(f"--{name.replace('_', '-')} must be at least 1; got {options[name]}")
        if options["batch_seconds"] <= 0 or options["pause"] < 0:
            raise CommandError("--batch-seconds must be above 0 and --pause 0 or more")
        folder: Path = options["export_dir"] or settings.SANOMA_RETENTION_DIR
        using = options["database"]
        if using not in settings.DATABASES:
            raise CommandError(f"--database {using}: no such connection (set DATABASE_OWNER_URL for 'owner')")
        rules = Rules.of(get_config())
        now = clock.now()
        for rule in rules.describe(now):
            self.stdout.write(rule)
        if rules.keeps_everything:
            self.stdout.write("nothing to do: every run is kept forever")
            return
        if options["dry_run"]:
            self._dry_run(rules, now, folder, using)
            return
        try:
            done = services.run_retention(rules=rules, folder=folder, using=using, now=now,
                                          batch_size=options["batch_size"], batch_seconds=options["batch_seconds"],
                                          pause=options["pause"], limit=options["limit"], progress=self._progress)
        except RetentionError as err:
            raise CommandError(str(err)) from err
        self.stdout.write(f"done: {_n(done.runs, 'run')} ({_n(done.steps, 'step')}, "
                          f"{_n(done.records, 'ledger record')}) exported to {folder} in {_n(len(done.files), 'file')} "
                          f"and removed, in {_n(len(done.batches), 'batch')}".replace("batchs", "batches"))
        if done.skipped:
            self.stdout.write(f"kept {_n(len(done.skipped), 'run')} whose ledger changed after they were exported; "
                              "the next retention takes them")

    def _dry_run(self, rules: Rules, now: Any, folder: Path, using: str) -> None:
        due = services.plan(rules, now=now, using=using)
        if not due:
            self.stdout.write("dry run: no ended run is past its keep; nothing would be removed")
            return
        total = sum(d.runs for d in due)
        self.stdout.write(f"dry run: would export {_n(total, 'run')} to {folder} and remove them:")
        for d in due:
            self.stdout.write(f"  {d.workflow}: {_n(d.runs, 'run')}, ended {d.oldest:%Y-%m-%d} to {d.newest:%Y-%m-%d}")
        files = list(services.days_of(rules, now=now, using=using))
        self.stdout.write(f"  into {files[0]}" if len(files) == 1
                          else f"  into {len(files)} files: {files[0]} to {files[-1]}")
        self.stdout.write("  (a run goes after its child runs; nothing was changed)")

    def _progress(self, batch: Batch, done: Done) -> None:
        self.stdout.write(f"batch {batch.number}: {_n(batch.runs, 'run')} ({_n(batch.steps, 'step')}, "
                          f"{_n(batch.records, 'ledger record')}) to {', '.join(batch.files) or '-'}, removed in "
                          f"{batch.seconds:.2f} s; {_n(done.runs, 'run')} so far")
