from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.management.commands._common import dumps, guarded
from runs.policies.services import explain_call, explain_recorded


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = (
        "Explain a policy decision: which policies applied to a call and why.\n"
        "  manage.py policy explain --run <run-id> --seq <n>          a recorded call, evaluated again\n"
        "  manage.py policy explain --op shop.order.refund --as alice --input '{...}'"
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("action", choices=["explain"])
        parser.add_argument("--run", dest="run_id")
        parser.add_argument("--seq", type=int)
        parser.add_argument("--op")
        parser.add_argument("--as", dest="user")
        parser.add_argument("--input", default="{}")
        parser.add_argument("--workflow", default="")
        parser.add_argument("--json", action="store_true", help="print the whole explanation as JSON")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        if options["run_id"]:
            if options["seq"] is None:
                raise CommandError("--run needs --seq: the call's number in the run (see manage.py show)")
            out = explain_recorded(config=config, run_id=options["run_id"], seq=options["seq"])
        elif options["op"]:
            if not options["user"]:
                raise CommandError("--op needs --as: who would make the call")
            try:
                data = json.loads(options["input"])
            except json.JSONDecodeError as err:
                raise CommandError(f"--input is not JSON: {err}") from None
            out = explain_call(config=config, op_id=options["op"], actor=options["user"], input=data,
                               workflow=options["workflow"])
        else:
            raise CommandError("give --run and --seq, or --op and --as")
        if options["json"]:
            self.stdout.write(dumps(out))
            return
        self._print(out)

    def _print(self, out: dict[str, Any]) -> None:
        self.stdout.write(f"{out['op']}: {out.get('version') or 'no policy'} ({out.get('kind')})")
        for rule in out.get("policies", []):
            mark = "applies" if rule.get("satisfied") else "no"
            notes = ", ".join(f"@{k}({v})" for k, v in (rule.get("annotations") or {}).items() if k != "id")
            lifted = f"  lifted by {rule['lifted_by']}" if rule.get("lifted_by") else ""
            error = f"  error: {rule['error']}" if rule.get("error") else ""
            self.stdout.write(
                f"  [{mark:>7}] {rule['effect']:<6} {rule['id']} ({rule['file']}:{rule['line']}) {notes}{lifted}{error}"
            )
        decision = out.get("decision")
        if decision is None:
            self.stdout.write(f"decision: none, the policy failed: {out.get('error', {}).get('message')}")
            return
        text = decision["kind"]
        if decision.get("approver"):
            text += f" (held for {decision['approver']})"
        if decision.get("reason"):
            text += f": {decision['reason']}"
        self.stdout.write(f"decision now: {text}")
        if out.get("recorded"):
            recorded = out["recorded"]
            self.stdout.write(f"decision recorded: {recorded.get('kind')} under {recorded.get('policy_version')}")
