from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import presence
from runs.approvals import services as approvals
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import dumps, guarded, run_id_argument
from runs.models import Run


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Approve or reject a run's pending approval: manage.py decide <run> approve --as finance-lead --note 'ok'"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("decision", choices=["approve", "reject"])
        parser.add_argument("--as", dest="user", required=True)
        parser.add_argument("--note", default="")
        parser.add_argument("--approval", help="the approval id (approval-2); default: the first pending")
        parser.add_argument("--id", dest="message_id", help="a message id: sending it again decides once")
        parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the run to read it")
        parser.add_argument("--json", action="store_true",
                            help="print the approval as JSON instead (as POST /api/runs/<id>/approvals answers it)")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id = run_id_argument(options["run_id"])
        # With no worker to read it, waiting for the run to apply the decision would only pass the time.
        version = Run.objects.filter(pk=run_id).values_list("app_version", flat=True).first()
        found = presence.worker_for(version) if version and options["timeout"] > 0 else None
        state = approvals.decide(
            run_id=run_id, decision=options["decision"], by=options["user"],
            note=options["note"], approval_id=options["approval"], message_id=options["message_id"],
            timeout=0 if found is not None and not found.ok else options["timeout"],
        )
        if options["json"]:
            self.stdout.write(dumps(state))
        elif state["status"] == "pending" and found is not None and not found.ok:
            self.stdout.write(f"{state['id']}: sent; still pending: the run applies it when a worker runs, and "
                              f"{found.missing} (start one: `manage.py worker`)")
        elif state["status"] == "pending":
            self.stdout.write(f"{state['id']}: sent; still pending (the run applies it when a worker runs)")
        else:
            self.stdout.write(f"{state['id']}: {state['status']} by {state['decided_by']}")
