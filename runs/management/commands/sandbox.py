from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from runs.config.checks import COMMAND_CHECKS
from runs.config.registry import get_config
from runs.management.commands._common import guarded
from runs.sandbox.scenarios import reader
from runs.sandbox.services import start_sandbox


class Command(BaseCommand):
    requires_system_checks = COMMAND_CHECKS
    help = ("Start a sandbox run: the workflow of one of the company's scenarios, against fakes its Given steps "
            "seed, with its When's input. Without a scenario, list the scenarios (of --workflow) to choose from.")

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("scenario", nargs="?", help="the scenario's name, as its Scenario: line says it")
        parser.add_argument("--workflow", help="the workflow the scenario must run; alone, list its scenarios")
        parser.add_argument("--as", dest="user", help="who starts the run (required to start one)")

    @guarded
    def handle(self, *args: Any, **options: Any) -> None:
        config = get_config()
        if not options["scenario"]:
            for chosen in reader().of_workflow(config, options["workflow"]):
                # One that can never seed a sandbox run is listed with why, so nobody tries it.
                cannot = f"\n{'':<24} cannot start: {chosen.problem}" if chosen.problem else ""
                self.stdout.write(f"{chosen.workflow:<24} {chosen.name}  ({chosen.file}:{chosen.line}){cannot}")
            return
        if not options["user"]:
            raise CommandError("Say who starts the sandbox run: --as <username>")
        run = start_sandbox(scenario=options["scenario"], workflow=options["workflow"], started_by=options["user"],
                            config=config)
        said = options["scenario"]
        self.stdout.write(f'Started {run.workflow} in the sandbox as run {run.id}, seeded from "{said}"')
