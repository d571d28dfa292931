"""`manage.py health [--worker | --supervisor]`: the probe a container platform runs (exit 0: healthy)."""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.health import probes
from runs.models import PresenceRole

UNHEALTHY = 1  # a check failed: each failed check is named on stderr (usage mistakes exit 2, as argparse's)


class Command(BaseCommand):
    help = ("Health probe for containers: the database answers, every migration is applied and the config "
            "resolves; with --worker (or --supervisor), also that this host's worker (supervisor) has beat within "
            "its lease. Exit status 0 when healthy, 1 when a check failed (named on stderr), 2 on a usage mistake.")
    requires_system_checks: list[str] = []  # a broken config is this command's answer, not a refusal to start

    def add_arguments(self, parser: Any) -> None:
        role = parser.add_mutually_exclusive_group()
        role.add_argument("--worker", action="store_true", help="also: this host's worker beat within its lease")
        role.add_argument("--supervisor", action="store_true", help="also: this host's supervisor is alive")
        parser.add_argument("--json", action="store_true", help="print the checks as one JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        checks = probes.readiness(say_why=True)
        if options["worker"] or options["supervisor"]:
            role = PresenceRole.WORKER if options["worker"] else PresenceRole.SUPERVISOR
            checks.append(probes.process(role))
        failed = [check for check in checks if not check.ok]
        if options["json"]:
            self.stdout.write(json.dumps({"ok": not failed, "checks": {c.name: c.as_dict() for c in checks}}))
        else:
            for check in checks:
                self.stdout.write(f"{check.name}: ok" if check.ok else f"{check.name}: FAILED")
        if failed:
            raise CommandError("unhealthy: " + "; ".join(f"{c.name}: {c.problem}" for c in failed),
                               returncode=UNHEALTHY)
