"""GitHub as a change's remote, against a local server that answers like GitHub's REST API over a
real bare git repository: resolving branches and pull requests, exporting a commit, merging with
the head pinned (and refusing when the branch moved or conflicts), GitHub's failures, and webhooks.
No database: plain functions."""
from __future__ import annotations

import hashlib
import hmac
import json
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from changes.lifecycle.remotes.github import GitHubRemote, web_url_of
from changes.lifecycle.remotes.github_webhooks import events_of, verify_signature
from changes.lifecycle.remotes.tests.github_server import GitHubServer, Repo, git, tar_gz
from connectors.errors import RemoteError
from connectors.remotes import Remote, remote_for

TOKEN = "ghp_test0123456789abcdefTOKEN"
URL = "https://github.com/acme/config"
FILES = {
    "sanoma_config.py": "config = {'company': 'acme'}\n",
    "workflows/refund.py": "def refund(ctx):\n    return 1\n",
    "data/prices.csv": "sku,price\nmug,900\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    return Repo(tmp_path / "repo", FILES)


@pytest.fixture
def github(repo: Repo) -> Iterator[GitHubServer]:
    with GitHubServer({"acme/config": repo.bare}, token=TOKEN).running() as server:
        yield server


@pytest.fixture
def remote(github: GitHubServer) -> GitHubRemote:
    made = GitHubRemote(api_url=github.url, token=lambda: TOKEN, timeout=5)
    made.mergeable_waits = ()  # the local server always knows
    return made


def open_pull(github: GitHubServer, branch: str, title: str = "A change") -> dict:
    """Open a pull request the way a person would (straight through the API)."""
    request = urllib.request.Request(
        f"{github.url}/repos/acme/config/pulls", method="POST",
        data=json.dumps({"title": title, "head": branch, "base": "main"}).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=5) as reply:
        return json.loads(reply.read())


def answering(token: str | None):
    return lambda: token


def failure(call, *args, **kwargs) -> RemoteError:
    with pytest.raises(RemoteError) as raised:
        call(*args, **kwargs)
    return raised.value


# --- which repositories ---------------------------------------------------------------------------


def test_it_serves_github_repository_urls_and_no_others():
    remote = GitHubRemote(token=lambda: None)
    assert isinstance(remote, Remote) and remote.name == "github"
    for url in ("https://github.com/acme/config", "https://github.com/acme/config.git",
                "https://GitHub.com/acme/config/", "https://github.com/acme-co/my.config"):
        assert remote.handles(url), url
    for url in ("https://gitlab.com/acme/config", "https://github.com/acme", "https://github.com/acme/config/pulls",
                "git@github.com:acme/config.git", "file:///srv/config.git", "/srv/config", "",
                "https://user:pw@github.com/acme/config", "http://github.com/acme/config"):
        assert not remote.handles(url), url
    assert remote_for(URL, [remote]) is remote

    enterprise = GitHubRemote(api_url="https://git.acme.example/api/v3", token=lambda: None)
    assert enterprise.web_url == "https://git.acme.example"  # from the API's URL
    assert enterprise.handles("https://git.acme.example/acme/config")
    assert not enterprise.handles(URL)  # its API serves its own host only
    assert web_url_of("https://api.acme.ghe.com") == "https://acme.ghe.com"
    assert web_url_of("http://127.0.0.1:8000") == "https://github.com"


# --- resolve --------------------------------------------------------------------------------------


def test_resolve_reads_the_branch_and_its_open_pull_request(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    head = remote.resolve(URL, branch="change/price")
    assert (head.branch, head.sha, head.base, head.pull_request) == ("change/price", sha, "main", None)

    open_pull(github, "change/price", "Raise the mug's price")
    head = remote.resolve(URL, branch="change/price")
    assert head.pull_request == "https://github.com/acme/config/pull/1"
    assert head.title == "Raise the mug's price" and head.sha == sha

    asked = github.calls("GET", "/repos/acme/config/pulls")[-1]
    assert asked["query"] == {"head": "acme:change/price", "base": "main", "state": "open", "per_page": "100"}
    branch_read = github.calls("GET", "/repos/acme/config/branches/change/price")[-1]
    assert branch_read["authorized"] and branch_read["accept"] == "application/vnd.github+json"
    assert branch_read["api_version"] == "2022-11-28" and branch_read["user_agent"].startswith("sanoma")


def test_resolve_reads_a_pull_request_by_its_url_or_number(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    pr = open_pull(github, "change/price", "Raise the mug's price")
    for given in (pr["html_url"], "1", "#1", 1):
        head = remote.resolve(URL, pull_request=given)
        assert head.as_dict() == {"url": URL, "branch": "change/price", "sha": sha, "base": "main",
                                  "pull_request": pr["html_url"], "title": "Raise the mug's price"}
    wrong = failure(remote.resolve, URL, pull_request="https://github.com/other/repo/pull/1")
    assert wrong.code == "invalid_input"


def test_a_missing_branch_or_pull_request_is_branch_not_found(github, remote):
    missing = failure(remote.resolve, URL, branch="change/nope")
    assert missing.code == "branch_not_found" and missing.retryable is False
    assert "change/nope" in missing.message and missing.data["branch"] == "change/nope"
    missing = failure(remote.resolve, URL, pull_request="42")
    assert missing.code == "branch_not_found" and "#42" in missing.message


# --- export ---------------------------------------------------------------------------------------


def test_export_writes_exactly_the_commits_files(repo, github, remote, tmp_path):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n", "workflows/refund.py": None,
                                       "workflows/new.py": "x = 1\n"})
    dest = tmp_path / "export"
    remote.export(URL, sha, dest)
    written = {str(p.relative_to(dest)): p.read_bytes() for p in dest.rglob("*") if p.is_file()}
    assert written == repo.files_at(sha)
    assert "workflows/refund.py" not in written and not (dest / ".git").exists()

    # GitHub redirects the download to another host: the token stays behind.
    asked, download = github.requests[-2:]
    assert asked["path"] == f"/repos/acme/config/tarball/{sha}" and asked["authorized"]
    assert download["host"] == "localhost" and not download["authorized"]


@pytest.mark.parametrize("members, why", [
    ([("file", "top/ok.txt", "ok"), ("file", "/etc/evil", "x")], "absolute path"),
    ([("file", "top/ok.txt", "ok"), ("file", "top/../../evil", "x")], "'..'"),
    ([("symlink", "top/link", "../../outside")], "pointing outside"),
    ([("symlink", "top/link", "/etc/passwd")], "absolute path"),
    ([("file", "top/a", "a"), ("hardlink", "top/b", "/etc/passwd")], "hard link"),
    ([("file", "top/a", "a"), ("file", "other/b", "b")], "top folder"),
])
def test_export_refuses_a_tarball_that_would_write_outside_and_writes_nothing(repo, github, remote, tmp_path,
                                                                               members, why):
    github.serve_tarball(tar_gz(members))
    dest = tmp_path / "export"
    refused = failure(remote.export, URL, repo.sha("main"), dest)
    assert why in refused.message and refused.code == "driver_failed"
    assert list(dest.iterdir()) == [] and not (tmp_path / "evil").exists()


def test_export_of_a_commit_github_does_not_have(github, remote, tmp_path):
    missing = failure(remote.export, URL, "0" * 40, tmp_path / "export")
    assert missing.code == "branch_not_found"


# --- merge ----------------------------------------------------------------------------------------


def test_merge_opens_a_pull_request_and_merges_it_with_the_head_pinned(repo, github, remote):
    main_before = repo.sha("main")
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    merged = remote.merge(URL, branch="change/price", head_sha=sha, title="Raise the mug's price",
                          message="Approved by Ada")

    assert merged.as_dict() == {"sha": repo.sha("main"), "base": "main", "head_sha": sha, "fast_forward": False,
                                "pull_request": "https://github.com/acme/config/pull/1", "already": False}
    opened = github.calls("POST", "/repos/acme/config/pulls")
    assert [r["json"] for r in opened] == [{"title": "Raise the mug's price", "head": "change/price",
                                            "base": "main", "body": "Approved by Ada"}]
    [put] = github.calls("PUT", "/repos/acme/config/pulls/1/merge")
    assert put["json"] == {"sha": sha, "merge_method": "merge", "commit_title": "Raise the mug's price",
                           "commit_message": "Approved by Ada"}
    # A real merge commit on main: the old main and the branch's head.
    parents = git("rev-list", "--parents", "-n1", "main", cwd=repo.bare).stdout.split()[1:]
    assert parents == [main_before, sha]
    assert repo.files_at("main")["data/prices.csv"] == b"sku,price\nmug,950\n"


def test_a_push_after_resolve_makes_merge_refuse_and_nothing_is_merged(repo, github, remote):
    repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    head = remote.resolve(URL, branch="change/price")
    moved = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,1\n"})
    main_before = repo.sha("main")

    refused = failure(remote.merge, URL, branch="change/price", head_sha=head.sha)
    assert refused.code == "head_changed" and refused.retryable is False
    assert refused.data["expected"] == head.sha and refused.data["found"] == moved
    assert repo.sha("main") == main_before
    assert github.calls("PUT", r".*/merge") == []

    # With its pull request open, the same.
    open_pull(github, "change/price")
    refused = failure(remote.merge, URL, branch="change/price", head_sha=head.sha)
    assert (refused.code, refused.data["found"]) == ("head_changed", moved)
    assert repo.sha("main") == main_before


def test_a_push_racing_the_merge_is_refused_by_github_and_nothing_is_merged(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    main_before = repo.sha("main")
    pushed: list[str] = []
    github.state.before_merge = lambda: pushed.append(repo.commit("change/price", {"late.txt": "late\n"}))

    refused = failure(remote.merge, URL, branch="change/price", head_sha=sha)
    assert refused.code == "head_changed" and refused.data == {"branch": "change/price", "expected": sha,
                                                               "found": pushed[0]}
    [put] = github.calls("PUT", r".*/merge")
    assert put["json"]["sha"] == sha
    assert repo.sha("main") == main_before


def test_a_conflict_is_merge_conflict_naming_the_file_and_main_is_unchanged(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n", "workflows/new.py": "x = 1\n"})
    main_now = repo.commit("main", {"data/prices.csv": "sku,price\nmug,990\n", "README.md": "hello\n"})

    refused = failure(remote.merge, URL, branch="change/price", head_sha=sha)
    assert refused.code == "merge_conflict"
    assert refused.data["files"] == ["data/prices.csv"] and "data/prices.csv" in refused.message
    assert repo.sha("main") == main_now
    assert github.calls("PUT", r".*/merge") == []  # GitHub said mergeable: false first


def test_a_conflict_github_finds_only_at_merge_time_is_merge_conflict(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    landed: list[str] = []
    github.state.before_merge = lambda: landed.append(repo.commit("main", {"data/prices.csv": "sku,price\nmug,1\n"}))

    refused = failure(remote.merge, URL, branch="change/price", head_sha=sha)
    assert refused.code == "merge_conflict" and refused.data["files"] == ["data/prices.csv"]
    assert repo.sha("main") == landed[0]


def test_merging_a_pull_request_twice_answers_the_first_merge(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    first = remote.merge(URL, branch="change/price", head_sha=sha, title="Raise the mug's price")
    second = remote.merge(URL, branch="change/price", head_sha=sha, title="Raise the mug's price")
    assert second.already is True and first.already is False
    assert (second.sha, second.pull_request, second.head_sha) == (first.sha, first.pull_request, sha)
    assert len(github.calls("PUT", r".*/merge")) == 1 and repo.sha("main") == first.sha


def test_a_branch_with_nothing_to_merge_is_not_mergeable(repo, github, remote):
    git("branch", "change/empty", "main", cwd=repo.bare)
    refused = failure(remote.merge, URL, branch="change/empty", head_sha=repo.sha("main"))
    assert refused.code == "not_mergeable" and "nothing to merge" in refused.message


def test_a_merge_github_refuses_otherwise_is_not_mergeable_with_githubs_message(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    github.state.merge_refusal = "At least 1 approving review is required by reviewers with write access."
    refused = failure(remote.merge, URL, branch="change/price", head_sha=sha)
    assert (refused.code, refused.retryable) == ("not_mergeable", False)
    assert "At least 1 approving review is required" in refused.message
    assert refused.data["pull_request"] == "https://github.com/acme/config/pull/1"


# --- status ---------------------------------------------------------------------------------------


def test_status_reports_the_pull_request_its_checks_and_reviews(repo, github, remote):
    sha = repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    before = remote.status(URL, branch="change/price")
    assert (before.state, before.head_sha, before.mergeable, before.reviews) == ("open", sha, None, ())

    open_pull(github, "change/price")
    github.add_check_run(sha, "config-checks")
    github.add_check_run(sha, "lint", conclusion=None, status="in_progress")
    github.add_review(1, "ada", "APPROVED", sha)
    status = remote.status(URL, branch="change/price")
    assert (status.state, status.head_sha, status.base, status.mergeable) == ("open", sha, "main", True)
    assert [(c["name"], c["status"], c["conclusion"]) for c in status.checks] == [
        ("config-checks", "completed", "success"), ("lint", "in_progress", None)]
    assert [(r["user"], r["state"], r["commit_id"]) for r in status.reviews] == [("ada", "APPROVED", sha)]

    remote.merge(URL, branch="change/price", head_sha=sha)
    after = remote.status(URL, branch="change/price")
    assert (after.state, after.head_sha, after.mergeable) == ("merged", sha, None)
    assert json.loads(json.dumps(after.as_dict()))["state"] == "merged"


def test_status_says_so_when_the_token_cannot_read_check_runs(repo, github, remote):
    repo.commit("change/price", {"data/prices.csv": "sku,price\nmug,950\n"})
    github.state.checks_forbidden = True
    refused = failure(remote.status, URL, branch="change/price")  # never "no checks"
    assert (refused.code, refused.retryable, refused.status) == ("driver_failed", False, 403)
    assert "Resource not accessible" in refused.message and "fine-grained" in refused.message


# --- GitHub's failures ----------------------------------------------------------------------------


def test_a_rate_limit_is_retryable_after_githubs_reset(repo, github, remote):
    github.rate_limit(1, reset_in=4)
    began = time.time()
    limited = failure(remote.resolve, URL, branch="main")
    reset = int(began + 4)
    assert (limited.code, limited.retryable, limited.status) == ("driver_failed", True, 403)
    assert limited.retry_after is not None and abs(limited.retry_after - (reset - time.time())) < 1.5
    assert "rate limit" in limited.message
    assert remote.resolve(URL, branch="main").sha == repo.sha("main")  # the next request goes through


def test_a_server_error_is_retryable(github, remote):
    github.fail(1, status=502)
    failed = failure(remote.resolve, URL, branch="main")
    assert (failed.code, failed.retryable, failed.status) == ("driver_failed", True, 502)


def test_a_bad_token_is_a_clear_error_that_never_shows_the_token(github):
    wrong = "ghp_wrongTOKENwrongTOKEN123"
    for token in (wrong, None):
        remote = GitHubRemote(api_url=github.url, token=answering(token), timeout=5)
        refused = failure(remote.resolve, URL, branch="main")
        assert (refused.code, refused.retryable, refused.status) == ("driver_failed", False, 401)
        assert "401" in refused.message and "Bad credentials" in refused.message
        assert wrong not in refused.message and wrong not in json.dumps(refused.data) and wrong not in repr(remote)


def test_an_unreachable_github_is_retryable(tmp_path):
    remote = GitHubRemote(api_url="http://127.0.0.1:9", token=lambda: TOKEN, timeout=2)
    failed = failure(remote.resolve, URL, branch="main")
    assert failed.retryable is True and TOKEN not in failed.message


# --- webhooks -------------------------------------------------------------------------------------


def test_webhook_signatures():
    body = b'{"ref": "refs/heads/main"}'
    signed = "sha256=" + hmac.new(b"s3cret-webhook", body, hashlib.sha256).hexdigest()
    assert verify_signature("s3cret-webhook", body, signed)
    assert not verify_signature("s3cret-webhook", body + b" ", signed)  # another body
    assert not verify_signature("another-secret", body, signed)
    assert not verify_signature("s3cret-webhook", body, None)
    assert not verify_signature("s3cret-webhook", body, "")
    assert not verify_signature("s3cret-webhook", body, signed.replace("sha256=", "sha1="))
    assert not verify_signature("", body, "sha256=" + hmac.new(b"", body, hashlib.sha256).hexdigest())


def test_webhook_events_as_change_messages():
    sha, merge = "a" * 40, "b" * 40
    assert events_of("push", {"ref": "refs/heads/change/price", "after": sha}) == [
        ("pushed", {"branch": "change/price", "sha": sha})]
    assert events_of("push", {"ref": "refs/tags/v1", "after": sha}) == []
    assert events_of("push", {"ref": "refs/heads/gone", "after": "0" * 40, "deleted": True}) == []

    suite = {"head_branch": "change/price", "head_sha": sha, "conclusion": "success", "app": {"slug": "ci"}}
    assert events_of("check_suite", {"action": "completed", "check_suite": suite}) == [
        ("checks_passed", {"branch": "change/price", "sha": sha, "check": "ci"})]
    assert events_of("check_suite", {"action": "requested", "check_suite": suite}) == []
    run = {"name": "config-checks", "head_sha": sha, "conclusion": "failure",
           "check_suite": {"head_branch": "change/price"}}
    assert events_of("check_run", {"action": "completed", "check_run": run}) == [
        ("checks_failed", {"branch": "change/price", "sha": sha, "check": "config-checks", "conclusion": "failure"})]
    assert events_of("check_run", {"action": "completed", "check_run": {**run, "conclusion": "success"}}) == [
        ("checks_passed", {"branch": "change/price", "sha": sha, "check": "config-checks"})]
    assert events_of("check_run", {"action": "completed", "check_run": {**run, "conclusion": "neutral"}}) == []

    pr = {"merged": True, "merge_commit_sha": merge, "html_url": "https://github.com/acme/config/pull/1",
          "head": {"ref": "change/price", "sha": sha}, "base": {"ref": "main"}}
    assert events_of("pull_request", {"action": "closed", "pull_request": pr}) == [
        ("merged", {"branch": "change/price", "sha": merge, "base": "main", "head_sha": sha,
                    "pull_request": "https://github.com/acme/config/pull/1"})]
    assert events_of("pull_request", {"action": "closed", "pull_request": {**pr, "merged": False}}) == []
    assert events_of("pull_request", {"action": "opened", "pull_request": pr}) == []

    deployment = {"deployment_status": {"state": "success", "environment": "production",
                                        "environment_url": "https://shop.acme.example"},
                  "deployment": {"sha": merge, "ref": "main", "environment": "production"}}
    assert events_of("deployment_status", deployment) == [
        ("deployed", {"environment": "production", "sha": merge, "branch": "main",
                      "url": "https://shop.acme.example"})]
    failed = {**deployment, "deployment_status": {"state": "failure"}}
    assert events_of("deployment_status", failed) == []
    assert events_of("ping", {"zen": "Keep it logically awesome."}) == []
    assert events_of("push", {"ref": 7}) == [] and events_of("pull_request", {}) == []
