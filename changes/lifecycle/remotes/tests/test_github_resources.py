"""Drift, plan and apply of GitHub resources declared in a data file, on the engine, against the
`github` connector's fake (its driver against GitHub emulated): a repository, its branch's
protection and a team membership made, a change made by hand at GitHub found and put back, an
undeclared one removed."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from changes import services
from connectors.vendors.github import github
from runs.authoring import SanomaConfig
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, resolve_config
from runs.testing import make_user

REPOSITORY = 'site = github.repository(name="site", description="The company site", delete_branch_on_merge=True)\n'
PROTECTION = ('site_main = github.branch_protection(repository=site, pattern="main", '
              'required_approving_review_count=2, required_status_checks=["ci/test", "lint"], enforce_admins=True)\n')
MEMBERSHIP = 'ada_dev = github.team_membership(team="developers", username="ada", role="maintainer")\n'


def write(root: Path, *declarations: str) -> None:
    path = root / "resources" / "github.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from connectors.vendors.github import github\n" + "".join(declarations))


@pytest.fixture
def site(db, tmp_path) -> Iterator[tuple[ResolvedConfig, Path]]:
    root = tmp_path / "ghco"
    write(root, REPOSITORY, PROTECTION, MEMBERSHIP)
    config = resolve_config(SanomaConfig(app_name="ghco", connectors=[github], root=root), fakes="instance")
    set_config(config)
    make_user("ops", perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config, root
    set_config(None)


def drift(config: ResolvedConfig) -> dict[str, Any]:
    return services.drift(by="ops", here=True, config=config)[1]


def apply(config: ResolvedConfig) -> dict[str, Any]:
    run = services.start("apply", by="ops", config=config)
    followed = services.follow(run, here=True, config=config, timeout=60)
    assert followed.ended, followed
    return services.report(followed.run)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["status"] for e in report["resources"]}


def test_declared_github_resources_are_made_kept_and_removed(site):
    config, root = site
    fake = config.fakes["github"]
    assert statuses(drift(config)) == {"site": "gone", "site_main": "gone", "ada_dev": "gone"}
    out = apply(config)
    # the repository before its branch's protection, which refers to it
    assert [(c["action"], c["name"], c["status"]) for c in out["changes"]] == [
        ("create", "site", "done"), ("create", "site_main", "done"), ("create", "ada_dev", "done")], out
    held = fake.state
    assert held["repos"]["site"]["visibility"] == "private" and held["repos"]["site"]["delete_branch_on_merge"]
    protection = held["protections"]["site:main"]
    assert protection["required_pull_request_reviews"]["required_approving_review_count"] == 2
    assert protection["required_status_checks"]["contexts"] == ["ci/test", "lint"]
    assert held["teams"]["developers"]["memberships"]["ada"] == {"role": "maintainer", "state": "pending"}
    settled = drift(config)
    assert statuses(settled) == {"site": "clean", "site_main": "clean", "ada_dev": "clean"}
    assert services.plan(settled, by="ops", config=config)["empty"]

    def by_hand(state: dict[str, Any]) -> None:  # someone changes GitHub's settings in its web pages
        state["protections"]["site:main"]["required_pull_request_reviews"]["required_approving_review_count"] = 0
        state["protections"]["site:main"]["required_status_checks"]["contexts"] = ["lint", "ci/test"]  # unordered
        state["repos"]["site"]["description"] = "Our site"
        state["teams"]["developers"]["memberships"]["ada"]["role"] = "member"

    fake.update(by_hand)
    changed = drift(config)
    assert statuses(changed) == {"site": "drifted", "site_main": "drifted", "ada_dev": "drifted"}
    by_name = {e["name"]: e for e in changed["resources"]}
    assert by_name["site_main"]["diffs"] == [{"path": "required_approving_review_count", "desired": 2, "actual": 0}]
    assert by_name["site"]["diffs"] == [{"path": "description", "desired": "The company site", "actual": "Our site"}]
    plan = services.plan(changed, by="ops", config=config)
    assert [(c["action"], c["name"]) for c in plan["changes"]] == [
        ("update", "site"), ("update", "site_main"), ("update", "ada_dev")]
    effects = {c["name"]: github.op(c["calls"][0]["op"]).effect for c in plan["changes"]}
    assert effects == {"site": "write", "site_main": "write", "ada_dev": "access"}
    out = apply(config)
    assert [c["status"] for c in out["changes"]] == ["done", "done", "done"], out
    assert statuses(drift(config)) == {"site": "clean", "site_main": "clean", "ada_dev": "clean"}

    write(root, REPOSITORY, PROTECTION)  # ada is no longer declared a developer: sanoma made it, sanoma removes it
    plan = services.plan(drift(config), by="ops", config=config)
    assert [(c["action"], c["import_id"]) for c in plan["changes"]] == [("delete", "developers:ada")], plan
    out = apply(config)
    assert [(c["action"], c["status"]) for c in out["changes"]] == [("delete", "done")], out
    assert fake.state["teams"]["developers"]["memberships"] == {}
    assert services.plan(drift(config), by="ops", config=config)["empty"]
