"""`manage.py demo`: the example company on the embedded database, with a worker and the admin."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from connectors.errors import ConfigError, SanomaError
from runs import services
from runs.config.registry import get_config
from runs.testing import make_user
from runs.versions import sync_workflow_entries

# Who the demo company has. Passwords are the usernames: a local demo, never a deployment.
PEOPLE = (
    ("admin", (), True),
    ("alice", ("staff",), False),
    ("finance-lead", ("staff", "finance"), False),
    ("sam", ("staff", "security"), False),
    ("support-lead", ("staff", "support"), False),
)


class Command(BaseCommand):
    help = "Run the example company: migrate, create its people, start a worker and the admin, start example runs."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")
        parser.add_argument("--no-runs", action="store_true", help="start no example runs")

    def handle(self, *args: Any, **options: Any) -> None:
        os.environ["SANOMA_FAKES"] = "instance"
        settings.SANOMA_FAKES = "instance"
        self.stdout.write("sanoma demo: preparing the database ...")
        call_command("migrate", interactive=False, verbosity=0)
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        sync_workflow_entries(config)
        self._people()
        connections.close_all()
        base = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        children = [
            subprocess.Popen([*base, "worker"], env=os.environ.copy()),
            subprocess.Popen([*base, "runserver", f"127.0.0.1:{options['port']}", "--noreload", "--insecure"], env=os.environ.copy()),
        ]
        try:
            started = [] if options["no_runs"] else self._example_runs()
            self._banner(config, options["port"], started)
            ends = time.monotonic() + options["for_seconds"] if options["for_seconds"] else None
            while ends is None or time.monotonic() < ends:
                if any(child.poll() is not None for child in children):
                    raise CommandError("the worker or the admin server stopped; see its output above")
                time.sleep(0.5)
        except KeyboardInterrupt:
            pass
        finally:
            for child in children:
                if child.poll() is None:
                    child.send_signal(signal.SIGTERM)
            for child in children:
                try:
                    child.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    child.kill()
            self.stdout.write("sanoma demo stopped")

    def _people(self) -> None:
        for username, groups, superuser in PEOPLE:
            user = make_user(username, groups=groups, superuser=superuser,
                             perms=() if superuser else ("runs.start_workflow",))
            user.is_staff = True
            user.set_password(username)
            user.save()
        staff = Group.objects.get(name="staff")
        for codename in ("view_run", "view_approval", "view_ledgerrecord", "view_step", "view_workflowentry"):
            from django.contrib.auth.models import Permission

            staff.permissions.add(Permission.objects.get(content_type__app_label="runs", codename=codename))

    def _example_runs(self) -> list[str]:
        examples = [
            ("refund", {"order_id": "1001", "amount_cents": 1500, "reason": "damaged in transit"}, "alice"),
            ("follow-up", {"order_id": "1002", "after_seconds": 20}, "alice"),
            ("reprice", {"prices": [{"sku": "mug", "price_cents": 1600}, {"sku": "tee", "price_cents": 2700}]}, "alice"),
            ("support.onboard-agent", {"username": "robin"}, "alice"),
        ]
        started = []
        for workflow, data, who in examples:
            try:
                run = services.start(workflow=workflow, input=data, started_by=who)
            except SanomaError as err:
                self.stderr.write(f"could not start {workflow}: {err}")
                continue
            started.append(f"{run.id} ({workflow})")
        return started

    def _banner(self, config: Any, port: int, started: list[str]) -> None:
        url = f"http://127.0.0.1:{port}"
        lines = [
            "",
            f"sanoma demo: {config.app_name} ({config.version[:24]}...) on {settings.DATABASES['default']['NAME']}",
            f"  admin:   {url}/admin/   (log in as admin/admin, or alice/alice, finance-lead/finance-lead, sam/sam, support-lead/support-lead)",
            f"  API:     {url}/api/     (schema at {url}/api/schema/)",
            "  runs started: " + (", ".join(started) or "none"),
            "  try:    .venv/bin/python manage.py runs",
            "          .venv/bin/python manage.py decide <refund run id> approve --as finance-lead --note 'ok'",
            "          .venv/bin/python manage.py show <run id>",
        ]
        start = (config.demo or {}).get("start")
        if start:
            lines.append(f"  Start with these apps: {start}")
        lines.append("  Ctrl-C stops the demo.")
        self.stdout.write("\n".join(lines))
        self.stdout.flush()
