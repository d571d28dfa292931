from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from runs import selectors
from runs.approvals import selectors as approval_selectors
from runs.config.checks import COMMAND_CHECKS
from runs.engine.calls import policy_words
from runs.management.commands._common import dumps, guarded, run_id_argument
from runs.models import LedgerKind
from runs.policies.versions import shown
from runs.sandbox.services import checks_of


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Show a run: its status, approvals and ledger."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("run_id")
        parser.add_argument("--as", dest="user", help="show only if this user may see the run")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        run_id = run_id_argument(options["run_id"])
        records = selectors.ledger_of(run_id=run_id, viewer=options["user"])
        run = selectors.get_run(run_id=run_id)
        assert run is not None  # ledger_of above refused a run that is missing or hidden from the user
        self.stdout.write(
            f"{run.id}  {run.workflow}  {run.status}  started by {run.started_by}  version {run.app_version}"
        )
        sandbox = checks_of(run, viewer=options["user"] or run.started_by)
        if sandbox is not None:
            self.stdout.write(f"sandbox: on fakes, seeded from the scenario \"{sandbox.scenario}\" ({sandbox.file})")
            if run.parent_id:
                self.stdout.write(f"  a child run: the scenario's checks are on its parent, {run.parent_id}")
            elif sandbox.checks is None:
                self.stdout.write("  its checks are evaluated when the run ends")
            else:
                self.stdout.write(f"  the scenario's checks: {sandbox.passed} passed, {sandbox.failed} failed")
                for check in sandbox.checks:
                    self.stdout.write(f"  {'pass' if check['ok'] else 'FAIL'}  {check['step']}")
                    if not check["ok"] and check.get("detail"):  # why it failed: what was expected, what was found
                        for line in str(check["detail"]).splitlines():
                            self.stdout.write(f"        {line}")
        if run.waiting_for:
            until = f" until {run.wake_at:%Y-%m-%d %H:%M:%S}" if run.wake_at else ""
            self.stdout.write(f"waiting for {run.waiting_for}{until}")
        if run.result is not None:
            self.stdout.write("result: " + dumps(run.result))
        if run.error:
            self.stdout.write("error: " + dumps(run.error))
        for state in approval_selectors.approvals_of(run_id=run.id):
            who = f" by {state['decided_by']}" if state.get("decided_by") else ""
            self.stdout.write(f"{state['id']}: {state['title']} -> {state['approver']} [{state['status']}{who}]")
        # The ledger sorts by step (a held call keeps its step's number, before its approval's);
        # listed as written, a call let through by an approval comes after it, as it happened.
        self.stdout.write("ledger (in the order written; the number is the step each record belongs to):")
        for record in sorted(records, key=lambda r: r["at"]):
            group = ""
            if record.get("group"):
                group = f"[{record['group']['id']} {record['group']['index'] + 1}/{record['group']['size']}]"
            line = " ".join(part for part in (f"{record['seq']:>3}", record["type"], said(record), group) if part)
            self.stdout.write("  " + line)


def said(record: dict[str, Any]) -> str:
    """What a ledger line shows of its record's body ("" for a record whose kind says it all)."""
    kind = record["type"]
    if kind == "op.called":
        outcome = record.get("error", {}).get("message") if record.get("error") else "ok"
        if record["decision"].get("kind") == "deny" and record["decision"].get("reason"):
            outcome = policy_words(record["op"], str(record["decision"]["reason"]))  # the op is named once
        return f"{record['op']} ({record['effect']}) {record['decision']['kind']}: {outcome}"
    if kind == LedgerKind.RUN_MIGRATED:
        steps = record.get("steps")
        return f"from {record.get('from')} to {record.get('to')} ({steps} step{'' if steps == 1 else 's'} replayed)"
    if kind == LedgerKind.RUN_PINNED:
        return f"on {record.get('version')}: {record.get('reason') or 'no reason recorded'}"
    if kind == LedgerKind.APPROVAL_REASSIGNED:
        return f"{record.get('approval')} from {record.get('from')} to {record.get('to')}"
    if kind == LedgerKind.APPROVAL_RELEASED:
        return (f"{record.get('approval')} (policy {shown(str(record.get('from_policy') or ''))} -> "
                f"{shown(str(record.get('to_policy') or ''))})")
    if kind.startswith("approval."):
        return " ".join(str(part) for part in (record.get("approval"),
                                               record.get("decision") or record.get("approver")) if part)
    return ""
