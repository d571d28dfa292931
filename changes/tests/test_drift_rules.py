"""The comparison and the plan, on plain data: what drift calls clean, drifted or gone, and what
apply would change. No database, no vendor: the rules alone."""
from __future__ import annotations

import pytest
from pydantic import BaseModel, Field, ValidationError

from changes.datafiles.sanoma import GROUP, PERSON
from changes.resources.compare import Declared, differences, resolve
from changes.resources.plan import dependency_order, make_plan
from changes.resources.sealing import REDACTED, scrub, sealed
from company.vendors.shop import shop
from connectors.drivers import CallContext
from connectors.errors import DriverError

PRODUCT = shop.types["product"]
ROLE = shop.types["staff_role"]
HOOK = shop.types["webhook"]
TYPES = {t.key: t for t in (PRODUCT, ROLE, HOOK, PERSON, GROUP)}


def res(rid: str, type_key: str, values: dict, refs: tuple[str, ...] = ()) -> dict:
    return {"id": rid, "type": type_key, "name": rid.split("#")[1], "values": values, "references": list(refs),
            "file": rid.split("#")[0], "line": 1, "column": 1}


MUG = res("resources/c.py#mug", "shop.product", {"sku": "mug", "title": "Mug", "price_cents": 1500,
                                                  "tags": ["kitchen", "gift", "kitchen"]})
STAFF = res("resources/p.py#staff", "sanoma.group", {"name": "staff"})
OPS = res("resources/p.py#ops", "sanoma.group", {"name": "ops"})
ADA = res("resources/p.py#ada", "sanoma.person", {"username": "ada-l", "groups": [{"ref": STAFF["id"]},
                                                                                   {"ref": OPS["id"]}]},
          (STAFF["id"], OPS["id"]))
ADA_ROLE = res("resources/a.py#ada_admin", "shop.staff_role", {"user": {"ref": ADA["id"]}, "role": "admin"},
               (ADA["id"],))
ALL = [MUG, STAFF, OPS, ADA, ADA_ROLE]
KNOWN = Declared({r["id"]: r for r in ALL}, {})


def test_unordered_lists_compare_as_multisets():
    same = {"sku": "mug", "title": "Mug", "price_cents": 1500, "tags": ["gift", "kitchen", "kitchen"]}
    assert differences(PRODUCT, MUG, same, KNOWN) == []
    once = {**same, "tags": ["gift", "kitchen"]}  # a repeat counts
    assert differences(PRODUCT, MUG, once, KNOWN) == [
        {"path": "tags", "desired": ["kitchen", "gift", "kitchen"], "actual": ["gift", "kitchen"]}]


def test_only_declared_fields_count_never_vendor_owned_or_write_only():
    actual = {"sku": "mug", "title": "Mug", "price_cents": 1500, "tags": ["kitchen", "gift", "kitchen"],
              "currency": "USD", "created_at": "2026-01-01"}
    assert differences(PRODUCT, MUG, actual, KNOWN) == []  # currency is not declared by MUG
    hook = res("resources/w.py#h", "shop.webhook", {"url": "https://x.example/h", "events": ["order.paid"],
                                                     "signing_secret": {"secret": "HOOK_KEY"}})
    assert differences(HOOK, hook, {"url": "https://x.example/h", "events": ["order.paid"]}, KNOWN) == []


def test_each_differing_leaf_with_desired_and_actual():
    actual = {"sku": "mug", "title": "Cup", "price_cents": 1700, "tags": ["kitchen", "gift", "kitchen"]}
    assert differences(PRODUCT, MUG, actual, KNOWN) == [
        {"path": "title", "desired": "Mug", "actual": "Cup"},
        {"path": "price_cents", "desired": 1500, "actual": 1700}]


def test_a_reference_accepts_the_name_or_a_by_field_declared_or_read():
    assert resolve(ROLE, ADA_ROLE["values"], KNOWN) == {"user": "ada-l", "role": "admin"}
    by_field = {"user": "ada-l", "role": "admin"}
    by_name = {"user": "ada", "role": "admin"}
    other = {"user": "bob", "role": "admin"}
    assert differences(ROLE, ADA_ROLE, by_field, KNOWN) == []
    assert differences(ROLE, ADA_ROLE, by_name, KNOWN) == []
    assert differences(ROLE, ADA_ROLE, other, KNOWN) == [{"path": "user", "desired": "ada-l", "actual": "bob"}]
    # a value of the by field read from the vendor in the same run counts too
    read = Declared(KNOWN.resources, {ADA["id"]: {"username": "ada.lovelace"}})
    assert differences(ROLE, ADA_ROLE, {"user": "ada.lovelace", "role": "admin"}, read) == []


def test_references_in_an_unordered_list():
    person = {"username": "ada-l", "groups": ["ops", "staff"]}
    assert differences(PERSON, ADA, person, KNOWN) == []
    assert differences(PERSON, ADA, {"username": "ada-l", "groups": ["staff"]}, KNOWN) == [
        {"path": "groups", "desired": ["staff", "ops"], "actual": ["staff"]}]


def entry(r: dict, status: str, diffs: list | None = None) -> dict:
    return {**r, "status": status, "diffs": diffs or [], "import_id": TYPES[r["type"]].import_id(
        resolve(TYPES[r["type"]], r["values"], KNOWN)), "error": None}


def test_the_plan_creates_the_gone_updates_the_mutable_and_replaces_on_an_immutable_change():
    usd = res("resources/c.py#tee", "shop.product", {"sku": "tee", "title": "Tee", "price_cents": 900,
                                                      "currency": "USD"})
    report = [entry(MUG, "drifted", [{"path": "price_cents", "desired": 1500, "actual": 1700}]),
              entry(usd, "drifted", [{"path": "currency", "desired": "USD", "actual": "EUR"}]),
              entry(STAFF, "clean"), entry(OPS, "gone"), entry(ADA, "clean"), entry(ADA_ROLE, "gone")]
    declared = [MUG, usd, STAFF, OPS, ADA, ADA_ROLE]
    changes = make_plan(declared=declared, report=report, managed=[], types=TYPES)
    assert [(c["action"], c["resource"]) for c in changes] == [
        ("update", MUG["id"]), ("replace", usd["id"]), ("create", OPS["id"]), ("create", ADA_ROLE["id"])]
    update, replace_, create_group, create_role = changes
    assert update["calls"] == [{"op": "shop.product.update", "input": {
        "id": "mug", "changes": {"price_cents": 1500}, "desired": MUG["values"]}}]
    assert [c["op"] for c in replace_["calls"]] == ["shop.product.delete", "shop.product.create"]
    assert replace_["replaces"] == ["currency"]
    assert create_role["calls"][0]["input"] == {"desired": {"user": "ada-l", "role": "admin"}}


def test_delete_only_what_an_apply_created_latest_first():
    report = [entry(MUG, "clean")]
    managed = [{"type": "shop.product", "import_id": "mug", "created_by": "apply-1"},
               {"type": "shop.product", "import_id": "old", "created_by": "apply-1"},
               {"type": "sanoma.person", "import_id": "gone-person", "created_by": "apply-2"}]
    changes = make_plan(declared=[MUG], report=report, managed=managed, types=TYPES)
    assert [(c["action"], c["type"], c["import_id"]) for c in changes] == [
        ("delete", "sanoma.person", "gone-person"), ("delete", "shop.product", "old")]
    assert make_plan(declared=[MUG], report=report, managed=[], types=TYPES) == []


def test_references_come_first_whatever_the_file_order():
    order = dependency_order([ADA_ROLE, MUG, ADA, OPS, STAFF])
    assert order.index(STAFF["id"]) < order.index(ADA["id"]) < order.index(ADA_ROLE["id"])
    assert order.index(OPS["id"]) < order.index(ADA["id"])


def test_create_takes_a_secret_by_name_only_in_a_write_only_field():
    create = shop.op("shop.webhook.create").input
    ok = create.model_validate({"desired": {"url": "https://x.example/h", "events": ["order.paid"],
                                            "signing_secret": {"secret": "HOOK_KEY"}}})
    assert ok.model_dump(mode="json")["desired"]["signing_secret"] == {"secret": "HOOK_KEY"}
    with pytest.raises(ValidationError, match="a secret .* goes only in a write-only field"):
        create.model_validate({"desired": {"url": {"secret": "U"}, "events": ["order.paid"],
                                           "signing_secret": {"secret": "HOOK_KEY"}}})


class Hook(BaseModel):
    desired: dict = Field(default_factory=dict)


def test_the_sealed_driver_fills_the_secret_in_and_scrubs_replies_and_errors(db):
    seen = {}
    value = "s3cr3t-value-0123456789"

    def create(payload, context):
        seen["sent"] = payload.desired["signing_secret"]
        return {"id": payload.desired["url"], "handle": "wh_1", "values": {"echo": f"secret={value}"}}

    def failing(payload, context):
        raise DriverError(f"refused {payload.desired['signing_secret']}", retryable=False, status=422)

    payload = shop.op("shop.webhook.create").input.model_validate(
        {"desired": {"url": "https://x.example/h", "events": ["order.paid"], "signing_secret": {"secret": "K"}}})
    context = CallContext(idempotency_key="r:1", run_id="r", op_id="shop.webhook.create", secrets={"K": value})
    reply = sealed(HOOK, "create", create)(payload, context)
    assert seen["sent"] == value
    assert reply["values"] == {"echo": f"secret={REDACTED}"}
    assert payload.model_dump()["desired"]["signing_secret"] == {"secret": "K"}  # what the engine records is untouched
    with pytest.raises(DriverError) as caught:
        sealed(HOOK, "create", failing)(payload, context)
    assert value not in str(caught.value) and caught.value.status == 422
    # no value for the name: refused before the vendor is called, naming it
    seen.clear()
    bare = CallContext(idempotency_key="r:2", run_id="r", op_id="shop.webhook.create", secrets={"OTHER": value})
    with pytest.raises(DriverError, match="The secret K is missing") as caught:
        sealed(HOOK, "create", create)(payload, bare)
    assert caught.value.vendor_code == "secret_missing" and caught.value.retryable is False and seen == {}
    assert scrub(["a", {"b": value}], [value]) == ["a", {"b": REDACTED}]
