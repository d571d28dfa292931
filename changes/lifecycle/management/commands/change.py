"""`manage.py change open|list|show|notify`: the life of a change from the console.

    change open --branch raise-mug --title "Mug to 16.00" --as alice [--description ...] [--wait-for-push 3600]
    change open --pull-request https://github.com/acme/ops/pull/7 --as alice
    change list [--as USER] [--json]
    change show <run> [--as USER] [--json]
    change notify pushed --branch raise-mug --sha <sha>      (the embedded remote's post-receive hook)
"""
from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from changes.lifecycle import selectors, services
from connectors.errors import SanomaError
from runs.config.checks import COMMAND_CHECKS
from runs.console import console_login


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Open a change (a branch to check, merge and deploy), list changes, show one, or tell them what "
            "the remote did.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        opening = sub.add_parser("open", help="start the change workflow for a branch or a pull request")
        opening.add_argument("--branch", default="")
        opening.add_argument("--pull-request", default="")
        opening.add_argument("--title", default="")
        opening.add_argument("--description", default="")
        opening.add_argument("--base", default="main")
        opening.add_argument("--wait-for-push", type=float, default=0,
                             help="seconds a change whose checks failed waits for a new push (0: it ends at once)")
        opening.add_argument("--as", dest="user", required=True, help="who opens it (the run's starter)")
        listing = sub.add_parser("list", help="the newest changes")
        listing.add_argument("--as", dest="user", default=None, help="whose view (default: every change)")
        listing.add_argument("--json", action="store_true")
        showing = sub.add_parser("show", help="one change: its checks, plan, approval, merge and deploy")
        showing.add_argument("run")
        showing.add_argument("--as", dest="user", default=None)
        showing.add_argument("--json", action="store_true")
        notifying = sub.add_parser("notify", help="tell the branch's changes what the remote did")
        notifying.add_argument("topic", choices=services.TOPICS)
        notifying.add_argument("--branch", required=True)
        notifying.add_argument("--sha", default="")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except SanomaError as err:
            raise CommandError(f"{err} ({err.code})") from None

    def _open(self, options: dict[str, Any]) -> None:
        run = services.open_change(branch=options["branch"], pull_request=options["pull_request"],
                                   title=options["title"], description=options["description"], base=options["base"],
                                   wait_for_push=options["wait_for_push"], by=options["user"])
        self.stdout.write(f"{run.id}: change of {options['branch'] or options['pull_request']} opened; "
                          f"follow it with `manage.py change show {run.id}`")

    def _list(self, options: dict[str, Any]) -> None:
        found = selectors.changes_for(options["user"]) if options["user"] else selectors.all_changes()
        pictures = [selectors.picture(row, run) for row, run in found]
        if options["json"]:
            self.stdout.write(json.dumps(pictures, indent=2, default=str))
            return
        if not pictures:
            self.stdout.write("no changes")
        for p in pictures:
            self.stdout.write(f"{p['run']}  {p['state']:<13} {p['status']:<9} {p['branch']}: {p['title']}"
                              + (f"  (waiting for {p['waiting_for']})" if p["waiting_for"] else ""))

    def _show(self, options: dict[str, Any]) -> None:
        row, run = (selectors.change_of(options["run"], options["user"]) if options["user"]
                    else selectors.change_of_any(options["run"]))
        p = selectors.picture(row, run)
        if options["json"]:
            self.stdout.write(json.dumps(p, indent=2, default=str))
            return
        for line in selectors.describe(p):
            self.stdout.write(line)

    def _notify(self, options: dict[str, Any]) -> None:
        told = services.notify(topic=options["topic"], branch=options["branch"], sha=options["sha"],
                               via=f"console:{console_login()}")
        self.stdout.write(f"{options['topic']} sent to {len(told)} change(s){': ' + ', '.join(told) if told else ''}")


__all__ = ["Command"]


