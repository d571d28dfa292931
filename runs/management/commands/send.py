from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from connectors.errors import InvalidInput
from runs import services
from runs.config.checks import COMMAND_CHECKS
from runs.management.commands._common import dumps, guarded, run_id_argument
from runs.validation import parse_json


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Send a message to a run, read by ctx.wait_message(topic): "
            "manage.py send <run> shipped --json '{\"tracking\": \"X1\"}' --as alice [--id M]")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("topic")
        parser.add_argument("--json", dest="payload", default="{}", help="the payload: a JSON object")
        parser.add_argument("--as", dest="user", required=True)
        parser.add_argument("--id", dest="message_id", help="a message id: sending it again sends once")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id = run_id_argument(options["run_id"])
        try:
            payload = parse_json(options["payload"], what="--json")
        except InvalidInput as err:
            raise CommandError(err.message.replace("\n", " ")) from None
        if not isinstance(payload, dict):
            raise CommandError("--json must be a JSON object")
        message = services.send_message(run_id=run_id, topic=options["topic"], payload=payload,
                                        message_id=options["message_id"], by=options["user"])
        self.stdout.write(f"{message.message_id}: sent to {message.run_id} on {message.topic}")
        self.stdout.write(dumps({"id": message.message_id, "run_id": message.run_id, "topic": message.topic,
                                 "payload": message.payload, "sent_by": message.sent_by,
                                 "sent_at": message.sent_at.isoformat(), "read": message.read_seq is not None}))
