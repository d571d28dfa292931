"""The `github` connector's fake answers as GitHub does (it is the driver against GitHub emulated):
a repeated repository create, a branch GitHub does not have, a membership that is not there; and
its faults work as every fake's. No database."""
from __future__ import annotations

import pytest

from connectors.drivers import CallContext
from connectors.errors import DriverError
from connectors.vendors.github import make_fake


def context(n: int) -> CallContext:
    return CallContext(idempotency_key=f"run_9:{n}", run_id="run_9", op_id="github")


def test_the_fake_answers_as_github_does():
    fake = make_fake()
    made = fake.call("github.repository.create", {"desired": {"name": "site"}}, context(1))
    # the same call again (its key repeated) is the first reply; a new create of the same
    # repository is GitHub's 422, read as the repository made since it matches
    assert fake.call("github.repository.create", {"desired": {"name": "site"}}, context(1)) == made
    assert fake.call("github.repository.create", {"desired": {"name": "site"}}, context(2)) == made
    with pytest.raises(DriverError) as raised:
        fake.call("github.repository.create", {"desired": {"name": "site", "visibility": "public"}}, context(3))
    assert "GitHub already has a repository acme/site" in raised.value.message
    with pytest.raises(DriverError) as raised:  # a branch GitHub does not have
        fake.call("github.branch_protection.create", {"desired": {"repository": "site", "pattern": "dev"}},
                  context(4))
    assert (raised.value.status, raised.value.message) == (
        404, "GitHub answered 404 to PUT /repos/acme/site/branches/dev/protection: Branch not found")
    assert fake.call("github.team_membership.read", {"id": "security:bo"}, context(5)) == {
        "id": "security:bo", "gone": True}
    assert fake.state["repos"].keys() == {"site"}  # a refused call changed nothing


def test_the_fakes_faults_work_as_for_every_fake():
    fake = make_fake()
    fake.rate_limit("github.repository.list", retry_after=30)
    with pytest.raises(DriverError) as raised:
        fake.call("github.repository.list", {}, context(1))
    assert (raised.value.status, raised.value.retry_after) == (429, 30)
    assert fake.call("github.repository.list", {}, context(2)) == {"repositories": []}


def test_the_fake_adds_a_person_to_a_team_as_github_does():
    fake = make_fake()
    fake.update(lambda state: state["members"].append("ada-l"))
    assert fake.call("github.team.add_member", {"team": "developers", "username": "ada-l"}, context(1)) == {
        "team": "developers", "username": "ada-l", "role": "member", "state": "active"}
    assert fake.call("github.team.add_member", {"team": "security", "username": "bo"}, context(2))["state"] == "pending"
    with pytest.raises(DriverError) as raised:
        fake.call("github.team.add_member", {"team": "design", "username": "ada-l"}, context(3))
    assert (raised.value.status, raised.value.message) == (
        404, "GitHub answered 404 to PUT /orgs/acme/teams/design/memberships/ada-l: Not Found")
    assert fake.call("github.team.members", {"team": "developers"}, context(4)) == {
        "team": "developers", "members": ["ada-l"]}
