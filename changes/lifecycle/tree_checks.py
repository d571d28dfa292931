"""The checks of a change's tree, run inside their own process (`manage.py change_checks`) whose
SANOMA_ROOT is the tree, on a database of its own: a tree that cannot even import cannot break the
worker that asked.

In order, each a `Check` with its problems at `file:line`:
1. `config`: the config resolves (workflows import, policies parse, outlines draw, data files read).
2. `django`: `manage.py check` with the tree as the root (Django's and sanoma's system checks).
3. `lint`: the workflows, policies and data files follow the authoring rules.
4. `scenarios`: the tree's scenarios pass (behave on the tree's fakes, in a further process).
5. `declared`: the resources the tree's data files declare, as `sanoma.resources.read` answers
   (the worker plans them against the vendors: this process has no credentials).
A check that cannot run because an earlier one failed is reported as skipped, saying why.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from connectors.errors import ConfigError
from runs.config.datafiles import read_datafiles
from runs.config.lint.runner import lint
from runs.config.resolution import ResolvedConfig, load_config


@dataclass
class Check:
    name: str
    ok: bool = True
    skipped: str = ""
    problems: list[dict[str, Any]] = field(default_factory=list)
    summary: str = ""
    took_ms: int = 0

    def plain(self) -> dict[str, Any]:
        return {"name": self.name, "ok": self.ok, "skipped": self.skipped, "problems": self.problems,
                "summary": self.summary, "took_ms": self.took_ms}


def _problem(message: str, file: str | None = None, line: int | None = None, column: int | None = None
             ) -> dict[str, Any]:
    return {"file": file or "", "line": line or 0, "column": column or 0, "message": message}


def check_config(root: Path) -> tuple[Check, ResolvedConfig | None]:
    check = Check("config")
    try:
        config = load_config(root, fakes="instance", fake_dir=Path(settings.VAR_DIR) / "fakes")
    except ConfigError as err:
        check.ok = False
        check.problems = [_problem(str(p), p.file, p.line) for p in err.problems]
        check.summary = f"the config does not resolve: {len(err.problems)} problem(s)"
        return check, None
    except Exception as err:  # a tree may hold anything: say what broke, never crash the checks
        check.ok = False
        check.problems = [_problem(f"{type(err).__name__}: {err}")]
        check.summary = "the config does not resolve"
        return check, None
    check.summary = f"{len(config.workflows)} workflow(s), version {config.version}"
    return check, config


def check_django() -> Check:
    check = Check("django")
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("check", stdout=out, stderr=err)
    except SystemCheckError as failed:
        check.ok = False
        check.problems = [_problem(line.strip()) for line in str(failed).splitlines()
                          if line.strip() and not line.startswith(("SystemCheckError", "ERRORS:", "System check"))]
        check.summary = "manage.py check found errors"
        return check
    check.summary = (out.getvalue().strip().splitlines() or ["no issues"])[-1]
    return check


def check_lint(root: Path, config: ResolvedConfig) -> Check:
    check = Check("lint")
    report = lint(root, connectors=config.connectors)
    check.problems = [_problem(p.message, p.file, p.line, p.column) for p in report.problems]
    check.ok = not check.problems
    check.summary = f"{len(report.files)} file(s), {len(check.problems)} problem(s)"
    return check


def check_scenarios(root: Path, config: ResolvedConfig, *, timeout: float) -> Check:
    """behave over the tree's scenarios, in its own process (behave makes a test database)."""
    check = Check("scenarios")
    folders = [str(d) for d in config.scenarios]
    if not folders:
        check.summary = "no scenarios"
        return check
    out = Path(settings.VAR_DIR) / "behave.json"
    manage = Path(settings.BASE_DIR) / "manage.py"
    # No paths: behave takes the scenarios of this process's root (SANOMA_ROOT, the tree) and only those.
    argv = [sys.executable, str(manage), "behave", "--simple", "--noinput", "--no-capture", "--format", "json",
            "--outfile", str(out)]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=os.environ.copy(),
                              cwd=settings.BASE_DIR)
    except subprocess.TimeoutExpired:
        check.ok = False
        check.problems = [_problem(f"the scenarios did not finish within {timeout:g} s")]
        return check
    try:
        features = json.loads(out.read_text() or "[]")
    except (OSError, ValueError):
        features = None
    if features is None:
        check.ok = False
        said = (done.stderr or done.stdout).strip().splitlines()
        check.problems = [_problem("behave did not run: " + " / ".join(said[-5:]))]
        return check
    passed = 0
    for feature in features:
        for element in feature.get("elements", []):
            if element.get("type") != "scenario":
                continue
            if element.get("status") == "passed":
                passed += 1
                continue
            file, _, line = str(element.get("location", "")).rpartition(":")
            failing = next((s for s in element.get("steps", []) if s.get("result", {}).get("status") == "failed"),
                           None)
            why = ""
            if failing is not None:
                message = failing["result"].get("error_message") or ""
                if isinstance(message, list):
                    message = "\n".join(str(m) for m in message)
                last = (str(message).strip().splitlines() or [""])[-1]
                step_line = str(failing.get("location", "")).rpartition(":")[2]
                why = (f": {failing.get('keyword', '')} {failing.get('name', '')}"
                       + (f" (line {step_line})" if step_line.isdigit() else "") + (f": {last}" if last else ""))
            check.problems.append(_problem(f"scenario \"{element.get('name')}\" {element.get('status')}{why}",
                                           _relative(file, root), int(line) if line.isdigit() else 0))
    check.ok = not check.problems and done.returncode == 0
    if done.returncode != 0 and not check.problems:
        said = (done.stderr or done.stdout).strip().splitlines()
        check.problems = [_problem("behave failed: " + " / ".join(said[-5:]))]
    check.summary = f"{passed} passed, {len(check.problems)} failed"
    return check


def _relative(file: str, root: Path) -> str:
    try:
        return Path(file).resolve().relative_to(root).as_posix()
    except ValueError:
        return file


def declared(root: Path, config: ResolvedConfig) -> tuple[Check, dict[str, Any]]:
    check = Check("declared")
    read = read_datafiles(root, config.connectors).plain()
    check.problems = [_problem(p["message"], p.get("file"), p.get("line"), p.get("column"))
                      for p in read.get("problems", [])]
    check.ok = not check.problems
    check.summary = f"{len(read.get('resources', []))} resource(s) in {len(read.get('files', []))} file(s)"
    return check, read


def run_checks(root: Path, *, scenarios_timeout: float) -> dict[str, Any]:
    """Every check on the tree at `root`: the report the change records."""
    root = root.resolve()
    checks: list[Check] = []
    read: dict[str, Any] = {"files": [], "resources": [], "problems": []}

    def timed(fn: Any, *args: Any, **kwargs: Any) -> Any:
        began = time.monotonic()
        answer = fn(*args, **kwargs)
        made = answer[0] if isinstance(answer, tuple) else answer
        made.took_ms = int((time.monotonic() - began) * 1000)
        return answer

    config_check, config = timed(check_config, root)
    checks.append(config_check)
    if config is None:
        why = "the config does not resolve"
        checks += [Check(name, ok=False, skipped=why) for name in ("django", "lint", "scenarios", "declared")]
    else:
        checks.append(timed(check_django))
        checks.append(timed(check_lint, root, config))
        checks.append(timed(check_scenarios, root, config, timeout=scenarios_timeout))
        declared_check, read = timed(declared, root, config)
        checks.append(declared_check)
    failed = [c.name for c in checks if not c.ok]
    return {"ok": not failed, "failed": failed, "checks": [c.plain() for c in checks], "declared": read}


__all__ = ["Check", "run_checks"]
