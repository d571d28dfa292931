"""Each workflow has its own version: editing one never touches another's runs.

The company is a copy of the worker company under a folder of the test's own (each copy a package
of its own name, so two versions of one file load side by side in this process).
"""
from __future__ import annotations

import itertools
import re
import shutil
from pathlib import Path

import pytest

from runs import presence
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import clock, transitions
from runs.engine.drain import drain
from runs.models import AppVersion, PresenceRole, Run, RunStatus
from runs.presence import worker_for
from runs.selectors import runs_on_other_versions
from runs.services import start
from runs.testing import make_user
from runs.versions import deploy_holding, live_versions, register_version, version_of

# The worker test company (a data folder beside the wakeups tests; read as files, not imported).
ROOT = Path(__file__).resolve().parents[2] / "wakeups" / "tests" / "worker_company"

pytestmark = pytest.mark.django_db

_copies = itertools.count()
STARTER = "versions-tester"
POLICY = """@id("tally-open")
permit(principal, action, resource);
"""


def company(tmp_path: Path, edit: dict[str, tuple[str, str]] | None = None,
            files: dict[str, str] | None = None) -> Path:
    """A copy of the worker company, with `edit` ({file: (old, new)}) applied and `files` added."""
    root = tmp_path / f"versions_company_{next(_copies)}"
    shutil.copytree(ROOT, root, ignore=shutil.ignore_patterns("__pycache__", "harness.py"))
    for name, (old, new) in (edit or {}).items():
        text = (root / name).read_text()
        assert old in text, (name, old)
        (root / name).write_text(text.replace(old, new))
    for name, text in (files or {}).items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def load(root: Path, app_version: str | None = None) -> ResolvedConfig:
    return load_config(root, fakes="instance", app_version=app_version)


def test_each_workflow_has_its_own_version_and_editing_one_changes_only_its_own(tmp_path: Path) -> None:
    before = load(company(tmp_path))
    after = load(company(tmp_path, edit={"workflows/five_posts.py": ('"n": n, "note"', '"n": n + 1, "note"')}))
    assert set(before.workflow_versions) >= {"five-posts", "await-word", "nap", "change"}
    for name, version in before.workflow_versions.items():
        assert re.fullmatch(rf"{re.escape(name)}@[0-9a-f]{{16}}", version), version
    changed = {n for n in before.workflow_versions if before.workflow_versions[n] != after.workflow_versions[n]}
    assert changed == {"five-posts"}
    assert before.version != after.version  # the deploy version covers every workflow
    assert before.version.startswith("worker-company@") and before.policy_version == ""


def test_the_same_code_in_another_checkout_has_the_same_versions(tmp_path: Path) -> None:
    assert load(company(tmp_path)).workflow_versions == load(company(tmp_path)).workflow_versions


def test_a_policy_edit_changes_the_policy_version_and_every_workflow_version(tmp_path: Path) -> None:
    """A policy decides every call a run makes (allowed, held, denied): a run recorded under one
    policy may make other calls under another, so every workflow's version covers it and the
    deploy proves each parked run again."""
    none = load(company(tmp_path))
    one = load(company(tmp_path, files={"policies/tally.cedar": POLICY}))
    other = load(company(tmp_path, files={"policies/tally.cedar": POLICY.replace("tally-open", "all-open")}))
    assert none.policy_version == "" and re.fullmatch(r"policy@[0-9a-f]{16}", one.policy_version)
    assert one.policy_version != other.policy_version
    assert one.policy_version == "policy@" + one.policy.version.split(":", 1)[1]  # the Cedar set's own hash
    for name in none.workflow_versions:
        assert len({none.workflow_versions[name], one.workflow_versions[name], other.workflow_versions[name]}) == 3


def test_a_named_version_names_every_workflow_the_built_ins_too(tmp_path: Path) -> None:
    config = load(company(tmp_path), app_version="rel-7")
    assert config.version == "worker-company@rel-7"
    assert config.workflow_versions["nap"] == "nap@rel-7" and config.workflow_versions["change"] == "change@rel-7"
    assert version_of(config, "nap") == "nap@rel-7"


def test_a_run_takes_its_workflows_version_and_a_worker_runs_only_its_own(tmp_path: Path) -> None:
    make_user(STARTER, perms=["runs.start_workflow"])
    old = load(company(tmp_path))
    new = load(company(tmp_path, edit={"workflows/five_posts.py": ('"n": n, "note"', '"n": n + 1, "note"')}))
    nap = start(workflow="nap", input={"after_ms": 60_000}, started_by=STARTER, config=old)
    posts = start(workflow="five-posts", input={"label": "old"}, started_by=STARTER, config=old)
    assert (nap.app_version, posts.app_version) == (old.workflow_versions["nap"], old.workflow_versions["five-posts"])
    # The new code's worker takes the nap (its version did not change) and leaves the old five-posts alone.
    drain(new)
    assert Run.objects.get(pk=nap.id).status == RunStatus.WAITING
    assert Run.objects.get(pk=posts.id).status == RunStatus.QUEUED
    assert transitions.claim(run_id=posts.id, worker_id="w", versions=new.owned_versions, now=clock.now(),
                             lease_until=clock.now()) is None
    assert runs_on_other_versions(versions=new.owned_versions)[1] == 1
    drain(old)
    assert Run.objects.get(pk=posts.id).status == RunStatus.FINISHED


def test_each_deploy_records_its_workflows_policy_commit_and_root(tmp_path: Path) -> None:
    old = load(company(tmp_path))
    new = load(company(tmp_path, files={"policies/tally.cedar": POLICY}))
    assert live_versions() == set()
    register_version(version=old.version, promote=False, config=old)
    row = AppVersion.objects.get(version=old.version)
    assert row.workflows == old.workflow_versions and row.policy_version == ""
    assert row.root == str(old.root) and row.commit == ""  # a folder outside git has no commit
    register_version(version=new.version, promote=False, config=new)
    assert live_versions() == set(new.workflow_versions.values())
    held = deploy_holding(old.workflow_versions["nap"])
    assert held is not None and held.version == old.version
    assert deploy_holding("nap@0000000000000000") is None


def test_a_worker_counts_for_the_runs_of_its_deploys_workflow_versions(tmp_path: Path) -> None:
    old = load(company(tmp_path))
    new = load(company(tmp_path, edit={"workflows/five_posts.py": ('"n": n, "note"', '"n": n + 1, "note"')}))
    register_version(version=new.version, promote=False, config=new)
    presence.beat(role=PresenceRole.WORKER, version=new.version)
    # The nap's version is the same in both deploys: the new worker runs it; the old five-posts it does not.
    assert worker_for(old.workflow_versions["nap"]).ok
    assert worker_for(new.version).ok
    missing = worker_for(old.workflow_versions["five-posts"])
    assert not missing.ok and old.workflow_versions["five-posts"] in missing.missing
    presence.leave()


def test_a_run_of_an_unknown_workflow_is_named_after_the_deploy(tmp_path: Path) -> None:
    config = load(company(tmp_path))
    assert version_of(config, "gone") == f"gone@{config.version.split('@', 1)[1]}"
    assert version_of(config, "gone") not in config.owned_versions
