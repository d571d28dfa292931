"""`manage.py lint [paths...] [--root DIR] [--json]`: what the config root's workflows, policies and
data files must not do, each at `file:line:column` with what to write instead. Exit status 1 when
there is a problem."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from runs.config.lint import LintError, lint
from runs.management.commands._common import guarded


class Command(BaseCommand):
    # The lint reads the files as they are: a config the system checks refuse (a workflow that does not
    # import, a policy that does not parse) is when its findings are wanted most.
    requires_system_checks: list[str] = []
    help = ("Lint the config root: workflows (no clock, randomness, network, threads, environment or files outside "
            "ctx; only the authoring API's imports), policies (as the policy loader reads them) and data files. "
            "Prints each problem as file:line:column: message; exit status 1 when there is one.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", help="only these files, or the files under these folders")
        parser.add_argument("--root", default=None,
                            help="the config root to lint (default: the configured one, SANOMA_ROOT)")
        parser.add_argument("--json", action="store_true",
                            help="one JSON document: {root, files, problems: [{file, line, column, message, rule}]}")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        root = Path(options["root"] or settings.SANOMA_ROOT)
        try:
            report = lint(root, options["paths"] or None)
        except LintError as err:
            raise CommandError(str(err)) from None
        if options["json"]:
            self.stdout.write(json.dumps(report.plain(), indent=2))
        else:
            where = _shown(report.root)
            for problem in report.problems:
                self.stdout.write(f"{where}{problem}")
            self.stdout.write(f"{_count(len(report.problems), 'problem')} in "
                              f"{_count(len(report.files_with_problems), 'file')} "
                              f"({_count(len(report.files), 'file')} linted)")
        if report.problems:
            sys.exit(1)


def _shown(root: Path) -> str:
    """The root as a prefix of file names, relative to the working folder when under it."""
    try:
        relative = Path(os.path.relpath(root))
    except ValueError:
        return f"{root}/"
    return "" if str(relative) == "." else f"{root if str(relative).startswith('..') else relative}/"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"
