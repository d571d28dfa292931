"""`manage.py limits`: the rate and concurrency limits in force, and changing one while the site runs."""
from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.limits import selectors, services
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("List the rate and concurrency limits (declared, in force, in use now); `set <vendor or operation> "
            "--rate 5/s --concurrency 2 --as <operator>` changes one from the next call on, on every worker; "
            "`reset <vendor or operation> --as <operator>` goes back to the declared limit.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", nargs="?", choices=["list", "set", "reset"], default="list")
        parser.add_argument("target", nargs="?", help="a connector's vendor (stripe) or an operation's id "
                                                      "(stripe.refund.create)")
        parser.add_argument("--rate", help="calls per unit: 5/s, 600/min, 1000/h, 20000/day; off lifts it")
        parser.add_argument("--concurrency", help="calls at once; 0 or off lifts it")
        parser.add_argument("--as", dest="user", help="the operator making the change (runs.pause)")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        action, target = options["action"], options["target"]
        if action == "list":
            if target or options["rate"] or options["concurrency"]:
                raise CommandError("list takes no target or values; to change a limit: limits set <target> --rate ...")
            self._list(config)
            return
        if not target:
            raise CommandError(f"say which limit to {action}: limits {action} <vendor or operation> --as <username>")
        if not options["user"]:
            raise CommandError(f"say who changes it: limits {action} {target} ... --as <username>")
        if action == "set":
            services.set_override(target=target, rate=options["rate"], concurrency=options["concurrency"],
                                  by=options["user"], config=config)
        else:
            if options["rate"] or options["concurrency"]:
                raise CommandError("reset takes no values: it goes back to the declared limit")
            services.reset(target=target, by=options["user"], config=config)
        row = next((r for r in selectors.limits_in_force(config) if r.target == target), None)
        said = row.in_force if row is not None and row.in_force != "none" else "no limit"
        self.stdout.write(f"{target}: {said} from the next call" + (" (as declared)" if action == "reset" else ""))

    def _list(self, config: Any) -> None:
        rows = selectors.limits_in_force(config)
        if not rows:
            self.stdout.write("No limits: no connector or operation declares one, and none was set.")
            return
        width = max(len(r.target) for r in rows)
        for row in rows:
            changed = f"  (set by {row.override.set_by} at {row.override.set_at:%Y-%m-%d %H:%M:%S})" \
                if row.override else ""
            # An unchanged limit is said once ("as declared"), not twice.
            declared = f"  declared: {row.declared_text}" if row.override else " (as declared)"
            self.stdout.write(f"{row.target:<{width}}  in force: {row.in_force}{declared}  now: {row.use_text}"
                              f"{changed}")
