"""`manage.py worker`: runs the worker (wakeups/worker.py) until a signal, `--for-seconds`, a
restart a deploy asks for (exit status RESTART_EXIT, for the supervisor to start it again) or, with
`--stop-when-idle`, the stop rule."""
from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import ConfigError
from runs.config.registry import get_config
from runs.worker_lifecycle import RESTART_EXIT
from wakeups.worker import Worker, WorkerCannotStart


class Command(BaseCommand):
    help = ("Run a worker: advances this app version's runs, wakes sleepers on time, fires schedules, "
            "takes over runs of dead workers.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--promote", action="store_true", help="make this worker's version the latest again")
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")
        parser.add_argument("--stop-when-idle", action="store_true",
                            help="stop when nothing can run before the next deadline, registering it with the "
                                 "declared wakeup (needs exactly one wakeup declared)")

    def handle(self, *args: Any, **options: Any) -> None:
        started_at = time.time()  # a restart asked for before this moment is the one that started us
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        worker = Worker(config=config, say=self._say, warn=lambda text: self.stderr.write(self.style.WARNING(text)),
                        promote=options["promote"], for_seconds=options["for_seconds"],
                        stop_when_idle=options["stop_when_idle"], started_at=started_at)
        try:
            worker.start()
        except WorkerCannotStart as err:
            raise CommandError(str(err)) from None
        if worker.run() is not None:
            self.stdout.flush()
            raise SystemExit(RESTART_EXIT)

    def _say(self, text: str) -> None:
        self.stdout.write(text)
        self.stdout.flush()
