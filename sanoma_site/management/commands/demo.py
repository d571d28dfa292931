"""`manage.py demo`: the example company on the embedded database, with a worker and the admin.

The company runs from its own git repository, `var/demo/company` (copied from the project's
`company/` the first time), with an embedded remote beside it (`var/demo/company.git`): a user
clones the remote, changes the company on a branch, pushes, and opens a change; its deploy checks
the merge out into `var/demo/company` and starts the worker again on it. A SANOMA_ROOT set to
another folder is used as it is, and the worker runs with `--reload` there (unless `--no-reload`):
an edit under it starts the worker again on the new code, as `runserver` does.

Beside the worker, `manage.py supervise --pinned-only` starts a worker for an older deploy version
when one of the runs pinned to it becomes runnable (wakeups/fleet.py), from a worktree of its commit.

The worker and the web server are child processes, each in its own session (so its own process
group: the worker's django-q2 cluster forks into it). SIGTERM, SIGINT or SIGHUP to the demo stops
both: SIGTERM to each child (the worker then stops its cluster and lets the segment in flight
end), and once they have exited, or after `--grace-seconds` (or at a second signal), SIGKILL to
what is left of each child's process group; then every child is reaped and the demo exits 0. A
child that dies on its own stops the demo the same way, and the demo exits 1.
If the demo itself dies without cleaning up (SIGKILL, a crash), Linux sends each child SIGTERM
(PR_SET_PDEATHSIG, set in the child between fork and exec), so nothing is left holding the port.
Starting, watching and stopping the children is `runs.children`'s, as for `manage.py supervise`.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connections

from changes.lifecycle.embedded import prepare_live_root
from changes.selectors import declared_resources
from connectors.errors import ConfigError, SanomaError
from runs import children as child_processes
from runs.config.registry import get_config, set_config
from runs.seed import people_from_datafiles, seed_from_datafiles
from runs.telemetry import metrics
from runs.versions import sync_workflow_entries
from sanoma_site.demo import IN_DOUBT_RUN, demo_secrets, stage_in_doubt, start_example_runs


class Command(BaseCommand):
    help = "Run the example company: migrate, create its people, start a worker and the admin, start example runs."
    repo: Path | None = None  # the company repo's embedded remote, when the demo made one
    # Checked once the demo has chosen its root (its repo): the checks resolve the config.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--for-seconds", type=float, default=None, help="stop after this long (for scripts)")
        parser.add_argument("--no-runs", action="store_true", help="start no example runs")
        parser.add_argument("--no-reload", action="store_true",
                            help="with SANOMA_ROOT set to your own folder: do not start the worker again on an edit")
        parser.add_argument("--grace-seconds", type=float, default=10.0,
                            help="how long the worker and the server get to stop after SIGTERM before SIGKILL")

    def handle(self, *args: Any, **options: Any) -> None:
        # From here on a stop signal is noted, not fatal: nothing is started after it.
        signals = child_processes.StopSignals()
        try:
            failed = self._demo(signals, options)
        finally:
            signals.restore()
        if failed:
            raise CommandError(f"{failed}; see its output above")

    def _demo(self, signals: child_processes.StopSignals, options: dict[str, Any]) -> str:
        """Prepare, start the children, wait for a signal (or the end); returns why it failed, or ''."""
        os.environ["SANOMA_FAKES"] = "instance"
        settings.SANOMA_FAKES = "instance"
        # The announcements' links point at this demo's own desk, on the port it serves (unless set).
        if not os.environ.get("SANOMA_SITE_URL"):
            os.environ["SANOMA_SITE_URL"] = settings.SANOMA_SITE_URL = f"http://127.0.0.1:{options['port']}"
        # The demo is its host starting: the counters its processes add to start again from zero
        # (in its own folder; one named from outside, PROMETHEUS_MULTIPROC_DIR, is left alone).
        metrics.reset_folder(str(Path(settings.VAR_DIR) / "metrics"))
        self.repo = self._company_repo()
        call_command("check")
        self.stdout.write("sanoma demo: preparing the database ...")
        call_command("migrate", interactive=False, verbosity=0)
        try:
            config = get_config()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        sync_workflow_entries(config)
        read = declared_resources()
        seed_from_datafiles(read)
        people = people_from_datafiles(read)
        # The secrets the data files name get a made-up value where the environment has none, so
        # an apply can make the webhook; the worker and the server inherit them.
        secrets = [name for name, value in demo_secrets(read).items() if os.environ.setdefault(name, value) == value]
        in_doubt = [] if options["no_runs"] else self._in_doubt_example(config)
        connections.close_all()
        base = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        reload = self.repo is None and not options["no_reload"]  # the user's own folder: edits apply at once
        commands = {
            "the worker": [*base, "worker", *(["--reload"] if reload else [])],
            "the pinned versions' supervisor": [*base, "supervise", "--pinned-only"],
            "the admin server": [*base, "runserver", f"127.0.0.1:{options['port']}", "--noreload", "--insecure"],
        }
        children: dict[str, subprocess.Popen[bytes]] = {}
        failed = ""
        try:
            for name, argv in commands.items():
                if signals.received:
                    break
                children[name] = child_processes.start(argv, env=os.environ.copy())
            if not signals.received:
                started = in_doubt + ([] if options["no_runs"] else self._example_runs())
                self._banner(config, options["port"], started, people, secrets, reload=reload)
            ends = time.monotonic() + options["for_seconds"] if options["for_seconds"] else None
            while not signals.received and (ends is None or time.monotonic() < ends):
                for name, child in list(children.items()):
                    if child_processes.exited(child) and child_processes.restarting(child):  # a deploy: on new code
                        self.stdout.write(f"sanoma demo: {name} asked to start again on new code; starting it")
                        children[name] = child_processes.start(commands[name], env=os.environ.copy())
                gone = [name for name, child in children.items() if child_processes.exited(child)]
                if gone:
                    failed = f"{' and '.join(gone)} stopped"
                    break
                time.sleep(0.1)  # a signal's handler runs meanwhile and only notes it: seen here next
        finally:
            if signals.received:
                self.stdout.write(f"sanoma demo: {signals.received[0]}, stopping the worker and the admin server ...")
                self.stdout.flush()
            child_processes.stop(list(children.values()), grace=options["grace_seconds"], now=signals.again)
            codes = ", ".join(f"{name} exited {child.returncode}" for name, child in children.items())
            self.stdout.write(f"sanoma demo stopped ({codes or 'nothing was started'})")
            self.stdout.flush()
        return failed

    def _company_repo(self) -> Path | None:
        """The demo's company repo and its embedded remote (made the first time); None when
        SANOMA_ROOT names another root, which is then used as it is."""
        if Path(settings.SANOMA_ROOT).resolve() != (Path(settings.BASE_DIR) / "company").resolve():
            return None
        live = Path(settings.VAR_DIR) / "demo" / "company"
        remote = live.parent / "company.git"
        self.stdout.write(f"sanoma demo: the company's repo is {live}, its remote {remote} ...")
        hook_env = {"SANOMA_ROOT": str(live), "SANOMA_VAR_DIR": str(settings.VAR_DIR), "SANOMA_FAKES": "instance"}
        if os.environ.get("DATABASE_URL"):
            hook_env["DATABASE_URL"] = os.environ["DATABASE_URL"]
        try:
            prepare_live_root(source=Path(settings.BASE_DIR) / "company", live=live, remote=remote, hook_env=hook_env)
        except SanomaError as err:
            raise CommandError(f"the demo's company repo cannot be prepared: {err}") from None
        os.environ["SANOMA_ROOT"] = str(live)
        settings.SANOMA_ROOT = live
        set_config(None)  # resolved again, from the repo
        return remote

    def _in_doubt_example(self, config: Any) -> list[str]:
        """The run left in doubt, staged before any worker starts (this process advances it)."""
        try:
            run = stage_in_doubt(config)
        except SanomaError as err:
            self.stderr.write(f"could not leave a {IN_DOUBT_RUN[0]} run in doubt: {err}")
            return []
        return [f"{run.id} ({run.workflow}: in doubt once the worker picks it up)"]

    def _example_runs(self) -> list[str]:
        started, problems = start_example_runs()
        for problem in problems:
            self.stderr.write(problem)
        return [f"{run.id} ({run.workflow})" for run in started]

    def _banner(self, config: Any, port: int, started: list[str], people: list[Any], secrets: list[str], *,
                reload: bool = False) -> None:
        url = f"http://127.0.0.1:{port}"
        width = max((len(p.username) for p in people), default=0)
        lines = [
            "",
            f"sanoma demo: {config.app_name} ({config.version[:24]}...) on {settings.DATABASES['default']['NAME']}",
            f"  admin:   {url}/admin/   (sign in as one of these; the password is the username)",
            *(f"           {p.username:<{width}}  "
              + ", ".join([*(["superuser"] if p.superuser else []), *p.groups] or ["no groups"])
              for p in people),
            f"  API:     {url}/api/     (schema at {url}/api/schema/)",
            "  runs started: " + (", ".join(started) or "none"),
            *([f"  secrets: {', '.join(secrets)} (a made-up value each, for this demo)"] if secrets else []),
            # A command in another terminal reads the database and the company its environment names:
            # without these it reads another (the default var/ database, company/), and shows other runs.
            # Its address too: a run advanced there announces its approvals with links to this desk
            # (not the default port's); and the made-up secrets, so its credentials read as set.
            f"  another terminal: export SANOMA_VAR_DIR={settings.VAR_DIR} SANOMA_FAKES=instance "
            f"SANOMA_ROOT={settings.SANOMA_ROOT} SANOMA_SITE_URL={settings.SANOMA_SITE_URL}"
            + "".join(f" {name}={shlex.quote(os.environ.get(name, ''))}" for name in secrets)
            + ("   (and this demo's DATABASE_URL)" if os.environ.get("DATABASE_URL") else ""),
            "  try:    .venv/bin/python manage.py runs",
            "          .venv/bin/python manage.py decide <refund run id> approve --as finance-lead --note 'ok'",
            "          .venv/bin/python manage.py resolve     (the run in doubt: settle it on its page, "
            "or see docs/guides/demo.md)",
            "          .venv/bin/python manage.py runs --tag order=1001   "
            f"(or search order=1001 on {url}/admin/runs/run/)",
            "          .venv/bin/python manage.py show <run id>",
            "          .venv/bin/python manage.py plan --as ops",
        ]
        if self.repo is not None:
            lines += [
                f"  change the company: git clone {self.repo} acme && cd acme && git checkout -b my-change",
                "          edit, commit, git push origin my-change; then open a change in the admin (Changes)",
                f"          or: SANOMA_ROOT={self.repo.with_suffix('')} .venv/bin/python manage.py change open "
                "--branch my-change --title '...' --as alice",
            ]
        if reload:
            lines.append(f"  reload:  the worker starts again on every edit under {settings.SANOMA_ROOT} "
                         "(--no-reload: not)")
        lines.append(f"  versions: {url}/admin/runs/appversion/   (a run pinned to an older version gets a worker "
                     "of its own)")
        start = (config.demo or {}).get("start")
        if start:
            lines.append(f"  Start with these apps: {start}")
        lines.append("  Ctrl-C (or SIGTERM) stops the demo, its worker and its server; a second one kills them now.")
        self.stdout.write("\n".join(lines))
        self.stdout.flush()
