"""`manage.py worker`: a django-q2 cluster that advances runs, and the deadline sweep beside it."""
from __future__ import annotations

import logging
import signal
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections
from django_q.cluster import Cluster

from connectors.errors import ConfigError
from runs.config.registry import get_config
from runs.versions import startup_report, sync_workflow_entries
from wakeups.sweep import sweep

log = logging.getLogger("sanoma.worker")


def _pause(seconds: float, *, until: list[int]) -> None:
    """Sleep `seconds`, in slices of at most 0.1 s, ending early once `until` is not empty."""
    ends = time.monotonic() + seconds
    while not until and (left := ends - time.monotonic()) > 0:
        time.sleep(min(left, 0.1))


class Command(BaseCommand):
    help = "Run a worker: advances this app version's runs, wakes sleepers on time, takes over runs of dead workers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--promote", action="store_true", help="make this worker's version the latest again")
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        sync_workflow_entries(config)
        for warning in startup_report(config, promote=options["promote"]):
            self.stderr.write(self.style.WARNING(warning))
        self.stdout.write(f"worker for {config.version}: {len(config.workflows)} workflow(s)")
        stop: list[int] = []  # the signals received; a handler only appends (no lock it could deadlock on)
        connections.close_all()  # the cluster forks: children must not share this process's sockets
        cluster = Cluster()  # installs its own SIGTERM/SIGINT handlers: ours replace them
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, lambda signum, _frame: stop.append(signum))
        cluster.start()
        self.stdout.write(f"worker started: {settings.Q_CLUSTER['workers']} processes, "
                          f"sweeping every {settings.SANOMA_SWEEP_SECONDS}s")
        self.stdout.flush()
        ends = time.monotonic() + options["for_seconds"] if options["for_seconds"] else None
        try:
            while not stop and (ends is None or time.monotonic() < ends):
                try:
                    sweep(version=config.version, cluster=str(settings.Q_CLUSTER["name"]))
                except Exception:  # a database hiccup must not stop the worker
                    log.exception("the sweep failed; trying again")
                    connections.close_all()
                _pause(settings.SANOMA_SWEEP_SECONDS, until=stop)
        finally:
            self.stdout.write("worker stopping")
            cluster.stop()
