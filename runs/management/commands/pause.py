from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs import pausing
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.management.commands._common import guarded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Pause a connector (its vendor name), one operation (its id) or a workflow: runs reaching a call to it "
            "wait instead of failing; a paused workflow starts nothing new. Without a target, list the pauses.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("target", nargs="?", help="shop, shop.order.refund, or a workflow name")
        parser.add_argument("--kind", choices=["connector", "operation", "workflow"],
                            help="what the target is, when the name alone is ambiguous")
        parser.add_argument("--reason", help="what is wrong (required to pause)")
        parser.add_argument("--as", dest="user")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        if not options["target"]:
            for pause in pausing.active_pauses():
                held = len(pausing.held_runs(pause))
                self.stdout.write(f"{pause.kind} {pause.target}  paused by {pause.paused_by} at "
                                  f"{pause.paused_at:%Y-%m-%d %H:%M:%S}  {held} run(s) held  {pause.reason}")
            return
        if not options["user"]:
            raise CommandError("say who pauses: --as <username>")
        config = get_config()
        kind = options["kind"] or pausing.kind_of(options["target"], config)
        pause = pausing.pause(kind=kind, target=options["target"], reason=options["reason"] or "",
                              by=options["user"] or "", config=config)
        self.stdout.write(f"{pause.kind} {pause.target} paused")
