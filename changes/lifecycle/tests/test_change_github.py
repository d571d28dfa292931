"""A change whose repository is on GitHub, against a local server that answers like GitHub's REST API
(backed by a real bare git repository), advanced in this process.

- The checks run on the tarball GitHub serves of the branch's head, in their own process.
- The merge waits for an owner; it is sent with the checked head pinned (`sha`).
- A push after the approval: GitHub refuses the merge (409, the head moved), nothing is merged,
  and the change checks the new head and waits for a new approval of the new merge.
- GitHub's rate limit (403, `x-ratelimit-reset`): the merge is tried again once the reset time has
  passed, through the run's durable retry, and then merges the new head.
"""
from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.test import override_settings

from changes.lifecycle.models import ChangeRun
from changes.lifecycle.remotes.tests.github_server import GitHubServer, Repo
from changes.lifecycle.services import open_change
from changes.lifecycle.tests.gitco import FILES, use, write_root
from runs import selectors
from runs.approvals.services import decide
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, RunStatus

TOKEN = "ghp_test_token_not_a_secret"
URL = "https://github.com/acme/gitco"


@pytest.fixture
def site(tmp_path: Path, db, monkeypatch) -> Iterator[tuple[Repo, GitHubServer, ResolvedConfig]]:
    repo = Repo(tmp_path / "github", FILES)
    root = write_root(tmp_path / "site")
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    with GitHubServer({"acme/gitco": repo.bare}, token=TOKEN).running() as github, \
            override_settings(SANOMA_GITHUB_API_URL=github.url, SANOMA_GITHUB_URL="https://github.com"):
        config = use(root, tmp_path / "fakes")
        try:
            yield repo, github, config
        finally:
            set_config(None)


def _pending(run_id: str) -> Approval:
    return Approval.objects.get(run_id=run_id, status="pending")


def test_a_github_change_pins_its_head_rechecks_after_a_push_and_waits_out_the_rate_limit(site) -> None:
    repo, github, config = site
    first = repo.commit("new-readme", {"README.md": "The gitco company, now with more words.\n"}, "Reword")
    run = open_change(branch="new-readme", title="Reword the readme", url=URL, by="alice", config=config)
    drain(config)

    change = ChangeRun.objects.get(pk=run.id)
    assert change.head_sha == first and change.checks["ok"], change.checks
    approval = _pending(run.id)
    assert (approval.op, approval.approver) == ("sanoma.change.merge", "group:owners")
    assert github.calls("GET", r"/repos/acme/gitco/tarball/" + first)  # the checks read GitHub's tarball

    # A push after the owner approved: GitHub refuses the pinned merge and nothing is merged.
    second = repo.commit("new-readme", {"README.md": "Reworded again after the review.\n"}, "Reword again")
    decide(run_id=run.id, decision="approve", by="sam", timeout=0)
    drain(config)
    assert not github.calls("PUT", r"/repos/acme/gitco/pulls/\d+/merge")  # the moved head was seen first
    assert repo.sha("main") == repo.initial
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING and run.waiting_for.startswith("approval"), (run.status, run.error)
    change.refresh_from_db()
    assert change.head_sha == second and change.checks["sha"] == second  # the new head, checked again
    again = _pending(run.id)
    assert again.pk != approval.pk

    # GitHub rate-limits the merge: it is tried again after the reset, then merges the new head.
    github.rate_limit(1, reset_in=2.0)
    limited_at = time.monotonic()
    decide(run_id=run.id, decision="approve", by="sam", timeout=0)
    while True:
        drain(config)
        run.refresh_from_db()
        if run.status != RunStatus.WAITING or time.monotonic() - limited_at > 30:
            break
        time.sleep(0.2)
    assert run.status == RunStatus.FINISHED, (run.status, run.error)
    failed_tries = [r for r in selectors.ledger_of(run_id=run.id) if r["type"] == "op.attempt_failed"]
    assert [(r["op"], "rate limit" in r["error"]["message"]) for r in failed_tries] == [("sanoma.change.merge", True)]
    assert github.state.limited == 0  # the limited answer was given, to this change's merge
    assert time.monotonic() - limited_at >= 1.0  # and it was tried again only after the reset time
    pinned = [m["json"]["sha"] for m in github.calls("PUT", r"/repos/acme/gitco/pulls/\d+/merge")]
    assert pinned and set(pinned) == {second}, pinned  # the merge names the head that was checked and approved
    result = run.result or {}
    assert result["merged"] == repo.sha("main") and result["head"] == second
    assert result["deployed"] is None  # nothing declared: nothing to deploy
