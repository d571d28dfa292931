"""`manage.py spend show|check|rebuild [--month YYYY-MM]`: the money calls counted toward spend
limits, and the spend table against the ledger (`runs.spend.ledger_check`)."""
from __future__ import annotations

import re
from datetime import date
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db.models import Count, Sum

from connectors.money import format_money
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.engine import clock
from runs.spend import ledger_check
from runs.spend.models import COUNTED, SpendEntry
from runs.spend.sums import month_of

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def _month(text: str | None) -> date:
    if text is None:
        return month_of(clock.now())
    match = _MONTH.match(text)
    if not match or not 1 <= int(match.group(2)) <= 12:
        raise CommandError(f"--month must be a month as YYYY-MM, such as 2026-12; got {text!r}")
    return date(int(match.group(1)), int(match.group(2)), 1)


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("The money calls counted toward spend limits. show: the month's sums by currency and operation; "
            "check: compare the spend table with the ledger (exit 1 when they differ); rebuild: make the table "
            "say what the ledger says.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=("show", "check", "rebuild"))
        parser.add_argument("--month", default=None, help="the UTC month, YYYY-MM (default: this month)")

    def handle(self, *args: Any, **options: Any) -> None:
        month = _month(options["month"])
        if options["action"] == "show":
            self._show(month)
            return
        report = ledger_check.check(ops=get_config().ops, month=month, fix=options["action"] == "rebuild")
        self.stdout.write(f"{month:%Y-%m}: {report.calls} money call(s) in the ledger, {report.under_way} under way, "
                          f"{report.kept} row(s) kept as they are (removed runs, seeded)")
        for difference in report.differences:
            self.stdout.write(f"  {difference.said()}")
        if options["action"] == "rebuild":
            self.stdout.write(f"rebuilt: {report.fixed} row(s) now say what the ledger says")
        elif report.differences:
            raise CommandError(f"{len(report.differences)} difference(s) between the spend table and the ledger; "
                               "manage.py spend rebuild makes the table agree")
        else:
            self.stdout.write("the spend table agrees with the ledger")

    def _show(self, month: date) -> None:
        rows = (SpendEntry.objects.filter(month=month, state__in=COUNTED).values("currency", "op")
                .annotate(cents=Sum("cents"), calls=Count("id")).order_by("currency", "op"))
        if not rows:
            self.stdout.write(f"{month:%Y-%m}: no money calls counted")
            return
        self.stdout.write(f"{month:%Y-%m}, counted (reserved and spent):")
        for row in rows:
            self.stdout.write(f"  {row['op']}: {format_money(row['cents'], row['currency'] or None)} "
                              f"in {row['calls']} call(s)")
