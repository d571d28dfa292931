"""`manage.py startcompany DIR`: make a new config root in DIR (see `runs.startcompany`)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from runs.management.commands._common import guarded
from runs.startcompany import make_company


class Command(BaseCommand):
    help = ("Make a new config root in DIR (a new or empty folder whose name is the company's): a connector with "
            "its fake, a workflow with a held call, a policy, people and a scenario")
    # The new root is not the configured one yet: checking the configured root would tell nothing.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("dir", help="the folder to make, e.g. invoices (its name is the company's)")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        target = Path(options["dir"])
        written = make_company(target=target)
        shown = options["dir"].rstrip("/")
        self.stdout.write(f"Made the company {target.resolve().name!r} in {shown}/:")
        for path in written:
            self.stdout.write(f"  {shown}/{path}")
        self.stdout.write(f"Next: export SANOMA_ROOT={shown}, then manage.py check, lint and behave --simple "
                          "(the tutorial: docs/tutorial/first-company.md)")
