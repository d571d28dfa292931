"""Who an approval waits for, read and written one way (`runs.approvals.approver.Approver`)."""
from __future__ import annotations

import pytest

from runs.approvals.approver import Approver


@pytest.mark.parametrize("text", ["alice", "group:finance", "group:", "ada@example.com"])
def test_an_approver_reads_back_as_written(text):
    assert str(Approver.parse(text)) == text


def test_a_group_and_a_person_are_told_apart():
    group, person = Approver.parse("group:finance"), Approver.parse("alice")
    assert (group.group, group.shown, group.is_group) == ("finance", "group finance", True)
    assert (person.group, person.shown, person.is_group) == (None, "alice", False)


@pytest.mark.parametrize(("given", "named"), [
    ("alice", "alice"), (" group: finance ", "group:finance"), ({"group": " ops "}, "group:ops"),
    ("", None), ("group: ", None), ({"group": ""}, None), ({"team": "ops"}, None), (3, None),
])
def test_an_approver_given_by_a_policy_is_normalised(given, named):
    found = Approver.normalise(given)
    assert (None if found is None else str(found)) == named
