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
