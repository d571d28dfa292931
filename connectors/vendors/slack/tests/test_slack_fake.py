"""Slack's fake behaves as Slack does: no idempotency key, its `ok: false` codes, the key in metadata."""
from __future__ import annotations

import pytest

from connectors.vendors.slack import make_fake, slack
from runs.authoring import CallContext, DriverError


def _call(fake, op: str, payload: dict, key: str = "run-1:1"):
    return fake.driver.call(op, slack.op(op).input.model_validate(payload),
                            CallContext(idempotency_key=key, run_id="run-1", op_id=op))


def test_a_post_twice_with_one_key_is_two_messages_and_find_finds_the_first():
    fake = make_fake()
    first = _call(fake, "slack.message.post", {"channel": "#approvals", "text": "hi"})
    second = _call(fake, "slack.message.post", {"channel": "C0APPROVALS", "text": "hi"})
    assert first["channel"] == second["channel"] == "C0APPROVALS" and first["ts"] != second["ts"]
    assert len(fake.state["channels"]["C0APPROVALS"]["messages"]) == 2
    found = _call(fake, "slack.message.find", {"channel": "#approvals", "text": "hi"})
    assert found == {"happened": True, "output": first}
    missing = _call(fake, "slack.message.find", {"channel": "#approvals", "text": "hi"}, key="other")
    assert missing == {"happened": False}


@pytest.mark.parametrize(("channel", "code"), [("#nowhere", "channel_not_found"), ("#old-news", "is_archived")])
def test_slacks_refusals_carry_its_code_and_post_nothing(channel, code):
    fake = make_fake()
    with pytest.raises(DriverError) as refused:
        _call(fake, "slack.message.post", {"channel": channel, "text": "hi"})
    assert (refused.value.vendor_code, refused.value.retryable) == (code, False)
    assert all(not c["messages"] for c in fake.state["channels"].values())


def test_an_empty_message_is_refused_before_slack_is_asked():
    with pytest.raises(ValueError, match="text"):
        slack.op("slack.message.post").input.model_validate({"channel": "#approvals", "text": ""})
