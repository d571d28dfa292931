"""`manage.py resources [--json]`: what the company's data files declare, and their problems."""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from changes.selectors import declared_resources
from connectors.resources import Ref, Secret
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("List the resources the data files declare (resources/**/*.py and apps/<app>/resources/**/*.py) and "
            "every problem as file:line:column; exit status 1 when there is a problem.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--json", action="store_true", help="one JSON document: files, resources, problems")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        read = declared_resources()
        if options["json"]:
            self.stdout.write(json.dumps({"root": str(read.root), **read.plain()}, indent=2))
        else:
            where = _shown(read.root)
            for resource in read.resources:
                values = ", ".join(f"{k}={_short(v)}" for k, v in resource.values.items())
                self.stdout.write(f"{where}{resource.file}:{resource.line}  {resource.type}  {resource.name}  "
                                  f"{values}")
            self.stdout.write(f"{len(read.resources)} resources in {len(read.files)} files, "
                              f"{len(read.problems)} problems")
            for problem in read.problems:
                self.stderr.write(f"{where}{problem}")
        if read.problems:
            raise CommandError(f"{len(read.problems)} problems in the data files: each resource with a problem, "
                               f"and each referring to one, is left out")


def _shown(root: Path) -> str:
    """The root as a prefix of file names, relative to the working folder when under it."""
    try:
        relative = Path(os.path.relpath(root))
    except ValueError:
        return f"{root}/"
    return "" if str(relative) == "." else f"{root if str(relative).startswith('..') else relative}/"


def _short(value: Any) -> str:
    """A value as the text shows it: a reference by its id, a secret as secret("NAME")."""
    if isinstance(value, Ref):
        return value.id
    if isinstance(value, Secret):
        return f'secret("{value.name}")'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_short(v) for v in value) + "]"
    return json.dumps(value)
