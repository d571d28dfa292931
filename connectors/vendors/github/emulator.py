"""GitHub's REST API (version 2022-11-28) answered from a JSON state: the part of it the `github`
connector calls, as GitHub documents it. The fake (`fake.py`) runs the real driver against it in
memory, and the local test server (`tests/github_server.py`) serves it over HTTP, so both answer
as GitHub does: the same status codes, the same error bodies (`{message, documentation_url,
errors}`), pages with `Link` headers, and GitHub's idempotency (a PUT sets, a repeated repository
create is refused 422 "name already exists on this account").

The state is one organization's (`initial_state(org)`): its repositories (by lower-cased name, in
GitHub's shape), their branches, their branches' protections (in GitHub's shape), its teams with
their memberships, and its members. Every function here edits the state in place.
"""
from __future__ import annotations

import re
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

DOCS = "https://docs.github.com/rest"
NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
PROTECTION_KEYS = ("required_status_checks", "enforce_admins", "required_pull_request_reviews", "restrictions")
FLAGS = ("required_linear_history", "allow_force_pushes", "allow_deletions", "required_conversation_resolution")
REPO_SETTINGS = ("description", "homepage", "has_issues", "has_wiki", "has_projects", "allow_merge_commit",
                 "allow_squash_merge", "allow_rebase_merge", "delete_branch_on_merge", "archived")


@dataclass
class Reply:
    """GitHub's answer: a status, a JSON body (None: empty) and headers."""

    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


def initial_state(org: str = "acme", *, teams: Mapping[str, str] | None = None,
                  members: list[str] | None = None) -> dict[str, Any]:
    """An organization with no repositories, the teams given (slug -> name) and its members."""
    given = dict(teams if teams is not None else {"developers": "Developers", "security": "Security"})
    return {"org": org, "repos": {}, "branches": {}, "protections": {},
            "teams": {slug: {"name": name, "memberships": {}} for slug, name in given.items()},
            "members": list(members if members is not None else []), "renamed": {}, "next_id": 1000}


def error(status: int, message: str, docs: str = DOCS, errors: list[dict[str, Any]] | None = None) -> Reply:
    body: dict[str, Any] = {"message": message, "documentation_url": docs}
    if errors:
        body["errors"] = errors
    return Reply(status, body)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


Route = Callable[..., Reply]

# The endpoints answered: (method, path with {parameters}, the method of `GitHub` answering it).
ROUTES: list[tuple[str, str, str]] = [
    ("GET", "/orgs/{org}/repos", "list_repos"),
    ("POST", "/orgs/{org}/repos", "create_repo"),
    ("GET", "/repos/{owner}/{repo}", "get_repo"),
    ("GET", "/repositories/{repository_id}", "get_repo_by_id"),
    ("PATCH", "/repos/{owner}/{repo}", "update_repo"),
    ("DELETE", "/repos/{owner}/{repo}", "delete_repo"),
    ("GET", "/repos/{owner}/{repo}/branches/{branch}/protection", "get_protection"),
    ("PUT", "/repos/{owner}/{repo}/branches/{branch}/protection", "put_protection"),
    ("DELETE", "/repos/{owner}/{repo}/branches/{branch}/protection", "delete_protection"),
    ("GET", "/orgs/{org}/teams/{team}/members", "list_members"),
    ("GET", "/orgs/{org}/teams/{team}/memberships/{username}", "get_membership"),
    ("PUT", "/orgs/{org}/teams/{team}/memberships/{username}", "put_membership"),
    ("DELETE", "/orgs/{org}/teams/{team}/memberships/{username}", "delete_membership"),
]


class GitHub:
    """One organization's GitHub, answering requests from `state` (see the module's docstring);
    `base` is the API's root URL, as links and `url` fields carry it."""

    def __init__(self, state: dict[str, Any], *, base: str = "https://api.github.com") -> None:
        self.state = state
        self.base = base.rstrip("/")
        self.routes: list[tuple[str, re.Pattern[str], Route]] = [
            (method, re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", pattern) + "$"), getattr(self, name))
            for method, pattern, name in ROUTES]

    def answer(self, method: str, path: str, query: Mapping[str, str], body: Any) -> Reply:
        """GitHub's answer to one request (authorization and rate limits are the server's part)."""
        for verb, regex, route in self.routes:
            matched = regex.match(path)
            if matched and verb == method.upper():
                params = {k: urllib.parse.unquote(v) for k, v in matched.groupdict().items()}
                owner = params.get("org", params.get("owner"))
                if owner is not None and owner.lower() != self.state["org"].lower():
                    return error(404, "Not Found")
                params.pop("org", None)
                params.pop("owner", None)
                if method.upper() in ("POST", "PATCH", "PUT") and body is not None and not isinstance(body, dict):
                    return error(400, "Problems parsing JSON")
                return route(query=query, body=body or {}, **params)
        return error(404, "Not Found")

    # --- repositories -------------------------------------------------------------------------------

    def _repo(self, name: str) -> dict[str, Any] | None:
        return self.state["repos"].get(name.lower())

    def list_repos(self, *, query: Mapping[str, str], **_: Any) -> Reply:
        kind = query.get("type", "all")
        # GitHub's order: by creation unless `sort=full_name` (then by name)
        by_name = query.get("sort") == "full_name"
        repos = sorted(self.state["repos"].values(), key=lambda r: r["name"].lower() if by_name else r["id"])
        if kind in ("public", "private", "internal"):
            repos = [r for r in repos if r["visibility"] == kind]
        return self.page(f"/orgs/{self.state['org']}/repos", repos, query)

    def create_repo(self, *, body: dict[str, Any], **_: Any) -> Reply:
        docs = f"{DOCS}/repos/repos#create-an-organization-repository"
        name = body.get("name")
        if not isinstance(name, str) or not name:
            return error(422, "Repository creation failed.", docs,
                         [{"resource": "Repository", "code": "missing_field", "field": "name"}])
        if not NAME.match(name) or name in (".", ".."):
            return error(422, "Repository creation failed.", docs,
                         [{"resource": "Repository", "code": "custom", "field": "name",
                           "message": "name is invalid: use letters, digits, '.', '-' and '_'"}])
        if self._repo(name) is not None:
            return error(422, "Repository creation failed.", docs,
                         [{"resource": "Repository", "code": "custom", "field": "name",
                           "message": "name already exists on this account"}])
        visibility = body.get("visibility") or ("private" if body.get("private") else "public")
        if visibility not in ("public", "private", "internal"):
            return error(422, "Validation Failed", docs,
                         [{"resource": "Repository", "code": "invalid", "field": "visibility"}])
        self.state["next_id"] += 1
        org = self.state["org"]
        repo = {"id": self.state["next_id"], "node_id": f"R_{self.state['next_id']}", "name": name,
                "full_name": f"{org}/{name}", "owner": {"login": org, "type": "Organization"},
                "private": visibility != "public", "visibility": visibility,
                "html_url": f"https://github.com/{org}/{name}", "url": f"{self.base}/repos/{org}/{name}",
                "description": None, "homepage": None, "has_issues": True, "has_wiki": True, "has_projects": True,
                "allow_merge_commit": True, "allow_squash_merge": True, "allow_rebase_merge": True,
                "delete_branch_on_merge": False, "archived": False,
                "default_branch": "main", "created_at": _now(), "updated_at": _now()}
        for key in REPO_SETTINGS:
            if key in body and key != "archived":
                repo[key] = body[key]
        self.state["repos"][name.lower()] = repo
        self.state.get("renamed", {}).pop(name.lower(), None)  # the old name is taken again: no redirect
        # An empty repository has no branch; auto_init makes its first commit on `main`.
        self.state["branches"][name.lower()] = ["main"] if body.get("auto_init") else []
        return Reply(201, dict(repo), {"Location": repo["url"]})

    def get_repo(self, *, repo: str, **_: Any) -> Reply:
        found = self._repo(repo)
        if found is None:
            moved = self.state.get("renamed", {}).get(repo.lower())
            if moved is not None:  # a renamed repository's old name redirects to it
                url = f"{self.base}/repositories/{moved}"
                return Reply(301, {"message": "Moved Permanently", "url": url,
                                   "documentation_url": f"{DOCS}/repos/repos#get-a-repository"}, {"Location": url})
            return error(404, "Not Found", f"{DOCS}/repos/repos#get-a-repository")
        return Reply(200, dict(found))

    def get_repo_by_id(self, *, repository_id: str, **_: Any) -> Reply:
        found = next((r for r in self.state["repos"].values() if str(r["id"]) == repository_id), None)
        if found is None:
            return error(404, "Not Found", f"{DOCS}/repos/repos#get-a-repository")
        return Reply(200, dict(found))

    def update_repo(self, *, repo: str, body: dict[str, Any], **_: Any) -> Reply:
        docs = f"{DOCS}/repos/repos#update-a-repository"
        found = self._repo(repo)
        if found is None:
            return error(404, "Not Found", docs)
        if "visibility" in body and body["visibility"] not in ("public", "private", "internal"):
            return error(422, "Validation Failed", docs,
                         [{"resource": "Repository", "code": "invalid", "field": "visibility"}])
        if "default_branch" in body and body["default_branch"] not in self.state["branches"][repo.lower()]:
            return error(422, "Validation Failed", docs,
                         [{"resource": "Repository", "code": "invalid", "field": "default_branch",
                           "message": f"Cannot update default branch for this repository to "
                                      f"{body['default_branch']}"}])
        new_name = body.get("name")
        if new_name and new_name.lower() != repo.lower():
            if self._repo(new_name) is not None:
                return error(422, "Validation Failed", docs,
                             [{"resource": "Repository", "code": "custom", "field": "name",
                               "message": "name already exists on this account"}])
            self.state.setdefault("renamed", {})[repo.lower()] = found["id"]
            self.state["repos"][new_name.lower()] = self.state["repos"].pop(repo.lower())
            self.state["branches"][new_name.lower()] = self.state["branches"].pop(repo.lower())
            for key in [k for k in self.state["protections"] if k.startswith(repo.lower() + ":")]:
                self.state["protections"][new_name.lower() + key[len(repo):]] = self.state["protections"].pop(key)
            found["name"], found["full_name"] = new_name, f"{self.state['org']}/{new_name}"
        for key in (*REPO_SETTINGS, "default_branch"):
            if key in body:
                found[key] = body[key]
        if "visibility" in body:
            found["visibility"], found["private"] = body["visibility"], body["visibility"] != "public"
        found["updated_at"] = _now()
        return Reply(200, dict(found))

    def delete_repo(self, *, repo: str, **_: Any) -> Reply:
        if self._repo(repo) is None:
            return error(404, "Not Found", f"{DOCS}/repos/repos#delete-a-repository")
        gone = self.state["repos"].pop(repo.lower())
        self.state["renamed"] = {k: v for k, v in self.state.get("renamed", {}).items() if v != gone["id"]}
        self.state["branches"].pop(repo.lower(), None)
        for key in [k for k in self.state["protections"] if k.startswith(repo.lower() + ":")]:
            del self.state["protections"][key]
        return Reply(204)

    # --- branch protection ------------------------------------------------------------------------

    def _branch(self, repo: str, branch: str, docs: str) -> Reply | None:
        """The 404 GitHub answers when the repository or the branch is not there; None when both are."""
        if self._repo(repo) is None:
            return error(404, "Not Found", docs)
        if branch not in self.state["branches"].get(repo.lower(), []):
            return error(404, "Branch not found", docs)
        return None

    def get_protection(self, *, repo: str, branch: str, **_: Any) -> Reply:
        docs = f"{DOCS}/branches/branch-protection#get-branch-protection"
        missing = self._branch(repo, branch, docs)
        if missing is not None:
            return missing
        found = self.state["protections"].get(f"{repo.lower()}:{branch}")
        if found is None:
            return error(404, "Branch not protected", docs)
        return Reply(200, found)

    def put_protection(self, *, repo: str, branch: str, body: dict[str, Any], **_: Any) -> Reply:
        docs = f"{DOCS}/branches/branch-protection#update-branch-protection"
        missing = self._branch(repo, branch, docs)
        if missing is not None:
            return missing
        for key in PROTECTION_KEYS:
            if key not in body:
                return error(422, f"Invalid request.\n\n\"{key}\" wasn't supplied.", docs)
        reviews = body["required_pull_request_reviews"]
        if reviews is not None:
            count = reviews.get("required_approving_review_count", 1)
            if not isinstance(count, int) or isinstance(count, bool) or not 0 <= count <= 6:
                return error(422, "Invalid request.\n\nrequired_approving_review_count must be between 0 and 6.",
                             docs)
        held = self._repo(repo)
        assert held is not None  # `_branch` answered 404 otherwise
        url = f"{self.base}/repos/{self.state['org']}/{held['name']}/branches/{branch}/protection"
        checks = body["required_status_checks"]
        shown: dict[str, Any] = {"url": url}
        if checks is not None:
            contexts = list(checks.get("contexts") or [c.get("context") for c in checks.get("checks") or []])
            shown["required_status_checks"] = {"url": f"{url}/required_status_checks",
                                               "strict": bool(checks.get("strict")), "contexts": contexts,
                                               "checks": [{"context": c, "app_id": None} for c in contexts]}
        if reviews is not None:
            shown["required_pull_request_reviews"] = {
                "url": f"{url}/required_pull_request_reviews",
                "dismiss_stale_reviews": bool(reviews.get("dismiss_stale_reviews")),
                "require_code_owner_reviews": bool(reviews.get("require_code_owner_reviews")),
                "required_approving_review_count": reviews.get("required_approving_review_count", 1),
                "require_last_push_approval": bool(reviews.get("require_last_push_approval"))}
        shown["enforce_admins"] = {"url": f"{url}/enforce_admins", "enabled": bool(body["enforce_admins"])}
        for flag in FLAGS:
            shown[flag] = {"enabled": bool(body.get(flag))}
        restrictions = body["restrictions"]
        if restrictions is not None:
            shown["restrictions"] = {"users": [{"login": u} for u in restrictions.get("users") or []],
                                     "teams": [{"slug": t} for t in restrictions.get("teams") or []],
                                     "apps": [{"slug": a} for a in restrictions.get("apps") or []]}
        self.state["protections"][f"{repo.lower()}:{branch}"] = shown
        return Reply(200, shown)

    def delete_protection(self, *, repo: str, branch: str, **_: Any) -> Reply:
        docs = f"{DOCS}/branches/branch-protection#delete-branch-protection"
        missing = self._branch(repo, branch, docs)
        if missing is not None:
            return missing
        if self.state["protections"].pop(f"{repo.lower()}:{branch}", None) is None:
            return error(404, "Branch not protected", docs)
        return Reply(204)

    # --- teams --------------------------------------------------------------------------------------

    def list_members(self, *, team: str, query: Mapping[str, str], **_: Any) -> Reply:
        found = self.state["teams"].get(team)
        if found is None:
            return error(404, "Not Found", f"{DOCS}/teams/members#list-team-members")
        role = query.get("role", "all")
        members = [{"login": login, "type": "User"} for login, held in sorted(found["memberships"].items())
                   if held["state"] == "active" and role in ("all", held["role"])]
        return self.page(f"/orgs/{self.state['org']}/teams/{team}/members", members, query)

    def _membership(self, team: str, username: str) -> dict[str, Any] | None:
        found = self.state["teams"].get(team)
        return None if found is None else found["memberships"].get(username.lower())

    def _shown(self, team: str, username: str, held: Mapping[str, Any]) -> dict[str, Any]:
        return {"url": f"{self.base}/orgs/{self.state['org']}/teams/{team}/memberships/{username}",
                "role": held["role"], "state": held["state"]}

    def get_membership(self, *, team: str, username: str, **_: Any) -> Reply:
        held = self._membership(team, username)
        if held is None:
            return error(404, "Not Found", f"{DOCS}/teams/members#get-team-membership-for-a-user")
        return Reply(200, self._shown(team, username, held))

    def put_membership(self, *, team: str, username: str, body: dict[str, Any], **_: Any) -> Reply:
        docs = f"{DOCS}/teams/members#add-or-update-team-membership-for-a-user"
        found = self.state["teams"].get(team)
        if found is None:
            return error(404, "Not Found", docs)
        role = body.get("role", "member")
        if role not in ("member", "maintainer"):
            return error(422, "Validation Failed", docs,
                         [{"resource": "TeamMember", "code": "invalid", "field": "role"}])
        key = username.lower()
        held = found["memberships"].get(key)
        # Someone not yet in the organization is invited: pending until they accept.
        state = held["state"] if held else ("active" if key in {m.lower() for m in self.state["members"]}
                                            else "pending")
        found["memberships"][key] = {"role": role, "state": state}
        return Reply(200, self._shown(team, username, found["memberships"][key]))

    def delete_membership(self, *, team: str, username: str, **_: Any) -> Reply:
        found = self.state["teams"].get(team)
        if found is None or found["memberships"].pop(username.lower(), None) is None:
            return error(404, "Not Found", f"{DOCS}/teams/members#remove-team-membership-for-a-user")
        return Reply(204)

    # --- pages ----------------------------------------------------------------------------------------

    def page(self, path: str, items: list[Any], query: Mapping[str, str]) -> Reply:
        """One page of `items` (`per_page`, at most 100, default 30; `page` from 1), with GitHub's
        `Link` header naming the next, last, first and previous pages."""
        try:
            per_page = max(1, min(100, int(query.get("per_page", 30))))
            number = max(1, int(query.get("page", 1)))
        except ValueError:
            return error(400, "Invalid page or per_page")
        last = max(1, -(-len(items) // per_page))
        chunk = items[(number - 1) * per_page:number * per_page]
        rest = {k: v for k, v in query.items() if k not in ("page", "per_page")}

        def link(page: int, rel: str) -> str:
            where = urllib.parse.urlencode({**rest, "per_page": per_page, "page": page})
            return f'<{self.base}{path}?{where}>; rel="{rel}"'

        links = []
        if number < last:
            links += [link(number + 1, "next"), link(last, "last")]
        if number > 1:
            links += [link(1, "first"), link(number - 1, "prev")]
        return Reply(200, chunk, {"Link": ", ".join(links)} if links else {})


__all__ = ["DOCS", "ROUTES", "GitHub", "Reply", "error", "initial_state"]
