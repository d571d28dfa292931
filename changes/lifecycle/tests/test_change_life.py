"""The whole life of a change, with real processes on the test's PostgreSQL database.

The live root is a copy of the example company made a git working tree with an embedded remote (a
bare repository) beside it, as `./demo` makes it, minus the resources whose first apply needs an
approver or a secret (staff roles, the webhook, the tote bag), so its drift starts clean, and with
only the refund's scenarios (the checks run them all, in a process of their own, per change). A
supervisor (`manage.py supervise`) runs the workers; a developer clones the remote, raises the
mug's price on a branch (and touches a workflow, so the deployed code is a new version), pushes,
and opens the change from the console.

What happens, each step asserted:
- the checks run in their own process and pass; their report lists the plan's one `update` (the
  mug's price) with the verdict the policy gives it;
- the merge is held for the owners; the developer is not an owner;
- an owner approves: the remote's `main` has the branch's commit;
- the deploy checks the merge out into the live root, the worker asks to start again, the
  supervisor starts a worker of the new version;
- that worker stamps the change run onto its version, the run applies the new price and finishes
  there, recording the revision and version deployed; drift is clean.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from changes.lifecycle.embedded import prepare_live_root
from changes.lifecycle.models import ChangeRun
from runs.config.datafiles import read_datafiles
from runs.models import ENDED_STATUSES, AppVersion, LedgerRecord, PresenceRole, Run, RunStatus, WorkerPresence
from runs.seed import seed_from_datafiles
from runs.tests.processes import REPO, database_url, group_members, wait_until, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

WITHIN = 240.0  # seconds any one step may take on a loaded 2-core machine before the test fails
# A step that runs a change's checks may take as long as the site lets the checks take: past that the
# change itself fails, saying the checks did not finish, so the test reports what the site says.
CHECKS_WITHIN = 480.0
KEPT_SCENARIOS = "scenarios/refund.feature"
GIT_ENV = {"GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@acme.example", "GIT_COMMITTER_NAME": "Dev",
           "GIT_COMMITTER_EMAIL": "dev@acme.example"}


def _git(*args: str, cwd: Path) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, **GIT_ENV}).stdout.strip()


def _live_company(tmp_path: Path) -> Path:
    """The example company, without what a first apply could not make without an approver or a secret."""
    live = tmp_path / "site" / "company"
    shutil.copytree(REPO / "company", live, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for gone in ("resources/shop_access.py", "resources/webhooks.py", "apps/support/resources/agents.py"):
        (live / gone).unlink()
    catalog = live / "resources" / "catalog.py"
    catalog.write_text("\n".join(line for line in catalog.read_text().splitlines() if not line.startswith("tote"))
                       + "\n")
    # The checks run behave over every scenario of the tree, once per change, each in a process that
    # makes its own database: the refund's scenarios (the ones a change below breaks) show them run
    # and fail; the company's other scenarios would only add minutes.
    for feature in live.rglob("*.feature"):
        if feature.relative_to(live).as_posix() != KEPT_SCENARIOS:
            feature.unlink()
    shutil.rmtree(live / "apps" / "support" / "scenarios")
    return live


def _seed_people(live: Path) -> None:
    """The demo's people, each as the live company's data files declare them (names and emails too)."""
    seed_from_datafiles(read_datafiles(live, []))


class Site:
    """The live company, its remote, a supervisor running its workers, and the console."""

    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.live = _live_company(tmp_path)
        self.remote = tmp_path / "company.git"
        var = tmp_path / "var"
        (var / "fakes").mkdir(parents=True)
        # No version named: it comes from the code, so a deploy of new code makes a new one.
        self.env = worker_env(db_url=database_url(connection.settings_dict), var_dir=var, version="", root=self.live)
        self.env.update(SANOMA_IDLE_CHECK_SECONDS="2", SANOMA_LEASE_SECONDS="10", SANOMA_SECRETS_KEY="",
                        SANOMA_CHECKS_TIMEOUT_SECONDS=str(CHECKS_WITHIN - 120), **GIT_ENV)
        prepare_live_root(source=REPO / "company", live=self.live, remote=self.remote, hook_env={
            k: self.env[k] for k in ("DATABASE_URL", "SANOMA_ROOT", "SANOMA_VAR_DIR", "SANOMA_FAKES")})
        _seed_people(self.live)
        self.first_revision = _git("rev-parse", "HEAD", cwd=self.live)
        self.log = tmp_path / "supervise.log"
        with open(self.log, "ab") as out:
            self.supervisor = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "supervise"], cwd=REPO, env=self.env, stdout=out,
                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.clone = tmp_path / "clone"
        _git("clone", "--quiet", str(self.remote), str(self.clone), cwd=tmp_path)
        # Commands refuse to wait for a run with no worker or supervisor up: wait until it says so.
        self.wait(lambda: WorkerPresence.objects.filter(role=PresenceRole.SUPERVISOR).exists(),
                  "the supervisor to be up")

    def logs(self) -> str:
        runs = list(Run.objects.filter(workflow="change").values("id", "status", "waiting_for", "app_version", "error"))
        records = list(LedgerRecord.objects.filter(workflow="change").order_by("-seq")
                       .values_list("run_id", "seq", "kind", "body")[:8])
        return (f"--- change runs: {runs}\n--- their last records: {records}\n"
                f"--- supervisor and workers ---\n{self.log.read_text(errors='replace')[-8000:]}")

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, str(REPO / "manage.py"), *args], cwd=REPO, env=self.env,
                              capture_output=True, text=True, timeout=WITHIN)
        assert done.returncode == 0, f"manage.py {' '.join(args)} failed:\n{done.stdout}\n{done.stderr}\n{self.logs()}"
        return done.stdout

    def wait(self, condition: Callable[[], Any], what: str, *, within: float = WITHIN) -> Any:
        return wait_until(condition, within=within, what=what, describe=self.logs, every=0.2)

    def branch(self, name: str, edit: Callable[[Path], None], *, start: str = "origin/main") -> str:
        """A developer's branch from `start`, edited, committed and pushed: its head."""
        _git("fetch", "--quiet", "origin", cwd=self.clone)
        _git("checkout", "--quiet", "-B", name, start, cwd=self.clone)
        edit(self.clone)
        _git("commit", "--quiet", "-am", f"{name}", cwd=self.clone)
        _git("push", "--quiet", "origin", f"{name}:refs/heads/{name}", cwd=self.clone)
        return _git("rev-parse", "HEAD", cwd=self.clone)

    def open(self, branch: str, title: str) -> str:
        return self.manage("change", "open", "--branch", branch, "--title", title, "--as", "alice").split(":", 1)[0]

    def ended(self, run_id: str, *, within: float = WITHIN) -> Run:
        return self.wait(lambda: Run.objects.filter(pk=run_id, status__in=ENDED_STATUSES).first(),
                         f"{run_id} to end", within=within)

    def stop(self) -> None:
        self.supervisor.send_signal(signal.SIGTERM)
        try:
            self.supervisor.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.supervisor.pid, signal.SIGKILL)
        for pid in group_members(self.supervisor.pid):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def site(tmp_path: Path, db: None) -> Iterator[Site]:
    if connection.vendor != "postgresql":
        pytest.skip("the life of a change runs its real processes on PostgreSQL")
    made = Site(tmp_path)
    try:
        yield made
    finally:
        made.stop()


def _edit(path: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(tree: Path) -> None:
        text = (tree / path).read_text()
        assert old in text, f"{path} has no {old!r}"
        (tree / path).write_text(text.replace(old, new, 1))

    return edit


def _touch_a_workflow(tree: Path) -> None:
    """A line inside a workflow's body: the deployed code is a new version."""
    follow_up = tree / "workflows" / "follow_up.py"
    lines = follow_up.read_text().splitlines(keepends=True)
    at = next(n for n, line in enumerate(lines) if line.startswith("def run("))
    follow_up.write_text("".join([*lines[:at + 1], "    # the follow-up's code changed with the prices\n",
                                  *lines[at + 1:]]))


def test_a_price_change_is_checked_held_approved_merged_deployed_and_finishes_on_the_new_version(site: Site) -> None:
    drift = json.loads(site.manage("drift", "--json", "--as", "alice"))
    assert drift["summary"]["drifted"] == 0 and drift["summary"]["error"] == 0, drift
    old_version = site.wait(lambda: AppVersion.objects.order_by("-promoted_at").values_list("version", flat=True)
                            .first(), "a worker to start")

    def raise_the_mug(tree: Path) -> None:
        _edit("resources/catalog.py", "price_cents=1500", "price_cents=1600")(tree)
        _touch_a_workflow(tree)

    head = site.branch("raise-mug", raise_the_mug)
    run_id = site.open("raise-mug", "Mug to 16.00")

    # Checks pass in their own process; the plan has one update, allowed; the merge waits for an owner.
    held = site.wait(lambda: Run.objects.filter(pk=run_id, waiting_for__startswith="approval").first(),
                     "the merge to be held", within=CHECKS_WITHIN)
    change = ChangeRun.objects.get(pk=run_id)
    assert change.head_sha == head
    assert change.checks["ok"], change.checks
    assert [c["name"] for c in change.checks["checks"]] == ["config", "django", "lint", "scenarios", "declared",
                                                          "in_flight"]
    updates = (change.plan or {})["changes"]
    assert [(c["action"], c["type"], c["name"]) for c in updates] == [("update", "shop.product", "mug")], updates
    assert [call["verdict"]["decision"] for call in updates[0]["calls"]] == ["allow"]
    approval = held.approvals.get(status="pending")
    assert approval.op == "sanoma.change.merge" and approval.approver == "group:owners"
    assert _git("rev-parse", "main", cwd=site.remote) == site.first_revision  # nothing merged yet

    # An owner approves: merged at the remote, deployed into the live root, a worker of the new version.
    site.manage("decide", run_id, "approve", "--as", "sam", "--note", "looks right")
    finished = site.ended(run_id)
    assert finished.status == RunStatus.FINISHED, (finished.error, site.logs())
    merged = _git("rev-parse", "main", cwd=site.remote)
    assert _git("merge-base", "--is-ancestor", head, merged, cwd=site.remote) == ""
    assert _git("rev-parse", "HEAD", cwd=site.live) == merged
    assert "price_cents=1600" in (site.live / "resources" / "catalog.py").read_text()
    new_version = AppVersion.objects.order_by("-promoted_at").values_list("version", flat=True).first()
    assert new_version != old_version
    result = finished.result or {}
    # The change run ends on the change workflow's own version in the new deploy.
    assert finished.app_version == AppVersion.objects.get(version=new_version).workflows["change"]
    assert result["deployed"]["revision"] == merged and result["deployed"]["version"] == new_version
    assert result["applied"]["done"] == 1
    change.refresh_from_db()
    assert (change.state, change.merged_sha, change.deployed_revision) == ("deployed", merged, merged)
    assert "to start again" in site.log.read_text()

    drift = json.loads(site.manage("drift", "--json", "--as", "alice"))
    assert drift["summary"]["drifted"] == 0 and drift["summary"]["error"] == 0, drift


def test_failed_checks_and_a_conflict_end_the_change_and_leave_the_live_root_alone(site: Site) -> None:
    bad_scenario = site.branch("bad-scenario", _edit("scenarios/refund.feature", "was refunded 1500",
                                                     "was refunded 1499"))
    bad_import = site.branch("bad-import", _edit("workflows/reprice.py", "from pydantic",
                                                 "import no_such_module_anywhere\nfrom pydantic"))
    site.branch("dearer-mug", _edit("resources/catalog.py", "price_cents=1500", "price_cents=1700"))
    # Meanwhile main moves the same line: the branch no longer merges cleanly.
    site.branch("main", _edit("resources/catalog.py", "price_cents=1500", "price_cents=1650"))
    live_before = _git("rev-parse", "HEAD", cwd=site.live)

    scenario_run = site.open("bad-scenario", "A refund scenario that is wrong")
    import_run = site.open("bad-import", "A workflow that does not import")
    conflict_run = site.open("dearer-mug", "Mug to 17.00")

    failed = site.ended(scenario_run, within=CHECKS_WITHIN)
    assert (failed.status, (failed.error or {})["code"]) == ("failed", "checks_failed"), failed.error
    assert "scenarios/refund.feature:10" in (failed.error or {})["message"], (failed.error or {})["message"]
    assert ChangeRun.objects.get(pk=scenario_run).head_sha == bad_scenario

    failed = site.ended(import_run, within=CHECKS_WITHIN)
    assert (failed.status, (failed.error or {})["code"]) == ("failed", "checks_failed"), failed.error
    assert "config: workflows/reprice.py:" in (failed.error or {})["message"], (failed.error or {})["message"]
    assert "no_such_module_anywhere" in (failed.error or {})["message"]
    assert ChangeRun.objects.get(pk=import_run).head_sha == bad_import

    site.wait(lambda: Run.objects.filter(pk=conflict_run, waiting_for__startswith="approval").first(),
              "the conflicting change's merge to be held", within=CHECKS_WITHIN)
    site.manage("decide", conflict_run, "approve", "--as", "sam")
    failed = site.ended(conflict_run)
    assert (failed.status, (failed.error or {})["code"]) == ("failed", "merge_conflict"), failed.error
    assert "resources/catalog.py" in (failed.error or {})["message"]

    # None of them touched the live root, and none merged.
    assert _git("rev-parse", "HEAD", cwd=site.live) == live_before == site.first_revision
    assert _git("status", "--porcelain", cwd=site.live) == ""
    assert "price_cents=1500" in (site.live / "resources" / "catalog.py").read_text()
    assert ChangeRun.objects.filter(merged_sha="").count() == 3
