"""The part of the local GitHub that holds real git repositories: what the change workflow's
GitHub remote (`changes.lifecycle.remotes.github`) calls, backed by bare repositories on disk (the
git CLI does every read, archive and merge).

Endpoints: `GET /repos/{o}/{r}/branches/{branch}`, `GET|POST /repos/{o}/{r}/pulls`,
`GET /repos/{o}/{r}/pulls/{n}`, `PUT /repos/{o}/{r}/pulls/{n}/merge`, `GET /repos/{o}/{r}/pulls/{n}/reviews`,
`GET /repos/{o}/{r}/commits/{sha}/check-runs`, `GET /repos/{o}/{r}/compare/{base}...{head}`, and
`GET /repos/{o}/{r}/tarball/{ref}`, which redirects (302) to a download URL on another host name
(`localhost`, as GitHub's goes to codeload) carrying a token of its own, like GitHub's.

As GitHub does: a pull request's head is where its branch points now; `mergeable` is worked out
with `git merge-tree` (an open one's `merge_commit_sha` is its test merge, as on GitHub); a merge
is made for real in a temporary clone (`git merge --no-ff`) and pushed into the bare repository; a
stale `sha` answers 409 "Head branch was modified", a conflict 405 "Pull Request is not
mergeable". The server (`github_server.GitHubServer`) checks the token and the limits first.
"""
from __future__ import annotations

import io
import os
import re
import secrets
import subprocess
import tempfile
import threading
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from connectors.http.vendor_server import Answer

DOCS = "https://docs.github.com/rest"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test Author", "GIT_AUTHOR_EMAIL": "author@example.com",
    "GIT_COMMITTER_NAME": "Test Author", "GIT_COMMITTER_EMAIL": "author@example.com",
    "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
}


def git(*args: str, cwd: Path | str | None = None, check: bool = True, env: dict[str, str] | None = None,
        text: bool = True) -> subprocess.CompletedProcess[Any]:
    """The git CLI with a fixed identity and no user or system config."""
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=text,
                          env={**os.environ, **GIT_ENV, **(env or {})})
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed ({done.returncode}): {done.stderr}")
    return done


class Repo:
    """A bare repository (what GitHub holds) and a working clone that commits and pushes to it."""

    def __init__(self, root: Path, files: dict[str, str], *, base: str = "main") -> None:
        self.bare = root / "origin.git"
        self.work = root / "work"
        self.base = base
        git("init", "-q", "--bare", "-b", base, str(self.bare))
        git("clone", "-q", str(self.bare), str(self.work))
        git("checkout", "-q", "-b", base, cwd=self.work)
        self.initial = self.commit(base, files, "The first commit", start=None)

    def commit(self, branch: str, files: Mapping[str, str | None], message: str = "A change", *,
               start: str | None = "main") -> str:
        """Commit `files` (None deletes one) on `branch` (made from `start` when new) and push it."""
        if start is not None:  # the branch as the bare repository has it (or new, from `start`)
            git("fetch", "-q", "--prune", "origin", cwd=self.work)
            known = git("rev-parse", "--verify", "-q", f"refs/remotes/origin/{branch}", cwd=self.work, check=False)
            git("checkout", "-q", "-B", branch, f"origin/{branch if known.returncode == 0 else start}", cwd=self.work)
        for name, content in files.items():
            path = self.work / name
            if content is None:
                git("rm", "-q", name, cwd=self.work)
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(content)
            git("add", name, cwd=self.work)
        git("commit", "-q", "-m", message, cwd=self.work)
        git("push", "-q", "origin", f"{branch}:refs/heads/{branch}", cwd=self.work)
        return self.sha(branch)

    def sha(self, ref: str) -> str:
        """Where `ref` points in the bare repository."""
        return git("rev-parse", f"refs/heads/{ref}^{{commit}}", cwd=self.bare).stdout.strip()

    def files_at(self, sha: str) -> dict[str, bytes]:
        names = git("ls-tree", "-r", "--name-only", "-z", sha, cwd=self.bare).stdout.split("\0")
        return {n: git("cat-file", "blob", f"{sha}:{n}", cwd=self.bare, text=False).stdout for n in names if n}


@dataclass
class Pull:
    number: int
    title: str
    body: str
    head: str
    base: str
    head_sha: str
    created_at: str
    state: str = "open"
    merged_at: str | None = None
    closed_at: str | None = None
    merge_commit_sha: str | None = None


@dataclass
class GitHubState:
    """Everything the local GitHub holds: the bare repositories and their pull requests, checks and
    reviews; the organization's repositories, protections and teams (`org`, the emulator's state);
    the faults to answer next."""

    repos: dict[str, Path]  # "owner/repo" (lower case) -> its bare repository
    token: str
    web_url: str
    download_host: str
    pulls: dict[str, list[Pull]] = field(default_factory=dict)
    check_runs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    download_tokens: set[str] = field(default_factory=set)
    tarball: bytes | None = None  # answered instead of the real archive (to test hostile ones)
    limited: int = 0
    limit_reset_in: float = 3.0
    failing: int = 0
    failing_status: int = 502
    checks_forbidden: bool = False  # check runs answer 403, as to a fine-grained token (no Checks permission)
    merge_refusal: str | None = None  # a branch protection's 405 message (required reviews, checks)
    before_merge: Callable[[], None] | None = None  # run once as the next merge request arrives (a race)
    secondary: tuple[int, int, int | None] = (0, 403, None)  # (times, status, Retry-After) of a secondary limit
    failing_method: str | None = None
    org: dict[str, Any] = field(default_factory=dict)  # the organization the connector manages (emulator)
    used: int = 0
    lock: threading.RLock = field(default_factory=threading.RLock)


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class GitRepos:
    """Answers the remote's endpoints from the bare repositories of `state`; `port()` is the server's."""

    def __init__(self, state: GitHubState, port: Callable[[], int]) -> None:
        self.gh = state
        self.port = port

    def _send(self, status: int, body: Any = None, headers: dict[str, str] | None = None,
              raw: bytes | None = None, content_type: str = "application/json; charset=utf-8") -> Answer:
        return Answer(status, body, {"Content-Type": content_type, **(headers or {})}, raw=raw)

    def _error(self, status: int, message: str, docs: str = DOCS, **extra: Any) -> Answer:
        return self._send(status, {"message": message, "documentation_url": docs, **extra})

    # --- routes ----------------------------------------------------------------------------------

    def route(self, method: str, path: str, query: dict[str, str], body: dict[str, Any]) -> Answer:
        """The answer to a request under `/repos/{owner}/{repo}/` for a bare repository."""
        matched = re.match(r"^/repos/([^/]+)/([^/]+)(/.*)$", path)
        if not matched:
            return self._error(404, "Not Found")
        owner, name, rest = urllib.parse.unquote(matched[1]), urllib.parse.unquote(matched[2]), matched[3]
        bare = self.gh.repos.get(f"{owner}/{name}".lower())
        if bare is None:
            return self._error(404, "Not Found", f"{DOCS}/repos/repos#get-a-repository")
        repo = _Git(bare, owner, name)
        routes: list[tuple[str, str, Any]] = [
            ("GET", r"/branches/(.+)", self._branch),
            ("GET", r"/pulls", self._list_pulls),
            ("POST", r"/pulls", self._create_pull),
            ("GET", r"/pulls/(\d+)", self._get_pull),
            ("PUT", r"/pulls/(\d+)/merge", self._merge),
            ("GET", r"/pulls/(\d+)/reviews", self._reviews),
            ("GET", r"/commits/([^/]+)/check-runs", self._check_runs),
            ("GET", r"/compare/(.+)", self._compare),
            ("GET", r"/tarball/(.+)", self._tarball),
        ]
        for verb, pattern, answer in routes:
            found = re.fullmatch(pattern, rest)
            if found and verb == method:
                return answer(repo, *map(urllib.parse.unquote, found.groups()), query=query, body=body)
        return self._error(404, "Not Found")

    def _branch(self, repo: _Git, branch: str, **_: Any) -> Answer:
        sha = repo.sha(f"refs/heads/{branch}")
        if sha is None:
            return self._error(404, "Branch not found", f"{DOCS}/branches/branches#get-a-branch")
        return self._send(200, {"name": branch, "protected": False,
                                "commit": {"sha": sha, "url": f"/repos/{repo.full_name}/commits/{sha}"},
                                "_links": {"html": f"{self.gh.web_url}/{repo.full_name}/tree/{branch}"}})

    def _list_pulls(self, repo: _Git, *, query: dict[str, str], **_: Any) -> Answer:
        state = query.get("state", "open")
        head = query.get("head")
        pulls = [p for p in reversed(self.gh.pulls.get(repo.key, []))  # newest first, as GitHub sorts them
                 if (state == "all" or p.state == state)
                 and (head is None or f"{repo.owner}:{p.head}".lower() == head.lower() or head == p.head)
                 and (query.get("base") is None or p.base == query["base"])]
        return self._send(200, [self._render(repo, p, full=False) for p in pulls])

    def _create_pull(self, repo: _Git, *, body: dict[str, Any], **_: Any) -> Answer:
        head, base, title = body.get("head"), body.get("base"), body.get("title")
        if not head or not base or not title:
            missing = [f for f in ("title", "head", "base") if not body.get(f)]
            return self._invalid([{"resource": "PullRequest", "field": f, "code": "missing_field"} for f in missing])
        branch = head.split(":", 1)[1] if ":" in head else head
        head_sha, base_sha = repo.sha(f"refs/heads/{branch}"), repo.sha(f"refs/heads/{base}")
        if head_sha is None or base_sha is None:
            field_ = "head" if head_sha is None else "base"
            return self._invalid([{"resource": "PullRequest", "field": field_, "code": "invalid"}])
        if any(p.state == "open" and p.head == branch and p.base == base for p in self.gh.pulls.get(repo.key, [])):
            return self._invalid([{"resource": "PullRequest", "code": "custom",
                                   "message": f"A pull request already exists for {repo.owner}:{branch}."}])
        if repo.count(f"{base_sha}..{head_sha}") == 0:
            return self._invalid([{"resource": "PullRequest", "code": "custom",
                                   "message": f"No commits between {base} and {branch}"}])
        pulls = self.gh.pulls.setdefault(repo.key, [])
        number = 1 + max((p.number for pulls_ in self.gh.pulls.values() for p in pulls_), default=0)
        pull = Pull(number=number, title=title, body=body.get("body") or "", head=branch, base=base,
                    head_sha=head_sha, created_at=now())
        pulls.append(pull)
        return self._send(201, self._render(repo, pull, full=True),
                          {"Location": f"/repos/{repo.full_name}/pulls/{number}"})

    def _invalid(self, errors: list[dict[str, Any]]) -> Answer:
        return self._error(422, "Validation Failed", f"{DOCS}/pulls/pulls#create-a-pull-request", errors=errors)

    def _get_pull(self, repo: _Git, number: str, **_: Any) -> Answer:
        pull = self._pull(repo, int(number))
        if pull is None:
            return self._error(404, "Not Found", f"{DOCS}/pulls/pulls#get-a-pull-request")
        return self._send(200, self._render(repo, pull, full=True))

    def _merge(self, repo: _Git, number: str, *, body: dict[str, Any], **_: Any) -> Answer:
        docs = f"{DOCS}/pulls/pulls#merge-a-pull-request"
        pull = self._pull(repo, int(number))
        if pull is None:
            return self._error(404, "Not Found", docs)
        if self.gh.before_merge is not None:
            hook, self.gh.before_merge = self.gh.before_merge, None
            hook()
        if pull.state != "open":
            return self._error(405, "Pull Request is not mergeable", docs)
        head_sha = self._head(repo, pull)
        if self.gh.merge_refusal:
            return self._error(405, self.gh.merge_refusal, docs)
        if body.get("sha") and body["sha"] != head_sha:
            return self._error(409, "Head branch was modified. Review and try the merge again.", docs)
        method = body.get("merge_method", "merge")
        if method != "merge":
            return self._error(405, f"Merge method {method} is not allowed on this repository (only merge here)", docs)
        base_sha = repo.sha(f"refs/heads/{pull.base}")
        if base_sha is None or repo.test_merge(base_sha, head_sha) is None:
            return self._error(405, "Pull Request is not mergeable", docs)
        title = body.get("commit_title") or f"Merge pull request #{pull.number} from {repo.owner}/{pull.head}"
        message = body.get("commit_message") or pull.title
        merged = repo.merge(pull.base, base_sha, head_sha, f"{title}\n\n{message}")
        if merged is None:
            return self._error(405, "Base branch was modified. Review and try the merge again.", docs)
        pull.state, pull.merged_at, pull.closed_at = "closed", now(), now()
        pull.merge_commit_sha, pull.head_sha = merged, head_sha
        return self._send(200, {"sha": merged, "merged": True, "message": "Pull Request successfully merged"})

    def _reviews(self, repo: _Git, number: str, **_: Any) -> Answer:
        if self._pull(repo, int(number)) is None:
            return self._error(404, "Not Found")
        return self._send(200, self.gh.reviews.get(int(number), []))

    def _check_runs(self, repo: _Git, ref: str, **_: Any) -> Answer:
        if self.gh.checks_forbidden:
            return self._error(403, "Resource not accessible by personal access token",
                               f"{DOCS}/checks/runs#list-check-runs-for-a-git-reference")
        sha = repo.sha(ref)
        if sha is None:
            return self._error(422, f"No commit found for SHA: {ref}")
        runs = self.gh.check_runs.get(sha, [])
        return self._send(200, {"total_count": len(runs), "check_runs": runs})

    def _compare(self, repo: _Git, basehead: str, **_: Any) -> Answer:
        if "..." not in basehead:
            return self._error(404, "Not Found")
        base_ref, head_ref = basehead.split("...", 1)
        base, head = repo.sha(base_ref), repo.sha(head_ref)
        if base is None or head is None:
            return self._error(404, "Not Found", f"{DOCS}/commits/commits#compare-two-commits")
        parted = repo.run("merge-base", base, head).stdout.strip()
        ahead, behind = repo.count(f"{base}..{head}"), repo.count(f"{head}..{base}")
        status = ("identical" if ahead == behind == 0 else "ahead" if behind == 0 else "behind" if ahead == 0
                  else "diverged")
        files = []
        counts = {}
        for line in repo.run("diff", "--numstat", "-M", parted, head).stdout.splitlines():
            added, removed, name = line.split("\t", 2)
            counts[name.split(" => ")[-1]] = (int(added) if added.isdigit() else 0,
                                              int(removed) if removed.isdigit() else 0)
        for line in repo.run("diff", "--name-status", "-M", parted, head).stdout.splitlines():
            kind, *names = line.split("\t")
            added, removed = counts.get(names[-1], (0, 0))
            # As GitHub: each file's own hunks (no `diff --git` header), its line counts.
            patch = repo.run("diff", "--no-color", "-M", parted, head, "--", *names).stdout
            hunks = patch[patch.find("@@"):] if "@@" in patch else ""
            files.append({"filename": names[-1], "status": {"A": "added", "D": "removed", "M": "modified"}.get(
                kind[0], "renamed" if kind[0] == "R" else "changed"), "additions": added, "deletions": removed,
                "changes": added + removed, **({"patch": hunks.rstrip("\n")} if hunks else {}),
                **({"previous_filename": names[0]} if kind[0] == "R" else {})})
        return self._send(200, {"status": status, "ahead_by": ahead, "behind_by": behind, "total_commits": ahead,
                                "base_commit": {"sha": base}, "merge_base_commit": {"sha": parted}, "files": files})

    def _tarball(self, repo: _Git, ref: str, **_: Any) -> Answer:
        sha = repo.sha(ref)
        if sha is None:
            return self._error(404, "Not Found", f"{DOCS}/repos/contents#download-a-repository-archive-tar")
        token = secrets.token_urlsafe(12)
        self.gh.download_tokens.add(token)
        port = self.port()
        where = (f"http://{self.gh.download_host}:{port}/_codeload/{repo.owner}/{repo.name}/legacy.tar.gz/{sha}"
                 f"?token={token}")
        return self._send(302, None, {"Location": where})

    def download(self, owner: str, name: str, sha: str, *, query: str) -> Answer:
        token = dict(urllib.parse.parse_qsl(query)).get("token")
        bare = self.gh.repos.get(f"{owner}/{name}".lower())
        if token not in self.gh.download_tokens or bare is None:
            return self._send(404, raw=b"404: Not Found", content_type="text/plain")
        if self.gh.tarball is not None:
            return self._send(200, raw=self.gh.tarball, content_type="application/x-gzip")
        repo = _Git(bare, owner, name)
        archive = repo.run("archive", "--format=tar.gz", f"--prefix={owner}-{name}-{sha[:7]}/", sha, text=False)
        return self._send(200, raw=archive.stdout, content_type="application/x-gzip",
                          headers={"Content-Disposition": f"attachment; filename={owner}-{name}-{sha[:7]}.tar.gz"})

    # --- pull requests ---------------------------------------------------------------------------

    def _pull(self, repo: _Git, number: int) -> Pull | None:
        return next((p for p in self.gh.pulls.get(repo.key, []) if p.number == number), None)

    def _head(self, repo: _Git, pull: Pull) -> str:
        """An open pull request's head follows its branch, as GitHub's does after a push."""
        if pull.state == "open":
            pull.head_sha = repo.sha(f"refs/heads/{pull.head}") or pull.head_sha
        return pull.head_sha

    def _render(self, repo: _Git, pull: Pull, *, full: bool) -> dict[str, Any]:
        head_sha = self._head(repo, pull)
        base_sha = repo.sha(f"refs/heads/{pull.base}") or ""
        web = f"{self.gh.web_url}/{repo.full_name}"
        test_merge = repo.test_merge(base_sha, head_sha) if pull.state == "open" and base_sha else None
        side = {"full_name": repo.full_name, "name": repo.name, "owner": {"login": repo.owner}}
        rendered: dict[str, Any] = {
            "url": f"/repos/{repo.full_name}/pulls/{pull.number}", "id": 1000 + pull.number, "number": pull.number,
            "state": pull.state, "locked": False, "title": pull.title, "body": pull.body,
            "user": {"login": "sanoma-bot"}, "html_url": f"{web}/pull/{pull.number}",
            "created_at": pull.created_at, "updated_at": pull.closed_at or pull.created_at,
            "closed_at": pull.closed_at, "merged_at": pull.merged_at,
            "merge_commit_sha": pull.merge_commit_sha if pull.state != "open" else test_merge,
            "head": {"label": f"{repo.owner}:{pull.head}", "ref": pull.head, "sha": head_sha, "repo": side},
            "base": {"label": f"{repo.owner}:{pull.base}", "ref": pull.base, "sha": base_sha, "repo": side},
            "draft": False,
        }
        if full:
            mergeable = None if pull.state != "open" else test_merge is not None
            rendered.update({"merged": pull.merged_at is not None, "mergeable": mergeable,
                             "mergeable_state": {None: "unknown", True: "clean", False: "dirty"}[mergeable],
                             "commits": repo.count(f"{base_sha}..{head_sha}") if base_sha else 0})
        return rendered


class _Git:
    """One bare repository, read and merged with the git CLI."""

    def __init__(self, bare: Path, owner: str, name: str) -> None:
        self.bare, self.owner, self.name = bare, owner, name
        self.full_name = f"{owner}/{name}"
        self.key = self.full_name.lower()

    def run(self, *args: str, check: bool = True, text: bool = True) -> subprocess.CompletedProcess[Any]:
        return git(*args, cwd=self.bare, check=check, text=text)

    def sha(self, ref: str) -> str | None:
        found = self.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
        return found.stdout.strip() if found.returncode == 0 else None

    def count(self, span: str) -> int:
        return int(self.run("rev-list", "--count", span).stdout.strip())

    def test_merge(self, base: str, head: str) -> str | None:
        """GitHub's test merge of the two (a commit nothing points to), or None when they conflict."""
        tree = self.run("merge-tree", "--write-tree", base, head, check=False)
        if tree.returncode != 0:
            return None
        oid = tree.stdout.split("\n", 1)[0].strip()
        return self.run("commit-tree", oid, "-p", base, "-p", head, "-m", "test merge").stdout.strip()

    def merge(self, base: str, base_sha: str, head_sha: str, message: str) -> str | None:
        """Merge `head_sha` into `base` in a temporary clone and push it; None when `base` moved meanwhile."""
        with tempfile.TemporaryDirectory(prefix="github-merge-") as scratch:
            work = Path(scratch) / "work"
            git("clone", "-q", "--shared", "--no-checkout", str(self.bare), str(work))
            git("checkout", "-q", "--detach", base_sha, cwd=work)
            git("merge", "-q", "--no-ff", "--no-edit", "-m", message, head_sha, cwd=work)
            merged = git("rev-parse", "HEAD", cwd=work).stdout.strip()
            pushed = git("push", "-q", f"--force-with-lease=refs/heads/{base}:{base_sha}", "origin",
                         f"HEAD:refs/heads/{base}", cwd=work, check=False)
            return merged if pushed.returncode == 0 else None


def tar_gz(members: list[tuple[str, str, str]]) -> bytes:
    """A .tar.gz of (kind, name, content-or-link-target) members, kind `file`, `dir`, `symlink` or `hardlink`."""
    import tarfile

    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w:gz") as tar:
        for kind, name, content in members:
            info = tarfile.TarInfo(name)
            if kind == "file":
                data = content.encode()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
                continue
            info.type = {"dir": tarfile.DIRTYPE, "symlink": tarfile.SYMTYPE, "hardlink": tarfile.LNKTYPE}[kind]
            if kind == "dir":
                info.mode = 0o755
            else:
                info.linkname = content
            tar.addfile(info)
    return out.getvalue()
