"""The GitHub resource types a company declares in its `resources/` files: `github.repository` (a
repository of the organization, by name), `github.branch_protection` (the protection of one branch
of a repository, `repository:branch`) and `github.team_membership` (a person's membership of a
team, `team:username`, as member or maintainer).

Each type's `normalize` reads GitHub's own JSON (what the driver and the fake answer as `values`)
into the declared shape, so drift compares like with like.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, Field

from connectors.resources import define_resource

REPOSITORY_NAME = r"^[A-Za-z0-9._-]{1,100}$"
BRANCH = r"^[A-Za-z0-9._/-]{1,255}$"  # a branch's name: GitHub's REST API protects one branch, no wildcards
TEAM_SLUG = r"^[a-z0-9][a-z0-9_-]{0,254}$"
LOGIN = r"^[A-Za-z0-9][A-Za-z0-9-]{0,38}$"


class RepositoryFields(BaseModel):
    name: str = Field(pattern=REPOSITORY_NAME, description="the repository's name in the organization")
    description: str = ""
    homepage: str = ""
    visibility: Literal["private", "public", "internal"] = "private"
    has_issues: bool = True
    has_wiki: bool = True
    allow_merge_commit: bool = True
    allow_squash_merge: bool = True
    allow_rebase_merge: bool = True
    delete_branch_on_merge: bool = False
    default_branch: str = ""  # set by GitHub: `main` for a repository sanoma creates
    html_url: str = ""


def repository_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    """GitHub's repository JSON in the declared shape (a `null` description or homepage is "")."""
    visibility = vendor.get("visibility") or ("private" if vendor.get("private") else "public")
    out: dict[str, Any] = {"name": vendor.get("name"), "description": vendor.get("description") or "",
                           "homepage": vendor.get("homepage") or "", "visibility": visibility}
    for key in ("has_issues", "has_wiki", "allow_merge_commit", "allow_squash_merge", "allow_rebase_merge",
                "delete_branch_on_merge"):
        if key in vendor:  # GitHub leaves the merge settings out for a token without admin rights
            out[key] = vendor[key]
    out["default_branch"] = vendor.get("default_branch") or ""
    out["html_url"] = vendor.get("html_url") or ""
    return out


repository = define_resource(
    type="repository",
    title="Repository",
    identity="name",
    schema=RepositoryFields,
    fields={"default_branch": {"vendor_owned": True}, "html_url": {"vendor_owned": True}},
    find=lambda desired: desired["name"],
    normalize=repository_values,
    effects={"create": "write", "update": "write", "delete": "write"},
    description="A repository of the company's GitHub organization",
)


class BranchProtectionFields(BaseModel):
    repository: str = Field(pattern=REPOSITORY_NAME, description="the repository (a github.repository, by name)")
    pattern: str = Field(pattern=BRANCH, description="the branch protected (its name)")
    # None: pull requests are not required; 0 to 6: required, with that many approving reviews.
    required_approving_review_count: int | None = Field(default=1, ge=0, le=6)
    dismiss_stale_reviews: bool = False
    require_code_owner_reviews: bool = False
    require_last_push_approval: bool = False
    required_status_checks: list[str] = Field(default_factory=list)
    strict_status_checks: bool = False
    enforce_admins: bool = False
    required_linear_history: bool = False
    allow_force_pushes: bool = False
    allow_deletions: bool = False
    required_conversation_resolution: bool = False


PROTECTION_FLAGS = ("required_linear_history", "allow_force_pushes", "allow_deletions",
                    "required_conversation_resolution")


def protection_values(vendor: Mapping[str, Any]) -> dict[str, Any]:
    """GitHub's branch protection JSON (with the `repository` and `pattern` it is of) in the declared shape."""
    reviews = vendor.get("required_pull_request_reviews")
    checks = vendor.get("required_status_checks")
    out: dict[str, Any] = {
        "repository": vendor.get("repository"), "pattern": vendor.get("pattern"),
        "required_approving_review_count": None if reviews is None else reviews.get(
            "required_approving_review_count", 0),
        "dismiss_stale_reviews": bool((reviews or {}).get("dismiss_stale_reviews")),
        "require_code_owner_reviews": bool((reviews or {}).get("require_code_owner_reviews")),
        "require_last_push_approval": bool((reviews or {}).get("require_last_push_approval")),
        "required_status_checks": [] if checks is None else list(
            checks.get("contexts") or [c.get("context") for c in checks.get("checks") or []]),
        "strict_status_checks": bool((checks or {}).get("strict")),
        "enforce_admins": bool((vendor.get("enforce_admins") or {}).get("enabled")),
    }
    for flag in PROTECTION_FLAGS:
        out[flag] = bool((vendor.get(flag) or {}).get("enabled"))
    return out


branch_protection = define_resource(
    type="branch_protection",
    title="Branch protection",
    identity=("repository", "pattern"),
    schema=BranchProtectionFields,
    fields={"repository": {"references": "github.repository", "by": "name"},
            "required_status_checks": {"unordered": True}},
    find=lambda desired: f"{desired['repository']}:{desired['pattern']}",
    normalize=protection_values,
    effects={"create": "write", "update": "write", "delete": "write"},
    description="The protection of a branch of a repository: reviews, checks, who may push",
)


class TeamMembershipFields(BaseModel):
    team: str = Field(pattern=TEAM_SLUG, description="the team's slug")
    username: str = Field(pattern=LOGIN, description="the person's GitHub login")
    role: Literal["member", "maintainer"] = "member"
    state: str = ""  # set by GitHub: `active`, or `pending` until an invited person accepts


team_membership = define_resource(
    type="team_membership",
    title="Team membership",
    identity=("team", "username"),
    schema=TeamMembershipFields,
    fields={"state": {"vendor_owned": True}},
    find=lambda desired: f"{desired['team']}:{desired['username']}",
    normalize=lambda vendor: {"team": vendor.get("team"), "username": vendor.get("username"),
                              "role": vendor.get("role"), "state": vendor.get("state") or ""},
    effects={"create": "access", "update": "access", "delete": "access"},
    description="A person's membership of a team of the organization, as member or maintainer",
)

__all__ = ["BranchProtectionFields", "RepositoryFields", "TeamMembershipFields", "branch_protection",
           "protection_values", "repository", "repository_values", "team_membership"]
