"""`manage.py worker`: runs the worker (wakeups/worker.py) until a signal, `--for-seconds`, a
restart a deploy asks for (exit status RESTART_EXIT, for the supervisor to start it again) or, with
`--stop-when-idle`, the stop rule. `--reload` runs a parent that starts the worker again whenever
the config root changes (wakeups/reload.py); `--pinned VERSION` serves a pinned deploy version's
runs only (wakeups/pinned.py), as the supervisor starts it from that version's commit."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from connectors import http
from connectors.errors import ConfigError
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.worker_lifecycle import RESTART_EXIT
from wakeups.reload import Reloader, child_argv
from wakeups.worker import Worker, WorkerCannotStart


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Run a worker: advances this app version's runs, wakes sleepers on time, fires schedules, "
            "takes over runs of dead workers.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--promote", action="store_true", help="make this worker's version the latest again")
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")
        parser.add_argument("--stop-when-idle", action="store_true",
                            help="stop when nothing can run before the next deadline, registering it with the "
                                 "declared wakeup (needs exactly one wakeup declared)")
        parser.add_argument("--reload", action="store_true",
                            help="start the worker again whenever a file under the config root changes (development)")
        parser.add_argument("--pinned", metavar="VERSION", default="",
                            help="serve only the pinned runs of this deploy version, from a checkout of its commit: "
                                 "no schedules, no deploy (the supervisor starts these)")

    def execute(self, *args: Any, **options: Any) -> Any:
        # The --reload parent loads no config: its child checks the root, and a broken one waits for
        # the next edit instead of keeping the parent from starting (as runserver does).
        if options.get("reload"):
            options["skip_checks"] = True
        return super().execute(*args, **options)

    def handle(self, *args: Any, **options: Any) -> None:
        started_at = time.time()  # a restart asked for before this moment is the one that started us
        if options["reload"]:
            self._reload(options)
            return
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        # The vendors' clients made here, once, before the cluster forks its processes: each
        # process's first call then pays neither httpx's import nor its client's making.
        http.warm()
        worker = Worker(config=config, say=self._say, warn=lambda text: self.stderr.write(self.style.WARNING(text)),
                        promote=options["promote"], for_seconds=options["for_seconds"],
                        stop_when_idle=options["stop_when_idle"], started_at=started_at, pinned=options["pinned"])
        try:
            worker.start()
        except WorkerCannotStart as err:
            raise CommandError(str(err)) from None
        if worker.run() is not None:
            self.stdout.flush()
            raise SystemExit(RESTART_EXIT)

    def _reload(self, options: dict[str, Any]) -> None:
        """The parent that starts `worker --promote` again on every change under the config root."""
        for flag, name in (("stop_when_idle", "--stop-when-idle"), ("pinned", "--pinned")):
            if options[flag]:
                raise CommandError(f"--reload cannot be combined with {name}: a reloading worker is for "
                                   "development and stays up; leave one of them out", returncode=2)
        root = Path(settings.SANOMA_ROOT).resolve()
        if not root.is_dir():
            raise CommandError(f"--reload: the config root {root} (SANOMA_ROOT) is not a folder", returncode=2)
        reloader = Reloader(root=root, argv=child_argv(manage=Path(settings.BASE_DIR) / "manage.py"),
                            say=self._say, warn=lambda text: self.stderr.write(self.style.WARNING(text)),
                            grace=float(settings.SANOMA_WORKER_STOP_SECONDS) + 5, skip=[Path(settings.VAR_DIR)],
                            for_seconds=options["for_seconds"])
        reloader.run()

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
