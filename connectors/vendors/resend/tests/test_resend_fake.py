"""Resend's fake behaves as Resend does on broadcasts."""
from __future__ import annotations

import pytest

from connectors.vendors.resend import make_fake, resend
from runs.authoring import CallContext, DriverError

DRAFT = {"segment_id": "seg_newsletter", "sender": "Acme <news@acme.example>", "subject": "Hi", "text": "Hello"}


def _call(fake, op: str, payload: dict, key: str = "run-1:1"):
    operation = resend.op(op)
    return fake.driver.call(op, operation.input.model_validate(payload),
                            CallContext(idempotency_key=key, run_id="run-1", op_id=op))


def test_a_draft_is_sent_once_and_a_second_send_is_refused_as_resend_refuses_it():
    fake = make_fake()
    created = _call(fake, "resend.broadcast.create", DRAFT)
    assert _call(fake, "resend.broadcast.get", created)["status"] == "draft"
    assert _call(fake, "resend.broadcast.find", created) == {"happened": False}
    _call(fake, "resend.broadcast.send", created)
    assert _call(fake, "resend.broadcast.find", created)["happened"] is True
    with pytest.raises(DriverError) as refused:
        _call(fake, "resend.broadcast.send", created, key="run-2:1")
    assert (refused.value.status, refused.value.vendor_code) == (422, "validation_error")
    assert fake.state["delivered"] == [{"broadcast_id": created["broadcast_id"], "recipients": 3}]


def test_the_key_is_not_read_on_broadcasts_a_second_create_is_a_second_draft():
    fake = make_fake()
    first = _call(fake, "resend.broadcast.create", DRAFT, key="same")
    second = _call(fake, "resend.broadcast.create", DRAFT, key="same")
    assert first != second and len(fake.state["broadcasts"]) == 2


def test_an_unknown_segment_or_broadcast_is_resends_not_found_and_a_draft_needs_a_body():
    fake = make_fake()
    for op, payload in (("resend.broadcast.create", {**DRAFT, "segment_id": "seg_x"}),
                        ("resend.broadcast.send", {"broadcast_id": "bc_9"})):
        with pytest.raises(DriverError) as refused:
            _call(fake, op, payload)
        assert (refused.value.status, refused.value.vendor_code) == (404, "not_found")
    assert fake.state["broadcasts"] == {}
    with pytest.raises(ValueError, match="html or text"):
        resend.op("resend.broadcast.create").input.model_validate({**DRAFT, "text": ""})


def test_a_rate_limit_queued_on_the_fake_refuses_the_next_call_with_its_wait():
    fake = make_fake()
    fake.rate_limit("resend.broadcast.create", retry_after=5)
    with pytest.raises(DriverError) as refused:
        _call(fake, "resend.broadcast.create", DRAFT)
    assert (refused.value.status, refused.value.retry_after) == (429, 5.0)
    assert fake.state["broadcasts"] == {}
