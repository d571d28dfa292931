"""`manage.py apply [--as U] [--yes]`: show the plan, ask (unless --yes), start an apply run and
follow it, naming each approval it waits for. Nothing is started when the policy denies U every
change of the plan. Exit status 0 when every change was made, 1 when one was not (denied, rejected,
failed or skipped: the run fails with `apply_incomplete`) or nothing could be applied, 3 when the
run still waits (an approval) as `--timeout` runs out.

With no worker up (and no `--here`) it starts nothing and says so, and so when the workers up hold
another policy than the one the plan was judged with (`plan_policy_changed`, exit 1, naming both);
a worker that goes away while it follows, or Ctrl-C, stops it: an apply run that has not begun is
cancelled (nothing was applied), one that has begun is left to go on when a worker runs, and said so."""
from __future__ import annotations

import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from changes import services
from changes.management.commands._resources import add_common, outcome_line, plan_lines
from changes.plan_policy import check_plan_policy
from changes.resources.outcome import counts
from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.config.versioning import version_of
from runs.management.commands._common import guarded
from runs.models import RunStatus
from runs.waiting import Watch, give_up, require_worker


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = "Make the vendors hold what the data files declare (an apply run)"

    def add_arguments(self, parser: CommandParser) -> None:
        add_common(parser)
        parser.add_argument("--yes", action="store_true", help="apply without asking")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        by, here, timeout = options["user"], options["here"], options["timeout"]
        _, report = services.drift(by=by, here=here, timeout=timeout, purpose="apply")
        plan = services.plan(report, by=by)
        for line in plan_lines(plan, by=by):
            self.stdout.write(line)
        if plan["empty"]:
            return
        if plan["all_refused"]:
            raise CommandError(f"Nothing applied: the policy denies every change of this plan to {by}")
        if not options["yes"]:
            try:
                answer = input("Apply these changes? [y/N] ").strip().lower()
            except EOFError:
                raise CommandError("Nothing applied: no answer on standard input (pass --yes to apply "
                                   "without asking)") from None
            if answer not in ("y", "yes"):
                raise CommandError("Nothing applied")
        config = get_config()
        if not here:  # the worker that ran the drift may have gone (or changed) while the question was asked
            check_plan_policy(plan["policy_version"])
            require_worker(version_of(config, "apply"), what="apply waits for its run")
        run = services.start("apply", by=by, config=config)
        self.stdout.write(f"apply run {run.id}")
        named: set[str] = set()

        def waiting(approvals: list[dict[str, Any]]) -> None:
            for a in approvals:
                if a["approval"] not in named:
                    named.add(a["approval"])
                    self.stdout.write(f"waiting for {a['approver']} to approve {a['approval']}: {a['title']} "
                                      f"(manage.py decide {run.id} approve --approval {a['approval']} --as USER)")

        try:
            followed = services.follow(run, here=here, timeout=timeout, on_wait=waiting, through_waits=True,
                                       config=config, watch=Watch(run.app_version))
        except KeyboardInterrupt:
            raise CommandError(f"Interrupted: {give_up(run, by=by, why='apply was interrupted')}") from None
        if followed.stranded:
            raise CommandError(f"apply stopped waiting: {followed.stranded}; "
                               f"{give_up(run, by=by, why=f'no worker ran it: {followed.stranded}')}")
        if not followed.ended:
            self.stdout.write(f"{run.id} is {followed.run.status}: it goes on once approved; follow it with "
                              f"manage.py show {run.id}")
            sys.exit(3)
        result = services.report(followed.run)
        for change in result["changes"]:
            what = change["name"] or change["import_id"]
            tail = f": {change['error']['message']}" if change.get("error") else ""
            self.stdout.write(f"{change['status']:<8} {change['action']} {change['type']}  {what}{tail}")
        self.stdout.write(outcome_line(counts(result["changes"])))
        if followed.run.status != RunStatus.FINISHED:
            error = followed.run.error or {}
            self.stderr.write(f"apply run {run.id} failed with {error.get('code')}: {error.get('message')}")
            sys.exit(1)
