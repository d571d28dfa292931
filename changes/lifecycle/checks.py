"""Running a change's checks from the worker: the commit's files exported into a temporary folder of
their own, `manage.py change_checks` in a separate process with that folder as its root and a
database of its own, its report read back, then (`then`) what else is asked of the exported tree
while it is on disk (the `in_flight` check, on the live database), the folder removed. The live
root is never touched."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from connectors.remotes import Remote

# What the check process must not inherit: it has its own database, files and root.
_OWN = ("DATABASE_URL", "SANOMA_ROOT", "SANOMA_VAR_DIR", "SANOMA_FAKES", "SANOMA_APP_VERSION")


def run(remote: Remote, *, url: str, sha: str, root_name: str, timeout: float,
        then: Callable[[dict[str, Any], Path], dict[str, Any]] | None = None) -> dict[str, Any]:
    """The report of the checks on commit `sha` of `url`; a check process that dies or hangs is a
    failed report saying so, never an exception the change cannot read. `then(report, tree)`, given,
    adds to the report while the commit's tree is still exported."""
    workdir = Path(tempfile.mkdtemp(prefix="sanoma-checks-"))
    try:
        tree = workdir / root_name
        tree.mkdir()
        remote.export(url, sha, tree)
        var = workdir / "var"
        var.mkdir()
        out = workdir / "report.json"
        env = {k: v for k, v in os.environ.items() if k not in _OWN and k != "PROMETHEUS_MULTIPROC_DIR"}
        # The checks' runs (scenarios against fakes) are not the company's work: no metrics, so they
        # never reach the site's counters (which every process on the host adds to).
        env.update(SANOMA_ROOT=str(tree), SANOMA_VAR_DIR=str(var), SANOMA_FAKES="instance", SANOMA_METRICS="false",
                   DATABASE_URL=f"sqlite:///{workdir / 'checks.sqlite3'}")
        argv = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), "change_checks", str(tree),
                "--out", str(out), "--scenarios-timeout", str(max(timeout - 30, 30))]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env,
                                  cwd=settings.BASE_DIR)
        except subprocess.TimeoutExpired:
            return _failed(sha, f"the checks did not finish within {timeout:g} s")
        try:
            report: dict[str, Any] = json.loads(out.read_text())
        except (OSError, ValueError):
            said = (done.stderr or done.stdout).strip().splitlines()
            return _failed(sha, f"the check process exited {done.returncode} without a report: "
                                + " / ".join(said[-5:]))
        report["sha"] = sha
        return then(report, tree) if then is not None else report
    finally:  # a remote that cannot give the commit's files fails the call (which may be retried)
        shutil.rmtree(workdir, ignore_errors=True)


def _failed(sha: str, why: str) -> dict[str, Any]:
    return {"ok": False, "sha": sha, "failed": ["process"], "declared": {"files": [], "resources": [], "problems": []},
            "checks": [{"name": "process", "ok": False, "skipped": "", "summary": why, "took_ms": 0,
                        "problems": [{"file": "", "line": 0, "column": 0, "message": why}]}]}


def problems_of(report: dict[str, Any]) -> list[str]:
    """Each failed check's problems as `check: file:line: message`, in order."""
    lines: list[str] = []
    for check in report.get("checks", []):
        if check.get("ok"):
            continue
        if check.get("skipped"):
            lines.append(f"{check['name']}: skipped ({check['skipped']})")
            continue
        for p in check.get("problems", []) or [{"message": check.get("summary", "failed")}]:
            where = f"{p['file']}:{p['line']}: " if p.get("file") else ""
            lines.append(f"{check['name']}: {where}{p['message']}")
    return lines


__all__ = ["problems_of", "run"]
