"""`manage.py metrics reset`: start this host's counters afresh, as a host does when it boots."""
from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.telemetry import metrics


class Command(BaseCommand):
    help = ("reset: empty this host's metrics folder (PROMETHEUS_MULTIPROC_DIR, <SANOMA_VAR_DIR>/metrics unless "
            "set), where every worker and web process of the host writes its counts, so the counters start again "
            "from zero. Run it when the host starts, before any worker or site process (Prometheus reads a counter "
            "that goes back to zero as a restart); deploy/systemd/sanoma-metrics-reset.service does.")

    def add_arguments(self, parser: Any) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("reset", help="empty this host's metrics folder, before any worker or site starts")

    def handle(self, *args: Any, **options: Any) -> None:
        folder = os.environ.get("PROMETHEUS_MULTIPROC_DIR", "")
        if not metrics.enabled():
            raise CommandError("Metrics are off on this host (SANOMA_METRICS=false): there is no folder to empty")
        if not folder:
            raise CommandError("No metrics folder is set (PROMETHEUS_MULTIPROC_DIR): each process counts on its own")
        removed = metrics.reset_folder(folder)
        self.stdout.write(f"metrics: emptied {folder} ({removed} file{'s' if removed != 1 else ''} of counts removed)")
