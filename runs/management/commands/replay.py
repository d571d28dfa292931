"""`manage.py replay [--run R ... | --workflow W] [--tree DIR] [--ended] [--json] [--export DIR |
--fixtures DIR]`: prove recorded runs against a tree of the company's code, dry, one outcome per
run (migrates, or pinned and why). Exit status 0 when every run migrates, 1 when one is pinned,
2 on bad input (named on stderr, nothing changed) or when the runs could not be proven at all.

A tree other than the running config root is proven in a process of its own (this command,
started again with SANOMA_ROOT=DIR): two checkouts of one company share module names."""
from __future__ import annotations

import json
import subprocess
import sys
import traceback
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from connectors.errors import ConfigError
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.config.trees import is_live_root, load_tree, process_env
from runs.engine.proof import Proof, prove_runs
from runs.management.commands._common import guarded, run_id_argument
from runs.replays import (
    ReplayInputError,
    export_fixtures,
    prove_fixtures,
    read_fixtures,
    report,
    select_runs,
)

BAD_INPUT = 2


class Command(BaseCommand):
    # The tree is resolved here, not by the checks: a tree that does not resolve is bad input (2).
    requires_system_checks: list[str] = []
    help = ("Prove recorded runs against a tree of the company's code: each is replayed over its record with "
            "nothing written or called, and migrates (the code reaches where it is parked by the same steps) or "
            "stays pinned, naming the first step that differs. Exit 0: all migrate; 1: one is pinned; 2: bad input.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--run", dest="runs", action="append", default=[], metavar="RUN",
                            help="a run to prove (repeatable); default: every unfinished run")
        parser.add_argument("--workflow", help="the runs of this workflow")
        parser.add_argument("--tree", help="the checkout of the config root to prove against (default: the live one)")
        parser.add_argument("--ended", action="store_true",
                            help="the runs that ended too: their whole history must replay")
        parser.add_argument("--json", action="store_true",
                            help="one JSON document: {tree, version, migrates, pinned, runs: [...]}")
        parser.add_argument("--export", metavar="DIR", help="write each run's record to DIR/<run>.json; prove nothing")
        parser.add_argument("--fixtures", metavar="DIR",
                            help="prove the records in DIR (written by --export) instead of the database's runs")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            self._handle(**options)
        except CommandError as err:
            err.returncode = BAD_INPUT  # a bad run id, a config that does not resolve: bad input, not a pin
            raise
        except SystemExit:
            raise
        except Exception as err:
            # Exit status 1 says "a run is pinned": a failure of the command itself must not read so.
            traceback.print_exc(file=sys.stderr)
            raise CommandError(f"replay could not prove the runs: {type(err).__name__}: {err}",
                               returncode=BAD_INPUT) from None

    @guarded
    def _handle(self, **options: Any) -> None:
        run_ids = [run_id_argument(r) for r in options["runs"]]
        if run_ids and options["workflow"]:
            raise CommandError("give --run or --workflow, not both", returncode=BAD_INPUT)
        if options["export"] and options["fixtures"]:
            raise CommandError("give --export or --fixtures, not both", returncode=BAD_INPUT)
        tree = Path(options["tree"]).resolve() if options["tree"] else Path(settings.SANOMA_ROOT).resolve()
        if options["tree"] and not tree.is_dir():
            raise CommandError(f"--tree {options['tree']}: no such folder", returncode=BAD_INPUT)
        if options["export"]:
            self._export(run_ids, options)
            return
        if options["tree"] and not is_live_root(tree):
            sys.exit(self._in_tree_process(tree, options))
        config = self._config(tree if options["tree"] else None)
        try:
            if options["fixtures"]:
                recorded = read_fixtures(folder=Path(options["fixtures"]), run_ids=run_ids,
                                         workflow=options["workflow"])
                proofs = prove_fixtures(config=config, recorded=recorded)
            else:
                runs = select_runs(run_ids=run_ids, workflow=options["workflow"], ended=options["ended"],
                                   config=config)
                proofs = prove_runs(config=config, runs=runs)
        except ReplayInputError as err:
            raise CommandError(str(err), returncode=BAD_INPUT) from None
        self._print(tree, config, proofs, as_json=options["json"])
        if any(not proof.migrates for proof in proofs):
            sys.exit(1)

    def _config(self, tree: Path | None) -> ResolvedConfig:
        try:
            return load_tree(tree) if tree is not None else get_config()
        except ConfigError as err:
            raise CommandError(f"the tree {tree or settings.SANOMA_ROOT} does not resolve: {err}",
                               returncode=BAD_INPUT) from None

    def _export(self, run_ids: list[str], options: dict[str, Any]) -> None:
        try:
            runs = select_runs(run_ids=run_ids, workflow=options["workflow"], ended=options["ended"])
            written = export_fixtures(runs=runs, folder=Path(options["export"]))
        except ReplayInputError as err:
            raise CommandError(str(err), returncode=BAD_INPUT) from None
        if options["json"]:
            self.stdout.write(json.dumps({"exported": [str(path) for path in written]}, indent=2))
        else:
            self.stdout.write(f"exported {len(written)} run{'s' if len(written) != 1 else ''} to {options['export']}")

    def _in_tree_process(self, tree: Path, options: dict[str, Any]) -> int:
        """This command again, in a process whose config root is the tree (and so imports only the
        tree's modules), on the same database; its output passed on, its exit status returned."""
        argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "replay", "--tree", str(tree)]
        if options["workflow"]:
            argv += ["--workflow", options["workflow"]]
        if options["fixtures"]:
            argv += ["--fixtures", str(Path(options["fixtures"]).resolve())]
        for run_id in options["runs"]:
            argv += ["--run", run_id]
        argv += [flag for flag in ("--ended", "--json") if options[flag[2:]]]
        done = subprocess.run(argv, env=process_env(tree), capture_output=True, text=True, check=False)
        self.stdout.write(done.stdout, ending="")
        self.stderr.write(done.stderr, ending="")
        return done.returncode

    def _print(self, tree: Path, config: ResolvedConfig, proofs: list[Proof], *, as_json: bool) -> None:
        if as_json:
            self.stdout.write(json.dumps(report(tree=tree, config=config, proofs=proofs), indent=2))
            return
        for proof in proofs:
            if proof.migrates:
                self.stdout.write(f"{proof.run_id} ({proof.workflow}): migrates, {proof.steps_replayed} "
                                  f"step{'s' if proof.steps_replayed != 1 else ''} replayed")
            else:
                at = f" at step {proof.step}" if proof.step is not None else ""
                self.stdout.write(f"{proof.run_id} ({proof.workflow}): pinned{at}: {proof.reason}")
        pinned = sum(1 for p in proofs if not p.migrates)
        self.stdout.write(f"{len(proofs) - pinned} migrate, {pinned} pinned, against {config.version} ({tree})")
