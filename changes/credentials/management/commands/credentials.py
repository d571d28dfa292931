"""`manage.py credentials list [--json] | set NAME | clear NAME`: connectors' credentials.

`set` reads the value from standard input, never from an argument (arguments end up in shell
histories and process lists): typed at a prompt that does not echo it, or piped in (one trailing
newline is dropped). Without `--as USER` the console is trusted, as its shell is, and recorded as
`console:<login>`; with it, USER must hold `credentials.manage_credentials`.
"""
from __future__ import annotations

import getpass
import json
import sys
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from changes.credentials import services
from changes.credentials.declared import VariableStatus
from changes.credentials.selectors import credential_statuses, declared
from connectors.errors import SanomaError
from runs.config.checks import COMMAND_CHECKS
from runs.console import console_login


def _status_line(status: VariableStatus) -> str:
    """`shop: SHOP_WEBHOOK_SECRET missing (none): a data file needs it: resources/webhooks.py:5 (orders_hook)`."""
    text = f"{status.connector}: {status.name} {status.shown} ({status.source})"
    if status.problem or status.note:
        text += f": {status.problem or status.note}"
    return text


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Connectors' credentials: `list [--json]` their statuses (never values); `set NAME` stores a value read "
            "from standard input, encrypted; `clear NAME` removes the stored value.")

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        listing = sub.add_parser("list", help="every declared variable: connector, status, source, description")
        listing.add_argument("--json", action="store_true", help="one JSON array")
        setting = sub.add_parser("set", help="store NAME's value, read from standard input")
        setting.add_argument("name")
        setting.add_argument("--as", dest="user", help="the user acting (must hold credentials.manage_credentials)")
        clearing = sub.add_parser("clear", help="remove NAME's stored value")
        clearing.add_argument("name")
        clearing.add_argument("--as", dest="user", help="the user acting (must hold credentials.manage_credentials)")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            if options["action"] == "list":
                self._list(as_json=options["json"])
            elif options["action"] == "set":
                self._set(options["name"], by=options["user"] or services.Console(console_login()))
            else:
                self._clear(options["name"], by=options["user"] or services.Console(console_login()))
        except SanomaError as err:
            code = f" [{err.code}]" if err.code else ""
            raise CommandError(f"{err.message}{code}") from None

    def _list(self, *, as_json: bool) -> None:
        statuses = credential_statuses()
        if as_json:
            self.stdout.write(json.dumps([asdict(s) for s in statuses], indent=2))
            return
        if not statuses:
            self.stdout.write("No connector declares an environment.")
            return
        for status in statuses:  # each variable once, naming every connector that reads it
            self.stdout.write(_status_line(status))
            for description in status.descriptions or ([status.description] if status.description else []):
                self.stdout.write(f"    {description}")

    def _read_value(self, name: str) -> str:
        if sys.stdin is not None and sys.stdin.isatty():
            return getpass.getpass(f"{name} (not echoed): ")
        text = sys.stdin.read() if sys.stdin is not None else ""
        if text.endswith("\r\n"):
            text = text[:-2]
        elif text.endswith("\n"):
            text = text[:-1]
        if text.strip() == "":
            raise CommandError(
                f"No value for {name} on standard input: pipe it in (printf '%s' \"$VALUE\" | manage.py credentials "
                f"set {name}), or run the command at a terminal to type it; to unset {name}, use "
                f"`manage.py credentials clear {name}`")
        return text

    def _set(self, name: str, *, by: Any) -> None:
        declared(name)  # an unknown name is refused before a value is asked for
        changed = services.set_credential(name=name, value=self._read_value(name), by=by)
        self.stdout.write(f"{name} {'changed' if changed.was_stored else 'stored'} (encrypted) by {changed.by}")
        for status in changed.statuses:
            self.stdout.write(_status_line(status))
        if changed.environment_wins:
            self.stderr.write(self.style.WARNING(
                f"{name} is set in this environment: where it is set, it wins over the stored value"))

    def _clear(self, name: str, *, by: Any) -> None:
        changed = services.clear_credential(name=name, by=by)
        self.stdout.write(f"{name} cleared by {changed.by}" if changed.was_stored else f"{name} was not stored")
        for status in changed.statuses:
            self.stdout.write(_status_line(status))
