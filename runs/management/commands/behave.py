"""`manage.py behave`: behave-django's command, with a feature file of the config root given by path.

behave takes a path as a features folder and looks for `steps/` beside it; the config's scenarios
have none (their steps are the library's, run from the project's `features/`). A path to a feature
file under the config root is turned into an `--include` of that file, so
`manage.py behave --simple scenarios/refund.feature` runs it; a path that is not there, or a
`FILE:LINE`, is refused with what to write instead, before the test database is made.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from behave_django.management.commands.behave import Command as BehaveCommand
from django.conf import settings
from django.core.management.base import CommandError

from runs.config.discovery import kind_dirs
from runs.config.paths import root_path

_LINE = re.compile(r"^(.*\.feature):(\d+)$")


class Command(BehaveCommand):
    help = "Runs the scenarios with behave (behave-django); a feature file of the config root may be given by path"

    def handle(self, *args: Any, **options: Any) -> None:
        self._includes = self._config_paths(options.get("paths") or [], options)
        super().handle(*args, **options)

    def _config_paths(self, paths: list[str], options: dict[str, Any]) -> dict[str, str]:
        """The given paths that are config feature files, each with the `--include` it becomes."""
        own = (Path(settings.BASE_DIR) / "features").resolve()
        root = Path(settings.SANOMA_ROOT).resolve()
        files = sorted(p for folder in kind_dirs(root, "scenarios") for p in folder.rglob("*.feature") if p.is_file())
        listed = ", ".join(root_path(p, root) for p in files) or "none"
        chosen: dict[str, str] = {}
        for given in paths:
            resolved = Path(given).resolve()
            if resolved == own or own in resolved.parents:
                continue  # the runtime's own features: behave reads them as it always does
            line = _LINE.match(given)
            if line is not None:
                raise CommandError(
                    f"{given}: a FILE:LINE of the config's scenarios cannot be chosen by line; choose the file with "
                    f"-i {root_path(line.group(1), root)} and the scenario with -n \"<its name>\"")
            if not resolved.is_file():
                where = root / given
                hint = f" (from the config root it is {where}: give that path)" if where.is_file() else ""
                raise CommandError(f"{given}: there is no such file{hint}; the feature files of {root} are {listed}")
            if resolved.suffix != ".feature" or resolved not in files:
                raise CommandError(f"{given}: not a feature file under the config root's scenarios/ (or "
                                   f"apps/<app>/scenarios/); the feature files of {root} are {listed}")
            chosen[given] = "^" + re.escape(root_path(resolved, root)) + "$"
        if chosen and options.get("include_re"):
            raise CommandError("give the feature files either as paths or with --include (-i), not both")
        return chosen

    def get_behave_args(self, argv: list[str] = sys.argv) -> list[str]:
        args = super().get_behave_args(argv)
        includes = getattr(self, "_includes", {})
        if not includes:
            return args
        kept = [arg for arg in args if arg not in includes]
        return [*kept, "--include", "|".join(includes.values())]
