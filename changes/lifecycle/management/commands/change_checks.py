"""`manage.py change_checks <tree> --out <file>`: the checks of a change's tree, in this process
(started by the worker with the tree as SANOMA_ROOT and a database of its own). Writes the report as
JSON; exits 0 when every check passed, 1 when one failed. Not for people: `manage.py change show`
reads the report a change recorded."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from changes.lifecycle.tree_checks import run_checks


class Command(BaseCommand):
    help = "Check a change's tree (run by the change workflow in its own process)."
    requires_system_checks: list[str] = []  # a broken tree is what this reports, not a reason to stop

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("tree", help="the tree's config root (it must be this process's SANOMA_ROOT)")
        parser.add_argument("--out", required=True, help="where to write the report (JSON)")
        parser.add_argument("--scenarios-timeout", type=float, default=600.0)

    def handle(self, *args: Any, **options: Any) -> None:
        tree = Path(options["tree"]).resolve()
        if tree != Path(settings.SANOMA_ROOT).resolve():
            raise CommandError(f"{tree} is not this process's SANOMA_ROOT ({settings.SANOMA_ROOT}): the checks "
                               "resolve the root the settings name")
        report = run_checks(tree, scenarios_timeout=options["scenarios_timeout"])
        Path(options["out"]).write_text(json.dumps(report))
        self.stdout.write(f"checks {'passed' if report['ok'] else 'failed: ' + ', '.join(report['failed'])}")
        if not report["ok"]:
            raise SystemExit(1)
