"""`manage.py worker`: a django-q2 cluster that advances runs, and the deadline sweep beside it."""
from __future__ import annotations

import logging
import signal
import threading
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from connectors.errors import ConfigError
from runs.config.registry import get_config
from runs.versions import startup_report, sync_workflow_entries

log = logging.getLogger("sanoma.worker")


class Command(BaseCommand):
    help = "Run a worker: advances this app version's runs, wakes sleepers on time, takes over runs of dead workers."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--promote", action="store_true", help="make this worker's version the latest again")
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")

    def handle(self, *args: Any, **options: Any) -> None:
        from django_q.cluster import Cluster

        from wakeups.sweep import sweep

        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        sync_workflow_entries(config)
        for warning in startup_report(config, promote=options["promote"]):
            self.stderr.write(self.style.WARNING(warning))
        self.stdout.write(f"worker for {config.version}: {len(config.workflows)} workflow(s)")
        stop = threading.Event()
        connections.close_all()  # the cluster forks: children must not share this process's sockets
        cluster = Cluster()
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
        cluster.start()
        self.stdout.write(f"worker started: {settings.Q_CLUSTER['workers']} processes, sweeping every {settings.SANOMA_SWEEP_SECONDS}s")
        self.stdout.flush()
        ends = time.monotonic() + options["for_seconds"] if options["for_seconds"] else None
        try:
            while not stop.is_set() and (ends is None or time.monotonic() < ends):
                try:
                    sweep(version=config.version, cluster=settings.Q_CLUSTER["name"])
                except Exception:  # a database hiccup must not stop the worker
                    log.exception("the sweep failed; trying again")
                    connections.close_all()
                stop.wait(settings.SANOMA_SWEEP_SECONDS)
        finally:
            self.stdout.write("worker stopping")
            cluster.stop()
