"""`manage.py wakeup systemd`: unit files that run the worker with no supervisor of sanoma's own.

A timer starts the worker every minute (and at boot); the worker stops itself when idle. A run that
becomes runnable between two ticks waits at most a minute; keep `manage.py supervise` for at once.
`manage.py wakeup show` prints the wakeup row.
"""
from __future__ import annotations

import sys
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from runs.config.checks import COMMAND_CHECKS
from wakeups.models import WakeupRow

SERVICE = """\
# /etc/systemd/system/sanoma-worker.service
[Unit]
Description=sanoma worker (stops itself when idle)
After=network-online.target postgresql.service

[Service]
Type=simple
WorkingDirectory={base}
EnvironmentFile=-/etc/sanoma/env
ExecStart={python} {base}/manage.py worker --stop-when-idle
KillSignal=SIGTERM
TimeoutStopSec=60
KillMode=mixed
"""
TIMER = """\
# /etc/systemd/system/sanoma-worker.timer
[Unit]
Description=start the sanoma worker every minute (a no-op while it runs)

[Timer]
OnBootSec=10s
OnUnitInactiveSec=60s
AccuracySec=1s

[Install]
WantedBy=timers.target
"""
SUPERVISOR = """\
# /etc/systemd/system/sanoma-supervise.service (instead of the timer: wakes the worker at once)
[Unit]
Description=sanoma supervisor: starts the worker when a deadline comes or a run arrives
After=network-online.target postgresql.service

[Service]
WorkingDirectory={base}
EnvironmentFile=-/etc/sanoma/env
ExecStart={python} {base}/manage.py supervise
Restart=always
KillSignal=SIGTERM
TimeoutStopSec=60

[Install]
WantedBy=multi-user.target
"""


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "The wakeup: `systemd` prints unit files; `show` prints the wakeup row."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("what", choices=["systemd", "show"])

    def handle(self, *args: Any, **options: Any) -> None:
        if options["what"] == "show":
            row = WakeupRow.get()
            self.stdout.write(f"at: {row.at or '-'}\nstopped_at: {row.stopped_at or '-'}\n"
                              f"last_error: {row.last_error or '-'}")
            return
        values = {"base": settings.BASE_DIR, "python": sys.executable}
        self.stdout.write(SERVICE.format(**values))
        self.stdout.write(TIMER)
        self.stdout.write(SUPERVISOR.format(**values))
        self.stdout.write("# then: systemctl daemon-reload && systemctl enable --now sanoma-worker.timer\n"
                          "#   (or: systemctl enable --now sanoma-supervise.service)")
