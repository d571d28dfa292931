"""The `github` connector's driver: GitHub's REST API through the shared client
(`connectors.vendors.github.api`), with the token, the organization and the API's URL read from
the call's credentials (`GITHUB_TOKEN`, `GITHUB_ORG`, `GITHUB_API_URL`) at every call.

The operations are written once against a `Session` (a client and the organization): the driver
gives them GitHub over HTTP, the fake (`fake.py`) GitHub emulated in memory.

How GitHub behaves, and what each operation makes of it:

- A read of something GitHub does not have (404) is `gone`, never an error.
- Branch protections and team memberships are set with PUT, which GitHub applies idempotently:
  creating one that is there already sets it again.
- A repository create (POST) is not idempotent: a second one answers 422 "name already exists on
  this account". Create reads that as the repository it made when the one GitHub holds matches
  every declared field (a create whose reply was lost, tried again), and as a refusal otherwise:
  a repository someone else made is never taken over silently.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connectors.drivers import CallContext, define_driver
from connectors.errors import DriverError
from connectors.http import require_secrets
from connectors.vendors.github.api import PUBLIC_API, GitHubClient, GitHubHTTP, quote
from connectors.vendors.github.connector import github
from connectors.vendors.github.resources import (
    PROTECTION_FLAGS,
    BranchProtectionFields,
    branch_protection,
    repository,
    team_membership,
)


@dataclass(frozen=True)
class Session:
    """GitHub as one call sees it: the client, the organization, and the call's context (its deadline)."""

    client: GitHubClient
    org: str
    context: CallContext | None = None

    def call(self, method: str, path: str, *, json: Any = None) -> Any:
        return self.client.call(method, path, json=json, context=self.context)

    def items(self, path: str, query: Mapping[str, Any] | None = None) -> list[Any]:
        return self.client.items(path, query, context=self.context)


def gone(id: str) -> dict[str, Any]:
    return {"id": id, "gone": True}


def _found(session: Session, path: str) -> Any | None:
    """GitHub's answer to a read, or None when it answers 404."""
    try:
        return session.call("GET", path)
    except DriverError as err:
        if err.status == 404:
            return None
        raise


def _deleted(session: Session, path: str, id: str) -> dict[str, Any]:
    try:
        session.call("DELETE", path)
    except DriverError as err:
        if err.status != 404:  # gone already: the same
            raise
    return gone(id)


# --- repositories -----------------------------------------------------------------------------------


def _repo_path(session: Session, name: str) -> str:
    return f"/repos/{quote(session.org)}/{quote(name)}"


def _repo_observed(id: str, repo: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": id, "handle": str(repo["id"]), "values": dict(repo)}


def read_repository(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    repo = _found(session, _repo_path(session, i.id))
    if repo is None or str(repo.get("name", "")).lower() != i.id.lower():
        # None there; or it was renamed (GitHub redirects the old name to it): the name is free
        # again, and the renamed repository is not the declared one any more.
        return gone(i.id)
    if getattr(i, "handle", None) and str(repo["id"]) != i.handle:
        return gone(i.id)  # another repository made under its name since
    return _repo_observed(i.id, repo)


def create_repository(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    desired = dict(i.desired)
    name = repository.import_id(desired)
    # A new repository is private unless declared otherwise, and starts with a first commit on its
    # default branch, so that branch can be protected at once.
    body = {"visibility": "private", **desired, "auto_init": True}
    try:
        made = session.call("POST", f"/orgs/{quote(session.org)}/repos", json=body)
    except DriverError as err:
        if err.status != 422 or "already exists" not in err.message:
            raise
        held = _found(session, _repo_path(session, name))
        if held is None:
            raise
        differ = repository.diff(desired, repository.observed(held))
        if differ:
            fields = ", ".join(f"{d.field}: {d.actual!r}, not {d.desired!r}" for d in differ)
            raise DriverError(f"GitHub already has a repository {session.org}/{name}, and it is not the one "
                              f"declared ({fields}): it was made otherwise, so it is left alone; rename the "
                              f"declared one, or declare it as it is", status=422, retryable=False) from None
        return _repo_observed(name, held)  # this create's own repository, its first reply lost
    return _repo_observed(name, made)


def update_repository(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return _repo_observed(i.id, session.call("PATCH", _repo_path(session, i.id), json=dict(i.changes)))


def delete_repository(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return _deleted(session, _repo_path(session, i.id), i.id)


def list_repositories(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    repos = session.items(f"/orgs/{quote(session.org)}/repos", {"type": i.type})
    return {"repositories": [{"name": r["name"], "visibility": r.get("visibility") or (
        "private" if r.get("private") else "public"), "archived": bool(r.get("archived")),
        "html_url": r.get("html_url") or ""} for r in repos]}


# --- branch protection ------------------------------------------------------------------------------


def _protection_path(session: Session, id: str) -> str:
    repo, _, branch = id.partition(":")
    return f"{_repo_path(session, repo)}/branches/{quote(branch, safe='')}/protection"


def _protection_observed(id: str, shown: Mapping[str, Any]) -> dict[str, Any]:
    repo, _, branch = id.partition(":")
    return {"id": id, "handle": id, "values": {**shown, "repository": repo, "pattern": branch}}


def protection_body(values: Mapping[str, Any], restrictions: Any = None) -> dict[str, Any]:
    """The body of GitHub's PUT from every declared field (the whole protection: PUT replaces it)."""
    count = values["required_approving_review_count"]
    checks = list(values["required_status_checks"])
    return {
        "required_status_checks": ({"strict": values["strict_status_checks"],
                                    "checks": [{"context": name} for name in checks]}
                                   if checks or values["strict_status_checks"] else None),
        "enforce_admins": values["enforce_admins"],
        "required_pull_request_reviews": None if count is None else {
            "dismiss_stale_reviews": values["dismiss_stale_reviews"],
            "require_code_owner_reviews": values["require_code_owner_reviews"],
            "require_last_push_approval": values["require_last_push_approval"],
            "required_approving_review_count": count},
        "restrictions": restrictions,
        **{flag: values[flag] for flag in PROTECTION_FLAGS},
    }


def _restrictions(shown: Mapping[str, Any]) -> dict[str, list[str]] | None:
    """Who may push, as GitHub shows it, in the shape its PUT takes (kept as it is: not declared here)."""
    held = shown.get("restrictions")
    if not held:
        return None
    return {"users": [u["login"] for u in held.get("users") or []],
            "teams": [t["slug"] for t in held.get("teams") or []],
            "apps": [a["slug"] for a in held.get("apps") or []]}


def read_protection(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    shown = _found(session, _protection_path(session, i.id))  # 404: no repository, branch or protection
    return gone(i.id) if shown is None else _protection_observed(i.id, shown)


def create_protection(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    id = branch_protection.import_id(i.desired)
    values = BranchProtectionFields.model_validate(i.desired).model_dump()
    shown = session.call("PUT", _protection_path(session, id), json=protection_body(values))
    return _protection_observed(id, shown)


def update_protection(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    """The protection as GitHub holds it, with the declared fields over it (a field not declared
    keeps GitHub's value, and so do the push restrictions), PUT whole."""
    held = _found(session, _protection_path(session, i.id))
    if held is None:
        raise DriverError(f"GitHub has no protection of {i.id.replace(':', ' branch ', 1)} to update",
                          status=404, vendor_code="not_found", retryable=False)
    values = {**branch_protection.observed({**held, "repository": "", "pattern": ""}), **i.desired}
    shown = session.call("PUT", _protection_path(session, i.id), json=protection_body(values, _restrictions(held)))
    return _protection_observed(i.id, shown)


def delete_protection(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return _deleted(session, _protection_path(session, i.id), i.id)


# --- team memberships -------------------------------------------------------------------------------


def _membership_path(session: Session, id: str) -> str:
    team, _, username = id.partition(":")
    return f"/orgs/{quote(session.org)}/teams/{quote(team)}/memberships/{quote(username)}"


def _membership_observed(id: str, shown: Mapping[str, Any]) -> dict[str, Any]:
    team, _, username = id.partition(":")
    return {"id": id, "handle": id, "values": {"team": team, "username": username, "role": shown.get("role"),
                                               "state": shown.get("state")}}


def read_membership(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    shown = _found(session, _membership_path(session, i.id))
    return gone(i.id) if shown is None else _membership_observed(i.id, shown)


def put_membership(session: Session, id: str, role: str) -> dict[str, Any]:
    return _membership_observed(id, session.call("PUT", _membership_path(session, id), json={"role": role}))


def create_membership(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return put_membership(session, team_membership.import_id(i.desired), i.desired.get("role", "member"))


def update_membership(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return put_membership(session, i.id, i.desired.get("role", "member"))


def delete_membership(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    return _deleted(session, _membership_path(session, i.id), i.id)


def add_team_member(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    """GitHub's PUT of the membership: a person outside the organization is invited (`pending`)."""
    shown = put_membership(session, f"{i.team}:{i.username}", i.role)["values"]
    return {"team": i.team, "username": i.username, "role": shown["role"], "state": shown["state"]}


def team_members(session: Session, i: Any, c: CallContext) -> dict[str, Any]:
    members = session.items(f"/orgs/{quote(session.org)}/teams/{quote(i.team)}/members", {"role": i.role})
    return {"team": i.team, "members": [m["login"] for m in members]}


SessionFn = Callable[[Session, Any, CallContext], dict[str, Any]]

# Every operation of the connector, on a session: the driver's and the fake's alike.
OPERATIONS: dict[str, dict[str, SessionFn]] = {
    "repository": {"list": list_repositories, "import": read_repository, "read": read_repository,
                   "create": create_repository, "update": update_repository, "delete": delete_repository},
    "branch_protection": {"import": read_protection, "read": read_protection, "create": create_protection,
                          "update": update_protection, "delete": delete_protection},
    "team_membership": {"import": read_membership, "read": read_membership, "create": create_membership,
                        "update": update_membership, "delete": delete_membership},
    "team": {"members": team_members, "add_member": add_team_member},
}

_pool_lock = threading.Lock()
_pool: GitHubHTTP | None = None


def _http() -> GitHubHTTP:
    """One connection pool for every call of this process (each call brings its own token and URL)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = GitHubHTTP(timeout=30.0)
        return _pool


def session_of(context: CallContext) -> Session:
    """The session of a call: its credentials, read now (a rotated token is used at once)."""
    found = require_secrets("github", context, "GITHUB_TOKEN", "GITHUB_ORG")
    api_url = context.secrets.get("GITHUB_API_URL") or PUBLIC_API
    client = GitHubClient(api_url, token=lambda: found["GITHUB_TOKEN"], http=_http())
    return Session(client, found["GITHUB_ORG"], context)


def _over_http(fn: SessionFn) -> Callable[[Any, CallContext], dict[str, Any]]:
    return lambda i, c: fn(session_of(c), i, c)


def make_driver():
    return define_driver(github, {resource: {name: _over_http(fn) for name, fn in ops.items()}
                                  for resource, ops in OPERATIONS.items()})


__all__ = ["OPERATIONS", "Session", "make_driver", "protection_body", "session_of"]
