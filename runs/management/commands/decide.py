from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs.approvals import services as approvals
from runs.management.commands._common import dumps, guarded, run_id_argument


class Command(BaseCommand):
    help = "Approve or reject a run's pending approval: manage.py decide <run> approve --as finance-lead --note 'ok'"

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("decision", choices=["approve", "reject"])
        parser.add_argument("--as", dest="user", required=True)
        parser.add_argument("--note", default="")
        parser.add_argument("--approval", help="the approval id (approval-2); default: the first pending")
        parser.add_argument("--id", dest="message_id", help="a message id: sending it again decides once")
        parser.add_argument("--timeout", type=float, default=5.0, help="seconds to wait for the run to read it")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        state = approvals.decide(
            run_id=run_id_argument(options["run_id"]), decision=options["decision"], by=options["user"],
            note=options["note"],
            approval_id=options["approval"], message_id=options["message_id"], timeout=options["timeout"],
        )
        if state["status"] == "pending":
            self.stdout.write(f"{state['id']}: sent; still pending (the run applies it when a worker runs)")
        else:
            self.stdout.write(f"{state['id']}: {state['status']} by {state['decided_by']}")
        self.stdout.write(dumps(state))
