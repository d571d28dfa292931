"""`manage.py rejudge [--tree DIR] [--json] [--dry-run]`: judge every call held for an approval
again with the policy of this code (or of the tree DIR): released, reassigned or refused.

A deploy that changes the policies does this itself; the command is for an operator (a policy
fixed by hand) and for a change's review (`--tree <head> --json`: what merging it would do, judged
in a process of the tree's own, nothing changed). Exit status 0 when judged, 2 on bad input (a
missing folder, a tree or config whose policy does not load), nothing changed then."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from connectors.errors import ConfigError
from runs.approvals.rejudge import TreeError, rejudge_held, rejudge_tree
from runs.config.registry import get_config
from runs.management.commands._common import guarded
from runs.policies.versions import policy_version_of, shown

BAD_INPUT = 2


class Command(BaseCommand):
    help = ("Judge every call held for an approval again with this code's policy (or --tree DIR's): "
            "release, reassign or refuse each")
    # A tree whose policy does not load is bad input this command names (exit 2), not a system check failure.
    requires_system_checks: list[str] = []

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--tree", help="judge with the policy of this checkout of the company instead (in a "
                                           "process of its own); implies --dry-run")
        parser.add_argument("--json", action="store_true", help="print the outcome as one JSON document")
        parser.add_argument("--dry-run", action="store_true", help="say what would be done; change nothing")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        if options["tree"] is not None:
            try:
                found = rejudge_tree(tree=Path(options["tree"]))
            except TreeError as err:
                raise CommandError(str(err), returncode=BAD_INPUT) from None
            dry_run = True
        else:
            try:
                config = get_config()
            except ConfigError as err:
                raise CommandError(f"The config does not load, so its policy cannot judge: {err}",
                                   returncode=BAD_INPUT) from None
            dry_run = options["dry_run"]
            found = rejudge_held(config=config, dry_run=dry_run).plain(policy_version=policy_version_of(config.policy))
        if options["json"]:
            self.stdout.write(json.dumps(found, indent=2))
            return
        for line in lines(found, dry_run=dry_run):
            self.stdout.write(line)


def lines(found: dict[str, Any], *, dry_run: bool) -> list[str]:
    """The outcome in words: one line per held call that changes, then the counts."""
    would = "would be " if dry_run else ""
    out = [f"judged with policy {shown(found['policy_version'])}" + (f" of {found['tree']}" if found.get("tree")
                                                                      else "")]
    for item in found["released"]:
        out.append(f"{would}released  {item['run']} {item['approval']}: {item['operation']} held for {item['from']} "
                   f"({item['reason']})")
    for item in found["reassigned"]:
        out.append(f"{would}reassigned  {item['run']} {item['approval']}: {item['operation']} from {item['from']} "
                   f"to {item['to']}")
    for item in found["refused"]:
        out.append(f"{would}refused  {item['run']} {item['approval']}: {item['operation']} is denied: "
                   f"{item['reason']}")
    for item in found.get("failed", []):
        out.append(f"not judged  {item['run']} {item['approval']}: {item['operation']}: {item['reason']} "
                   "(left held)")
    counts = ", ".join(f"{len(found[k])} {k}" for k in ("released", "reassigned", "refused"))
    out.append(f"{counts}" + (" (dry run: nothing was changed)" if dry_run else ""))
    return out
