"""A resource type's fake, made from its schema: what `define_fake` gives the five operations a
connector leaves out (see `connectors.resource_fake` for the contract)."""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from connectors import CallContext, DriverError, define_connector, define_resource, op
from connectors.fakes import define_fake


class AccountFields(BaseModel):
    username: str = Field(min_length=1)
    email: str = ""
    groups: list[str] = Field(default_factory=list)
    password: str | None = None
    created_at: str = "vendor-default"


class Ping(BaseModel):
    n: int = 0


def account_type(**overrides: Any):
    spec: dict[str, Any] = dict(
        type="account", title="Account", identity="username", schema=AccountFields,
        fields={"groups": {"unordered": True}, "password": {"write_only": True}, "created_at": {"vendor_owned": True}},
        find=lambda d: d["username"])
    spec.update(overrides)
    return define_resource(**spec)


def directory(**overrides: Any):
    return define_connector("directory", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}},
                            types=[account_type(**overrides)])


PING = {"ping": {"send": lambda state, i, c: {"n": i.n}}}


def call(fake, verb: str, payload: dict[str, Any], key: str) -> dict[str, Any]:
    op_id = f"directory.account.{verb}"
    parsed = fake.connector.operations[op_id].input.model_validate(payload)
    return fake.call(op_id, parsed, CallContext(idempotency_key=key, run_id="r", op_id=op_id))


def test_the_five_operations_keep_instances_by_import_id_as_a_vendor_would():
    fake = define_fake(directory(), ops=PING)
    assert call(fake, "import", {"id": "ada"}, "k1") == {"id": "ada", "gone": True}
    desired = {"username": "ada", "email": "ada@x.example", "groups": ["ops"], "password": "s3cret"}
    made = call(fake, "create", {"desired": desired}, "k2")
    assert made == {"id": "ada", "handle": "account-1",
                    "values": {"username": "ada", "email": "ada@x.example", "groups": ["ops"],
                               "created_at": "vendor-default"}}  # write-only kept, never shown back
    assert fake.state["account"]["ada"]["values"]["password"] == "s3cret"
    assert call(fake, "import", {"id": "ada"}, "k3") == made
    assert call(fake, "read", {"id": "ada", "handle": "account-1"}, "k4") == made
    assert call(fake, "read", {"id": "ada", "handle": "account-9"}, "k5") == {"id": "ada", "gone": True}
    with pytest.raises(DriverError) as exists:
        call(fake, "create", {"desired": desired}, "k6")
    assert (exists.value.status, exists.value.vendor_code, exists.value.retryable) == (409, "exists", False)
    changed = call(fake, "update", {"id": "ada", "handle": "account-1", "changes": {"email": "a@y.example"},
                                    "desired": {**desired, "email": "a@y.example"}}, "k7")
    assert changed["values"]["email"] == "a@y.example" and changed["values"]["created_at"] == "vendor-default"
    assert call(fake, "delete", {"id": "ada", "handle": "account-1"}, "k8") == {"id": "ada", "gone": True}
    assert call(fake, "delete", {"id": "ada"}, "k9") == {"id": "ada", "gone": True}  # gone already: the same
    with pytest.raises(DriverError) as missing:
        call(fake, "update", {"id": "ada", "changes": {}, "desired": desired}, "k10")
    assert (missing.value.status, missing.value.vendor_code) == (404, "not_found")
    again = call(fake, "create", {"desired": desired}, "k11")
    assert again["handle"] == "account-2"  # a new instance, a new handle


def test_it_is_a_fake_like_the_others_idempotency_faults_state_edits_and_seeded_state():
    seeded = {"account": {"bo": {"handle": "h-bo", "values": {"username": "bo", "email": "bo@x.example",
                                                              "groups": [], "created_at": "2026"}}}}
    fake = define_fake(directory(), initial=seeded, ops=PING)
    assert call(fake, "import", {"id": "bo"}, "k1")["handle"] == "h-bo"
    first = call(fake, "create", {"desired": {"username": "cy"}}, "same")
    assert call(fake, "create", {"desired": {"username": "cy"}}, "same") == first  # the key repeated: no 409
    fake.fail_next("directory.account.update")
    with pytest.raises(DriverError, match="injected fault"):
        call(fake, "update", {"id": "cy", "changes": {"email": "c@x.example"},
                               "desired": {"username": "cy", "email": "c@x.example"}}, "k2")
    fake.update(lambda state: state["account"]["cy"]["values"].update(email="by-hand@x.example"))
    assert call(fake, "import", {"id": "cy"}, "k3")["values"]["email"] == "by-hand@x.example"
    fake.reset()
    assert set(fake.state["account"]) == {"bo"}


def test_a_connector_may_write_some_of_the_five_itself_and_they_share_the_state():
    def create(state: dict[str, Any], i: Any, c: CallContext) -> dict[str, Any]:
        username = i.desired["username"]
        values = {**i.desired, "created_at": "by the directory"}
        state.setdefault("account", {})[username] = {"handle": f"u-{username}", "values": values}
        return {"id": username, "handle": f"u-{username}", "values": values}

    fake = define_fake(directory(), ops={**PING, "account": {"create": create}})
    call(fake, "create", {"desired": {"username": "di"}}, "k1")
    assert call(fake, "read", {"id": "di"}, "k2") == {
        "id": "di", "handle": "u-di", "values": {"username": "di", "created_at": "by the directory"}}


def test_a_type_with_its_own_vendor_shape_gets_no_fake_from_its_schema_and_says_so():
    shaped = directory(normalize=lambda vendor: {"username": vendor.get("login")})
    with pytest.raises(ValueError) as refused:
        define_fake(shaped, ops=PING)
    assert str(refused.value) == (
        "fake directory: directory.account has normalize (the vendor keeps its values in a shape of its own), so "
        "its fake cannot be made from its schema: give define_fake its import, read, create, update, delete in "
        'ops={"account": {...}}')
    with pytest.raises(ValueError, match="must implement every declared operation and nothing else: missing "
                                         "directory.ping.send"):
        define_fake(directory())
