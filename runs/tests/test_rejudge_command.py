"""`manage.py rejudge [--tree DIR] [--json] [--dry-run]`, run as the docs say: in its own process,
on the test database, with the example company's refund parked on its hold for finance-lead.

The live root is the example company; `head` is a copy of it whose `policies/shop.cedar` was edited
(a change's head), only ever loaded by processes of its own (two copies of one package cannot share
a process). The run is parked in this process on the live config; after a release, a real
`manage.py worker` on the head's code takes it on.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from runs import services
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.models import Approval, LedgerRecord, Run
from runs.policies import load_cedar_policy
from runs.policies.versions import policy_version_of
from runs.testing import drain, make_user
from runs.tests.processes import REPO, Worker, database_url, worker_env

COMPANY = REPO / "company"
VERSION = "rejudge-command"  # both trees run the same workflows: one version
HOLD = '@approve("finance-lead")\n@title("Refund needs finance")\n'
HANG = 120  # only turns a hang into a failure


def copy_company(to: Path) -> Path:
    shutil.copytree(COMPANY, to, ignore=shutil.ignore_patterns("__pycache__"))
    return to


def edit_shop_policy(root: Path, old: str, new: str) -> None:
    policy = root / "policies" / "shop.cedar"
    text = policy.read_text()
    assert old in text, old
    policy.write_text(text.replace(old, new, 1))


def policy_version(root: Path) -> str:
    return policy_version_of(load_cedar_policy(root / "policies"))


@pytest.fixture
def site(transactional_db, tmp_path: Path) -> Any:
    make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead", groups=["staff", "finance"])
    head = copy_company(tmp_path / "head" / "company")
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version=VERSION,
                     root=COMPANY, SANOMA_WORKERS=1)
    config = load_config(COMPANY, fakes="instance", app_version=VERSION)
    set_config(config)
    run = services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 1500}, started_by="alice",
                         config=config)
    drain(config)
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == ("waiting", "approval")
    yield {"head": head, "env": env, "run": run, "config": config, "var": tmp_path / "var"}
    set_config(None)


def manage(env: dict[str, str], *args: str, root: Path | None = None) -> subprocess.CompletedProcess[str]:
    if root is not None:
        env = {**env, "SANOMA_ROOT": str(root)}
    return subprocess.run([sys.executable, str(REPO / "manage.py"), "rejudge", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=HANG)


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, f"exit {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def unchanged(run: Run, records: int) -> None:
    approval = Approval.objects.get(run=run)
    assert (approval.status, approval.approver) == ("pending", "finance-lead")
    assert LedgerRecord.objects.filter(run_id=run.id).count() == records
    run.refresh_from_db()
    assert run.status == "waiting"


def test_tree_judges_in_a_child_process_and_changes_nothing(site):
    edit_shop_policy(site["head"], HOLD, '@approve("group:finance")\n@title("Refund needs finance")\n')
    before = LedgerRecord.objects.filter(run_id=site["run"].id).count()

    found = json.loads(ok(manage(site["env"], "--tree", str(site["head"]), "--json")))

    head_version = policy_version(site["head"])
    assert head_version != policy_version_of(site["config"].policy)
    assert found["policy_version"] == head_version  # the tree's policy judged, not the live one
    assert found["tree"] == str(site["head"].resolve())
    assert found["reassigned"] == [{"approval": "approval-1", "run": site["run"].id, "operation": "shop.order.refund",
                                    "from": "finance-lead", "to": "group:finance",
                                    "reason": "the policy now holds it for group:finance"}]
    assert found["released"] == [] and found["refused"] == []
    unchanged(site["run"], before)  # --tree implies --dry-run

    said = ok(manage(site["env"], "--tree", str(site["head"])))
    assert f"judged with policy {head_version} of {site['head'].resolve()}" in said
    assert f"would be reassigned  {site['run'].id} approval-1: shop.order.refund from finance-lead to group:finance" \
        in said
    assert "0 released, 1 reassigned, 0 refused (dry run: nothing was changed)" in said
    unchanged(site["run"], before)


def test_dry_run_says_what_it_would_release_and_changes_nothing(site):
    edit_shop_policy(site["head"], HOLD + "forbid(", '@reason("refunds are fine now")\npermit(')
    before = LedgerRecord.objects.filter(run_id=site["run"].id).count()

    said = ok(manage(site["env"], "--dry-run", root=site["head"]))

    assert f"would be released  {site['run'].id} approval-1: shop.order.refund held for finance-lead" in said
    assert "1 released, 0 reassigned, 0 refused (dry run: nothing was changed)" in said
    unchanged(site["run"], before)


def test_rejudge_releases_the_held_refund_which_then_happens_once(site):
    edit_shop_policy(site["head"], HOLD + "forbid(", '@reason("refunds are fine now")\npermit(')
    run = site["run"]

    found = json.loads(ok(manage(site["env"], "--json", root=site["head"])))

    assert [(r["approval"], r["run"]) for r in found["released"]] == [("approval-1", run.id)]
    assert Approval.objects.get(run=run).status == "released"
    (released,) = LedgerRecord.objects.filter(run_id=run.id, kind="approval.released")
    assert released.body["from_policy"] == policy_version_of(site["config"].policy)
    assert released.body["to_policy"] == found["policy_version"]
    again = json.loads(ok(manage(site["env"], "--json", root=site["head"])))  # never twice
    assert (again["released"], again["reassigned"], again["refused"]) == ([], [], [])

    worker = Worker({**site["env"], "SANOMA_ROOT": str(site["head"])}, site["var"] / "worker.log")
    try:
        worker.start()  # a worker on the new policy: the released call is asked again, and goes ahead
        worker.wait_for(lambda: Run.objects.get(pk=run.id).status == "finished", within=HANG,
                        what="the released refund's run to finish")
    finally:
        worker.cleanup()
    refunds = LedgerRecord.objects.filter(run_id=run.id, kind="op.called", body__op="shop.order.refund")
    assert refunds.count() == 1  # exactly once
    assert refunds.get().body["decision"]["kind"] == "allow"
    assert Approval.objects.filter(run=run).count() == 1  # nobody was asked again


def test_bad_input_is_refused_with_exit_2_and_nothing_changes(site, tmp_path: Path):
    run = site["run"]
    before = LedgerRecord.objects.filter(run_id=run.id).count()

    missing = manage(site["env"], "--tree", str(tmp_path / "nowhere"))
    assert missing.returncode == 2, missing.stderr
    assert f"--tree {tmp_path / 'nowhere'}: no such folder" in missing.stderr

    not_a_root = manage(site["env"], "--tree", str(tmp_path))
    assert not_a_root.returncode == 2 and "has no sanoma_config.py" in not_a_root.stderr

    checkout = tmp_path / "checkout"  # a checkout given where its config root (a subfolder) was meant
    (checkout / "company").mkdir(parents=True)
    (checkout / "company" / "sanoma_config.py").write_text("")
    meant = manage(site["env"], "--tree", str(checkout))
    assert meant.returncode == 2 and f"did you mean {checkout / 'company'}?" in meant.stderr, meant.stderr

    edit_shop_policy(site["head"], "forbid(principal, action in Action::\"money\", resource);",
                     "forbid(principal, action in Action::\"money\" resource);")
    broken = manage(site["env"], "--tree", str(site["head"]))
    assert broken.returncode == 2, broken.stderr
    assert f"--tree {site['head']}" in broken.stderr and "shop.cedar" in broken.stderr

    here = manage(site["env"], root=site["head"])  # the same broken policy as this process's own config
    assert here.returncode == 2 and "The config does not load" in here.stderr and "shop.cedar" in here.stderr
    unchanged(run, before)
