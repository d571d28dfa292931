"""The embedded git remote, on real repositories in tmp_path: bare ones, and working trees."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from changes.lifecycle.errors import RemoteCode
from changes.lifecycle.remotes.git import GitRemote
from changes.lifecycle.remotes.git_setup import init_embedded, install_hook
from changes.lifecycle.remotes.repository import Repository
from connectors.errors import ErrorCode, RemoteError
from connectors.remotes import Remote

ENV = {**os.environ, "GIT_AUTHOR_NAME": "dev", "GIT_AUTHOR_EMAIL": "dev@example.com", "GIT_COMMITTER_NAME": "dev",
       "GIT_COMMITTER_EMAIL": "dev@example.com", "GIT_TERMINAL_PROMPT": "0", "GIT_CONFIG_NOSYSTEM": "1"}
for _name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
    ENV.pop(_name, None)


def git(cwd: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, env=ENV, capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


class Repos:
    """A remote (bare, or a working tree with nothing checked out) and a clone to push changes from."""

    def __init__(self, tmp: Path, kind: str) -> None:
        self.kind = kind
        self.seed = tmp / "seed"
        self.seed.mkdir()
        git(self.seed, "init", "-q", "-b", "main")
        write(self.seed, {"README.md": "the company\n", "prices.py": "MUG = 1500\nCUP = 900\n",
                          "workflows/refund.py": "def refund():\n    return 1\n"})
        git(self.seed, "add", "-A")
        git(self.seed, "commit", "-q", "-m", "first")
        if kind == "bare":
            self.remote = tmp / "remote.git"
            git(tmp, "clone", "-q", "--bare", str(self.seed), str(self.remote))
        else:  # a working tree of its own; nothing checked out, so branches can be pushed to it
            self.remote = tmp / "remote"
            git(tmp, "clone", "-q", str(self.seed), str(self.remote))
            git(self.remote, "checkout", "-q", "--detach")
        self.url = str(self.remote)
        self.work = tmp / "work"
        git(tmp, "clone", "-q", str(self.remote), str(self.work))

    def change(self, branch: str, files: dict[str, str], *, start: str = "origin/main", message: str = "") -> str:
        """Commit `files` on `branch` (made from `start` when new) and push it; answers its head."""
        git(self.work, "fetch", "-q", "--prune", "origin")
        there = git(self.work, "rev-parse", "--verify", "--quiet", f"refs/remotes/origin/{branch}", check=False)
        git(self.work, "checkout", "-q", "-B", branch, f"origin/{branch}" if there else start)
        write(self.work, files)
        git(self.work, "add", "-A")
        git(self.work, "commit", "-q", "-m", message or f"{branch}: {', '.join(files)}")
        git(self.work, "push", "-q", "origin", branch)
        return git(self.work, "rev-parse", "HEAD")

    def rev(self, ref: str) -> str:
        return git(self.remote, "rev-parse", ref)


@pytest.fixture(params=["bare", "worktree"])
def repos(request, tmp_path) -> Repos:
    return Repos(tmp_path, request.param)


@pytest.fixture
def bare(tmp_path) -> Repos:
    return Repos(tmp_path, "bare")


remote = GitRemote()


def fails(code: str, fn, *args, **kwargs) -> RemoteError:
    with pytest.raises(RemoteError) as info:
        fn(*args, **kwargs)
    assert info.value.code == code, info.value
    return info.value


# -- handles, resolve -----------------------------------------------------------------------------------


def test_it_is_a_remote_that_handles_local_repositories_by_path_or_file_url(repos, tmp_path):
    assert isinstance(remote, Remote) and remote.name == "git"
    assert remote.handles(repos.url)
    assert remote.handles(f"file://{repos.url}") and remote.handles(f"file://localhost{repos.url}")
    (tmp_path / "plain").mkdir()
    assert not remote.handles(str(tmp_path / "plain"))
    assert not remote.handles(str(repos.work / "workflows"))  # inside a working tree is not a repository
    assert not remote.handles(str(tmp_path / "missing"))
    assert not remote.handles("remote.git")
    assert not remote.handles("https://github.com/acme/company")
    assert not remote.handles("file://elsewhere/srv/company.git")
    assert not remote.handles("")


def test_resolve_answers_where_the_branch_points(repos):
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    found = remote.resolve(repos.url, branch="prices")
    assert (found.url, found.branch, found.sha, found.base, found.pull_request) == (repos.url, "prices", head, "main",
                                                                                  None)
    assert remote.resolve(f"file://{repos.url}", branch="prices", base="main").sha == head


def test_a_missing_branch_is_branch_not_found_listing_the_branches_there_are(bare):
    for n in range(12):
        git(bare.remote, "branch", f"b{n:02}", "main")
    err = fails(RemoteCode.BRANCH_NOT_FOUND, remote.resolve, bare.url, branch="nope")
    assert "'nope'" in str(err)
    assert "b00, b01" in str(err) and "and 3 more" in str(err)  # 13 branches: the first 10 named
    assert err.data["branch"] == "nope" and len(err.data["branches"]) == 10
    fails(RemoteCode.BRANCH_NOT_FOUND, remote.status, bare.url, branch="nope")
    fails(RemoteCode.BRANCH_NOT_FOUND, remote.merge, bare.url, branch="prices", head_sha=bare.rev("main"),
          base="nope")


def test_a_hooks_git_environment_does_not_lead_it_to_another_repository(bare, tmp_path, monkeypatch):
    other = tmp_path / "other.git"
    git(tmp_path, "init", "-q", "--bare", str(other))
    head = bare.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    monkeypatch.setenv("GIT_DIR", str(other))  # what a command run from another repository's hook has
    monkeypatch.setenv("GIT_WORK_TREE", str(tmp_path))
    assert remote.resolve(bare.url, branch="prices").sha == head
    assert remote.merge(bare.url, branch="prices", head_sha=head).sha == head


@pytest.mark.parametrize("name", ["a..b", "-x", "@{-1}", "HEAD", "with space", "trailing/", "x.lock", "", "a~1"])
def test_a_bad_branch_name_is_invalid_input(bare, name):
    err = fails(ErrorCode.INVALID_INPUT, remote.resolve, bare.url, branch=name)
    assert "not a valid branch name" in str(err)


def test_pull_requests_and_bad_shas_and_non_repositories_are_invalid_input(bare, tmp_path):
    err = fails(ErrorCode.INVALID_INPUT, remote.resolve, bare.url, pull_request="7")
    assert "no pull requests" in str(err)
    fails(ErrorCode.INVALID_INPUT, remote.merge, bare.url, branch="main", head_sha="main")
    fails(ErrorCode.INVALID_INPUT, remote.export, bare.url, "--output=/tmp/x", tmp_path / "out")
    (tmp_path / "plain").mkdir()
    err = fails(ErrorCode.INVALID_INPUT, remote.resolve, str(tmp_path / "plain"), branch="main")
    assert "not a git repository" in str(err)


# -- export ---------------------------------------------------------------------------------------------------


def test_export_writes_exactly_the_tree_and_no_git(repos, tmp_path):
    head = repos.change("files", {"docs/a.md": "a\n", "docs/deep/b.md": "b\n", "run.sh": "#!/bin/sh\necho hi\n",
                                  # git archive would leave this file out and rewrite the other: export does not
                                  ".gitattributes": "docs/a.md export-ignore\nprices.py export-subst\n",
                                  "prices.py": "MUG = 1500  # $Format:%H$\n"})
    os.chmod(repos.work / "run.sh", 0o755)
    os.symlink("docs/a.md", repos.work / "link.md")
    git(repos.work, "add", "-A")
    git(repos.work, "commit", "-q", "-m", "exec and link")
    git(repos.work, "push", "-q", "origin", "files")
    head = git(repos.work, "rev-parse", "HEAD")
    dest = tmp_path / "out"
    remote.export(repos.url, head, dest)
    written = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file() or p.is_symlink())
    assert written == sorted(git(repos.work, "ls-tree", "-r", "--name-only", head).splitlines())
    assert not (dest / ".git").exists()
    for name in written:
        if not (dest / name).is_symlink():
            assert (dest / name).read_bytes() == (repos.work / name).read_bytes(), name
    assert (dest / "prices.py").read_text() == "MUG = 1500  # $Format:%H$\n"
    assert os.readlink(dest / "link.md") == "docs/a.md"
    assert os.access(dest / "run.sh", os.X_OK) and not os.access(dest / "README.md", os.X_OK)


def test_export_refuses_an_unknown_commit_and_a_folder_that_is_not_empty(bare, tmp_path):
    err = fails(ErrorCode.DRIVER_FAILED, remote.export, bare.url, "1" * 40, tmp_path / "out")
    assert "has no commit 1111111111" in str(err) and not err.retryable
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    err = fails(ErrorCode.INVALID_INPUT, remote.export, bare.url, bare.rev("main"), tmp_path / "full")
    assert "empty folder" in str(err)


# -- merge ----------------------------------------------------------------------------------------------------


def test_a_branch_ahead_of_main_is_fast_forwarded(repos):
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    merged = remote.merge(repos.url, branch="prices", head_sha=head, title="New prices")
    assert (merged.sha, merged.base, merged.head_sha, merged.fast_forward, merged.already) == (
        head, "main", head, True, False)
    assert repos.rev("main") == head
    assert remote.status(repos.url, branch="prices").state == "merged"


def test_diverged_branches_make_a_real_merge_commit(repos, monkeypatch):
    base_before = repos.change("main", {"README.md": "the company, now bigger\n"})
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"}, start=f"{base_before}~1")
    monkeypatch.setenv("SANOMA_GIT_AUTHOR_NAME", "Sanoma Bot")
    merged = remote.merge(repos.url, branch="prices", head_sha=head, title="New prices",
                          message="The mug costs more.")
    assert not merged.fast_forward and not merged.already and merged.head_sha == head
    assert repos.rev("main") == merged.sha
    assert git(repos.remote, "rev-list", "--parents", "-n", "1", merged.sha).split() == [merged.sha, base_before, head]
    assert git(repos.remote, "log", "-1", "--format=%B", merged.sha) == (
        f"New prices\n\nThe mug costs more.\n\nMerge branch 'prices' ({head})")
    assert git(repos.remote, "log", "-1", "--format=%an <%ae> / %cn <%ce>", merged.sha) == (
        "Sanoma Bot <sanoma@localhost> / Sanoma Bot <sanoma@localhost>")
    assert git(repos.remote, "show", f"{merged.sha}:prices.py") == "MUG = 1600\nCUP = 900"
    assert git(repos.remote, "show", f"{merged.sha}:README.md") == "the company, now bigger"


def test_a_conflict_names_the_files_and_changes_nothing(repos):
    base_before = repos.change("main", {"prices.py": "MUG = 1700\nCUP = 900\n", "workflows/refund.py": "x = 1\n"})
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n", "workflows/refund.py": "x = 2\n",
                                   "new.py": "fine\n"}, start=f"{base_before}~1")
    status = remote.status(repos.url, branch="prices")
    assert (status.state, status.head_sha, status.mergeable) == ("open", head, False)
    objects_before = set(git(repos.remote, "for-each-ref", "--format=%(refname) %(objectname)").splitlines())
    err = fails(RemoteCode.MERGE_CONFLICT, remote.merge, repos.url, branch="prices", head_sha=head)
    assert err.data["files"] == ["prices.py", "workflows/refund.py"]
    assert "prices.py, workflows/refund.py" in str(err) and "nothing was merged" in str(err)
    assert repos.rev("main") == base_before
    assert set(git(repos.remote, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()) == objects_before
    assert len(git(repos.remote, "worktree", "list").splitlines()) == 1
    if repos.kind == "worktree":
        assert git(repos.remote, "status", "--porcelain") == ""  # its own working tree untouched


def test_a_branch_that_moved_after_its_checks_is_head_changed_and_nothing_is_merged(repos):
    checked = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    assert remote.resolve(repos.url, branch="prices").sha == checked
    moved = repos.change("prices", {"prices.py": "MUG = 1\nCUP = 900\n"})
    main_before = repos.rev("main")
    err = fails(RemoteCode.HEAD_CHANGED, remote.merge, repos.url, branch="prices", head_sha=checked)
    assert err.data["expected"] == checked and err.data["found"] == moved
    assert repos.rev("main") == main_before


def test_merging_a_branch_twice_answers_the_first_merge(repos):
    base_before = repos.change("main", {"README.md": "bigger\n"})
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"}, start=f"{base_before}~1")
    first = remote.merge(repos.url, branch="prices", head_sha=head)
    again = remote.merge(repos.url, branch="prices", head_sha=head)
    assert (again.already, again.sha, again.head_sha, again.fast_forward) == (True, first.sha, head, False)
    assert repos.rev("main") == first.sha
    ahead = repos.change("ahead", {"ahead.py": "x\n"})
    assert remote.merge(repos.url, branch="ahead", head_sha=ahead).fast_forward
    # still the earlier merge after main moved on, the branch moved on, or the branch was deleted
    repos.change("main", {"later.py": "x\n"})
    repos.change("prices", {"more.py": "x\n"})
    git(repos.work, "push", "-q", "origin", "--delete", "ahead")
    assert remote.merge(repos.url, branch="prices", head_sha=head) == again
    assert remote.merge(repos.url, branch="ahead", head_sha=ahead).as_dict() == {
        "sha": ahead, "base": "main", "head_sha": ahead, "fast_forward": True, "pull_request": None, "already": True}


def test_merges_of_different_branches_in_parallel_all_land(bare):
    base_before = bare.change("main", {"README.md": "bigger\n"})
    heads = {f"c{n}": bare.change(f"c{n}", {f"c{n}.py": f"N = {n}\n"}, start=f"{base_before}~1") for n in range(6)}
    barrier = threading.Barrier(len(heads))
    results: dict[str, object] = {}

    def merge(branch: str, sha: str) -> None:
        barrier.wait()
        try:
            results[branch] = remote.merge(bare.url, branch=branch, head_sha=sha, title=branch)
        except Exception as err:
            results[branch] = err

    threads = [threading.Thread(target=merge, args=item) for item in heads.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(not isinstance(r, Exception) for r in results.values()), results
    main = bare.rev("main")
    for sha in [base_before, *heads.values()]:
        subprocess.run(["git", "merge-base", "--is-ancestor", sha, main], cwd=bare.remote, env=ENV, check=True)
    assert len(git(bare.remote, "rev-list", "--merges", main).splitlines()) == len(heads)


def test_a_push_to_main_during_a_merge_is_not_lost(bare, monkeypatch):
    base_before = bare.change("main", {"README.md": "bigger\n"})
    head = bare.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"}, start=f"{base_before}~1")
    original = GitRemote._move_base
    pushed: list[str] = []

    def push_first(self, repo, base, new, old):
        if not pushed:  # someone pushes to main after the merge read it, before it moves it
            pushed.append(bare.change("main", {"other.py": "pushed\n"}))
        return original(self, repo, base, new, old)

    monkeypatch.setattr(GitRemote, "_move_base", push_first)
    merged = remote.merge(bare.url, branch="prices", head_sha=head)
    assert bare.rev("main") == merged.sha
    assert git(bare.remote, "rev-list", "--parents", "-n", "1", merged.sha).split() == [merged.sha, pushed[0], head]


def test_a_merge_waits_for_the_lock_and_gives_up_after_its_timeout(bare):
    head = bare.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    repo = Repository(bare.remote)
    with repo.lock():
        err = fails(ErrorCode.DRIVER_FAILED, GitRemote(lock_timeout=0.2).merge, bare.url, branch="prices",
                    head_sha=head)
        assert err.retryable and "held the lock" in str(err)
    assert bare.rev("main") != head
    assert remote.merge(bare.url, branch="prices", head_sha=head).fast_forward


def test_histories_with_nothing_in_common_are_not_mergeable(bare):
    git(bare.work, "checkout", "-q", "--orphan", "alien")
    git(bare.work, "rm", "-q", "-rf", ".")
    write(bare.work, {"alien.txt": "x\n"})
    git(bare.work, "add", "-A")
    git(bare.work, "commit", "-q", "-m", "alien")
    git(bare.work, "push", "-q", "origin", "alien")
    head = git(bare.work, "rev-parse", "HEAD")
    assert remote.status(bare.url, branch="alien").mergeable is False
    fails(RemoteCode.NOT_MERGEABLE, remote.merge, bare.url, branch="alien", head_sha=head)


def test_status_of_an_open_change_that_merges_cleanly(repos):
    base_before = repos.change("main", {"README.md": "bigger\n"})
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"}, start=f"{base_before}~1")
    status = remote.status(repos.url, branch="prices")
    assert (status.state, status.head_sha, status.base, status.mergeable, status.checks, status.reviews) == (
        "open", head, "main", True, (), ())
    assert repos.rev("main") == base_before


# -- a remote whose main is checked out -------------------------------------------------------------------------


@pytest.fixture
def checked_out(tmp_path) -> Repos:
    repos = Repos(tmp_path, "worktree")
    git(repos.remote, "checkout", "-q", "main")
    return repos


def test_a_base_checked_out_in_the_remote_is_refused_as_a_push_would_be(checked_out):
    head = checked_out.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    before = checked_out.rev("main")
    err = fails(RemoteCode.NOT_MERGEABLE, remote.merge, checked_out.url, branch="prices", head_sha=head)
    assert "receive.denyCurrentBranch updateInstead" in str(err)
    assert checked_out.rev("main") == before
    assert (checked_out.remote / "prices.py").read_text() == "MUG = 1500\nCUP = 900\n"


def test_with_update_instead_a_merge_updates_the_checked_out_files(checked_out):
    git(checked_out.remote, "config", "receive.denyCurrentBranch", "updateInstead")
    base_before = checked_out.change("main", {"README.md": "bigger\n"})
    git(checked_out.remote, "reset", "-q", "--hard")  # the push updated its files too
    head = checked_out.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"}, start=f"{base_before}~1")
    (checked_out.remote / "README.md").write_text("edited here\n")
    fails(RemoteCode.NOT_MERGEABLE, remote.merge, checked_out.url, branch="prices", head_sha=head)
    assert checked_out.rev("main") == base_before
    git(checked_out.remote, "checkout", "-q", "--", "README.md")
    merged = remote.merge(checked_out.url, branch="prices", head_sha=head)
    assert checked_out.rev("HEAD") == merged.sha
    assert (checked_out.remote / "prices.py").read_text() == "MUG = 1600\nCUP = 900\n"
    assert git(checked_out.remote, "status", "--porcelain") == ""


# -- the post-receive hook --------------------------------------------------------------------------------------


NOTIFY = """import sys, pathlib
out = pathlib.Path(sys.argv[1])
out.write_text(out.read_text() + " ".join(sys.argv[2:]) + "\\n" if out.exists() else " ".join(sys.argv[2:]) + "\\n")
sys.exit(int(sys.argv[2]) if sys.argv[2].isdigit() else 0)
"""


def wait_for(path: Path, lines: int, seconds: float = 15.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and len(path.read_text().splitlines()) >= lines:
            return path.read_text().splitlines()
        time.sleep(0.05)
    raise AssertionError(f"{path} did not get {lines} lines: {path.read_text() if path.exists() else 'no file'}")


def test_the_hook_runs_the_command_for_every_pushed_branch(repos, tmp_path):
    script = tmp_path / "notify.py"
    script.write_text(NOTIFY)
    out = tmp_path / "notified.txt"
    hook = install_hook(repos.remote, [sys.executable, str(script), str(out), "notify pushed"])
    assert os.access(hook, os.X_OK)
    head = repos.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    assert wait_for(out, 1) == [f"notify pushed --branch prices --sha {head}"]
    git(repos.work, "tag", "v1")
    git(repos.work, "push", "-q", "origin", "v1")  # a tag is no branch
    git(repos.work, "push", "-q", "origin", "--delete", "prices")  # a deleted branch is not notified
    other = repos.change("other/change", {"x.py": "x\n"})
    assert wait_for(out, 2) == [f"notify pushed --branch prices --sha {head}",
                                f"notify pushed --branch other/change --sha {other}"]
    log = Path(git(repos.remote, "rev-parse", "--absolute-git-dir")) / "sanoma-hook.log"
    assert "other/change" in wait_for(log, 4)[-1]


def test_a_failing_command_never_fails_the_push_and_is_logged(bare, tmp_path):
    script = tmp_path / "notify.py"
    script.write_text(NOTIFY)
    install_hook(bare.remote, [sys.executable, str(script), str(tmp_path / "out.txt"), "3"])
    bare.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})  # pushes, and succeeds
    log = bare.remote / "sanoma-hook.log"
    assert wait_for(log, 2)[-1].endswith("exit status 3")


def test_an_existing_hook_is_chained_and_installing_again_changes_nothing_else(bare, tmp_path):
    hooks = bare.remote / "hooks"
    (hooks / "post-receive").write_text(f"#!/bin/sh\ncat > {tmp_path / 'before.txt'}\n")
    os.chmod(hooks / "post-receive", 0o755)
    script = tmp_path / "notify.py"
    script.write_text(NOTIFY)
    out = tmp_path / "notified.txt"
    install_hook(bare.remote, [sys.executable, str(script), str(out), "first"])
    install_hook(bare.remote, [sys.executable, str(script), str(out), "second"])  # replaces sanoma's, keeps theirs
    install_hook(bare.remote, [sys.executable, str(script), str(out), "second"])
    assert sorted(p.name for p in hooks.iterdir() if not p.name.endswith(".sample")) == [
        "post-receive", "post-receive.before-sanoma"]
    head = bare.change("prices", {"prices.py": "MUG = 1600\nCUP = 900\n"})
    assert wait_for(out, 1) == [f"second --branch prices --sha {head}"]
    assert (tmp_path / "before.txt").read_text().split()[1:] == [head, "refs/heads/prices"]


# -- the demo's repository -----------------------------------------------------------------------------------------


def test_init_embedded_makes_the_repository_and_its_remote_and_is_idempotent(tmp_path):
    root, origin = tmp_path / "company", tmp_path / "var" / "company.git"
    write(root, {"sanoma_config.py": "config = 1\n", "workflows/refund.py": "x = 1\n"})
    init_embedded(root, origin)
    head = git(root, "rev-parse", "main")
    assert git(root, "log", "--format=%s|%an").splitlines() == ["The example company|sanoma"]
    assert git(origin, "rev-parse", "--is-bare-repository") == "true"
    assert git(origin, "rev-parse", "main") == head
    assert git(root, "remote", "get-url", "origin") == str(origin)
    assert git(root, "status", "--porcelain") == ""
    init_embedded(root, origin)  # again: nothing changes
    assert git(root, "rev-parse", "main") == head == git(origin, "rev-parse", "main")
    assert len(git(root, "log", "--format=%H").splitlines()) == 1
    # a change merged into the remote and not pulled yet: the root is behind, which is fine; edits in it too
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    write(clone, {"new.py": "x\n"})
    git(clone, "add", "-A")
    git(clone, "commit", "-q", "-m", "new")
    git(clone, "push", "-q", "origin", "main")
    (root / "workflows" / "refund.py").write_text("x = 2\n")
    init_embedded(root, origin)
    assert git(root, "rev-parse", "main") == head
    # a commit made in the root is pushed only when that is a fast-forward: here the two have diverged
    git(root, "commit", "-q", "-am", "edit")
    err = fails(RemoteCode.NOT_MERGEABLE, init_embedded, root, origin)
    assert "diverged" in str(err)


def test_init_embedded_pushes_an_existing_repository_and_refuses_to_publish_uncommitted_changes(tmp_path):
    root, origin = tmp_path / "company", tmp_path / "company.git"
    write(root, {"a.py": "a\n"})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "mine")
    (root / "a.py").write_text("changed\n")
    err = fails(ErrorCode.INVALID_INPUT, init_embedded, root, origin)
    assert "a.py" in str(err) and "not committed" in str(err)
    git(root, "commit", "-q", "-am", "committed")
    init_embedded(root, origin)
    assert git(origin, "rev-parse", "main") == git(root, "rev-parse", "main")
    assert git(root, "log", "--format=%s").splitlines() == ["committed", "mine"]  # history kept as it was
    git(root, "remote", "set-url", "origin", "/elsewhere")
    init_embedded(root, origin)
    assert git(root, "remote", "get-url", "origin") == str(origin)


def test_a_merge_into_the_embedded_remote_end_to_end(tmp_path):
    """The demo's path: the company's tree, its bare remote, a user's branch pushed, the hook told, merged."""
    root, origin = tmp_path / "company", tmp_path / "company.git"
    write(root, {"prices.py": "MUG = 1500\n"})
    init_embedded(root, origin)
    script = tmp_path / "notify.py"
    script.write_text(NOTIFY)
    out = tmp_path / "notified.txt"
    GitRemote().install_hook(origin, [sys.executable, str(script), str(out), "notify"])
    clone = tmp_path / "mine"
    git(tmp_path, "clone", "-q", str(origin), str(clone))
    git(clone, "checkout", "-q", "-b", "cheaper-mugs")
    write(clone, {"prices.py": "MUG = 1200\n"})
    git(clone, "commit", "-q", "-am", "Cheaper mugs")
    git(clone, "push", "-q", "origin", "cheaper-mugs")
    head = git(clone, "rev-parse", "HEAD")
    assert wait_for(out, 1) == [f"notify --branch cheaper-mugs --sha {head}"]
    found = remote.resolve(f"file://{origin}", branch="cheaper-mugs")
    merged = remote.merge(f"file://{origin}", branch=found.branch, head_sha=found.sha, title="Cheaper mugs")
    assert merged.fast_forward and git(origin, "rev-parse", "main") == head
