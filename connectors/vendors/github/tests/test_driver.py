"""The `github` driver against the local GitHub: each resource type's operations as GitHub answers
them (a read of nothing is gone, PUTs set again, a repeated repository create read as the one made
when it matches, a refusal naming GitHub's message). No database. Through real runs on the engine
(rate limits waited out durably, 5xx retried only when idempotent):
changes/lifecycle/remotes/tests/test_github_runs.py."""
from __future__ import annotations

import time
from typing import Any

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.github import github
from connectors.vendors.github.tests.conftest import TOKEN
from connectors.vendors.github.tests.github_server import GitHubServer


def ctx(server: GitHubServer, n: int = 1, **secrets: str) -> CallContext:
    given = {"GITHUB_TOKEN": TOKEN, "GITHUB_ORG": "acme", "GITHUB_API_URL": server.url, **secrets}
    return CallContext(idempotency_key=f"run_1:{n}", run_id="run_1", op_id="github", secrets=given,
                       timeout=5, deadline=time.time() + 5)


@pytest.fixture
def driver():
    return github.driver()  # type: ignore[misc]


def call(driver, server: GitHubServer, op: str, payload: dict[str, Any], n: int = 1) -> dict[str, Any]:
    operation = github.op(f"github.{op}")
    return driver.call(operation.id, operation.input.model_validate(payload), ctx(server, n))


def failure(driver, server: GitHubServer, op: str, payload: dict[str, Any]) -> DriverError:
    with pytest.raises(DriverError) as raised:
        call(driver, server, op, payload)
    return raised.value


# --- repositories ---------------------------------------------------------------------------------


def test_a_repository_is_created_private_with_a_first_commit_read_updated_and_deleted(driver, server):
    assert call(driver, server, "repository.import", {"id": "site"}) == {"id": "site", "gone": True}
    made = call(driver, server, "repository.create", {"desired": {"name": "site", "description": "The site"}})
    sent = server.requests_to("POST", "/orgs/acme/repos")[0].json()
    assert sent == {"visibility": "private", "name": "site", "description": "The site", "auto_init": True}
    assert made["id"] == "site" and made["values"]["visibility"] == "private"
    assert server.state.org["branches"]["site"] == ["main"]  # protectable at once
    read = call(driver, server, "repository.read", {"id": "site", "handle": made["handle"]})
    assert read["values"]["description"] == "The site"
    changed = call(driver, server, "repository.update", {"id": "site", "changes": {"has_wiki": False},
                                                         "desired": {"name": "site", "has_wiki": False}})
    assert changed["values"]["has_wiki"] is False
    assert server.requests_to("PATCH", "/repos/acme/site")[0].json() == {"has_wiki": False}
    assert call(driver, server, "repository.delete", {"id": "site"}) == {"id": "site", "gone": True}
    assert call(driver, server, "repository.delete", {"id": "site"}) == {"id": "site", "gone": True}  # gone: same
    assert server.state.org["repos"] == {}


def test_a_repeated_create_is_read_as_the_repository_made_when_it_matches(driver, server):
    desired = {"name": "site", "description": "The site", "visibility": "private"}
    first = call(driver, server, "repository.create", {"desired": desired})
    again = call(driver, server, "repository.create", {"desired": desired}, n=2)  # its first reply lost
    assert again == first and len(server.state.org["repos"]) == 1
    assert [r.method for r in server.received] == ["POST", "POST", "GET"]  # GitHub's 422, then the read


def test_a_create_over_a_repository_made_otherwise_is_refused_naming_what_differs(driver, server):
    call(driver, server, "repository.create", {"desired": {"name": "site", "visibility": "public"}})
    refused = failure(driver, server, "repository.create", {"desired": {"name": "site", "description": "Ours"}})
    assert (refused.status, refused.retryable) == (422, False)
    assert "GitHub already has a repository acme/site" in refused.message
    assert "description: '', not 'Ours'" in refused.message
    assert server.state.org["repos"]["site"]["visibility"] == "public"  # left alone


def test_a_renamed_repository_is_gone_under_its_old_name(driver, server):
    call(driver, server, "repository.create", {"desired": {"name": "old"}})
    call(driver, server, "repository.update", {"id": "old", "changes": {}, "desired": {"name": "old"}}, n=2)
    server.state.org["repos"]["new"] = {**server.state.org["repos"].pop("old"), "name": "new"}
    server.state.org["renamed"]["old"] = server.state.org["repos"]["new"]["id"]
    assert call(driver, server, "repository.import", {"id": "old"}, n=3) == {"id": "old", "gone": True}
    assert server.received[-1].path.startswith("/repositories/")  # GitHub's 301 was followed


def test_the_list_of_repositories_reads_every_page(driver, server):
    for n in range(120):
        call(driver, server, "repository.create", {"desired": {"name": f"r{n:03}"}}, n=n)
    listed = call(driver, server, "repository.list", {}, n=999)
    assert [r["name"] for r in listed["repositories"]] == [f"r{n:03}" for n in range(120)]
    assert len(server.requests_to("GET", "/orgs/acme/repos")) == 2


def test_missing_credentials_are_a_final_error_naming_them(driver, server):
    operation = github.op("github.repository.list")
    with pytest.raises(DriverError) as raised:
        driver.call(operation.id, operation.input(), CallContext(idempotency_key="r:1", run_id="r", op_id="x"))
    assert raised.value.retryable is False
    assert "GITHUB_TOKEN, GITHUB_ORG must be set" in raised.value.message and not server.received


# --- branch protection ------------------------------------------------------------------------------


def test_a_branch_protection_is_put_whole_read_back_and_deleted(driver, server):
    call(driver, server, "repository.create", {"desired": {"name": "site"}})
    gone = call(driver, server, "branch_protection.import", {"id": "site:main"})  # 404 Branch not protected
    assert gone == {"id": "site:main", "gone": True}
    desired = {"repository": "site", "pattern": "main", "required_approving_review_count": 2,
               "required_status_checks": ["ci/test", "lint"], "enforce_admins": True}
    made = call(driver, server, "branch_protection.create", {"desired": desired}, n=2)
    sent = server.requests_to("PUT", "/repos/acme/site/branches/main/protection")[0].json()
    assert sent["required_status_checks"] == {"strict": False, "checks": [{"context": "ci/test"}, {"context": "lint"}]}
    assert sent["required_pull_request_reviews"]["required_approving_review_count"] == 2
    assert sent["restrictions"] is None and sent["enforce_admins"] is True and sent["allow_force_pushes"] is False
    assert github.types["branch_protection"].observed(made["values"])["required_status_checks"] == ["ci/test", "lint"]
    again = call(driver, server, "branch_protection.create", {"desired": desired}, n=3)  # PUT sets it again
    assert again == made
    assert call(driver, server, "branch_protection.delete", {"id": "site:main"}, n=4)["gone"] is True
    assert call(driver, server, "branch_protection.delete", {"id": "site:main"}, n=5)["gone"] is True


def test_an_update_keeps_what_is_not_declared_and_who_may_push(driver, server):
    call(driver, server, "repository.create", {"desired": {"name": "site"}})
    server.state.org["protections"]["site:main"] = {
        "url": "x", "required_pull_request_reviews": {"required_approving_review_count": 1},
        "enforce_admins": {"enabled": True}, "required_linear_history": {"enabled": True},
        "restrictions": {"users": [{"login": "octo"}], "teams": [{"slug": "release"}], "apps": []}}
    call(driver, server, "branch_protection.update", {
        "id": "site:main", "changes": {"required_approving_review_count": 3},
        "desired": {"repository": "site", "pattern": "main", "required_approving_review_count": 3}}, n=2)
    sent = server.requests_to("PUT", "/repos/acme/site/branches/main/protection")[0].json()
    assert sent["required_pull_request_reviews"]["required_approving_review_count"] == 3
    assert sent["enforce_admins"] is True and sent["required_linear_history"] is True  # not declared: kept
    assert sent["restrictions"] == {"users": ["octo"], "teams": ["release"], "apps": []}


def test_protecting_a_branch_github_does_not_have_is_refused_with_githubs_message(driver, server):
    call(driver, server, "repository.create", {"desired": {"name": "site"}})
    refused = failure(driver, server, "branch_protection.create",
                      {"desired": {"repository": "site", "pattern": "release/1.x"}})
    assert (refused.status, refused.retryable) == (404, False)
    assert refused.message == ("GitHub answered 404 to PUT /repos/acme/site/branches/release/1.x/protection: "
                               "Branch not found")


# --- team memberships -------------------------------------------------------------------------------


def test_a_team_membership_is_put_idempotently_its_role_changed_and_removed(driver, server):
    server.state.org["members"].append("ada")
    assert call(driver, server, "team_membership.import", {"id": "developers:ada"})["gone"] is True
    desired = {"team": "developers", "username": "ada", "role": "maintainer"}
    made = call(driver, server, "team_membership.create", {"desired": desired}, n=2)
    assert made["values"] == {"team": "developers", "username": "ada", "role": "maintainer", "state": "active"}
    assert call(driver, server, "team_membership.create", {"desired": desired}, n=3) == made  # PUT: the same
    changed = call(driver, server, "team_membership.update", {"id": "developers:ada", "changes": {"role": "member"},
                                                              "desired": {**desired, "role": "member"}}, n=4)
    assert changed["values"]["role"] == "member"
    assert server.requests_to("PUT", "/orgs/acme/teams/developers/memberships/ada")[-1].json() == {"role": "member"}
    invited = call(driver, server, "team_membership.create", {"desired": {"team": "developers", "username": "bo"}},
                   n=5)
    assert invited["values"]["state"] == "pending"  # not in the organization yet: invited
    assert call(driver, server, "team.members", {"team": "developers"}, n=6) == {"team": "developers",
                                                                                 "members": ["ada"]}
    assert call(driver, server, "team_membership.delete", {"id": "developers:ada"}, n=7)["gone"] is True
    refused = failure(driver, server, "team_membership.create",
                      {"desired": {"team": "no-such-team", "username": "ada"}})
    assert refused.status == 404 and refused.message.endswith("Not Found")


def test_a_person_is_added_to_a_team_once_however_often_asked(driver, server):
    server.state.org["members"].append("ada")
    added = call(driver, server, "team.add_member", {"team": "developers", "username": "ada"})
    assert added == {"team": "developers", "username": "ada", "role": "member", "state": "active"}
    # the same PUT again (a retry) sets the same membership; a maintainer's role is set by the next one
    assert call(driver, server, "team.add_member", {"team": "developers", "username": "ada"}, n=2) == added
    assert call(driver, server, "team.add_member", {"team": "developers", "username": "ada", "role": "maintainer"},
                n=3)["role"] == "maintainer"
    assert [r.json() for r in server.requests_to("PUT", "/orgs/acme/teams/developers/memberships/ada")] == [
        {"role": "member"}, {"role": "member"}, {"role": "maintainer"}]
    invited = call(driver, server, "team.add_member", {"team": "developers", "username": "bo"}, n=4)
    assert invited["state"] == "pending"  # not in the organization yet: GitHub invites them
    refused = failure(driver, server, "team.add_member", {"team": "no-such-team", "username": "ada"})
    assert (refused.status, refused.message) == (
        404, "GitHub answered 404 to PUT /orgs/acme/teams/no-such-team/memberships/ada: Not Found")
    assert set(server.state.org["teams"]["developers"]["memberships"]) == {"ada", "bo"}
