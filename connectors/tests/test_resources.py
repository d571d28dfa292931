"""Resource types on connectors: declaring them, the operations they derive, declaring instances."""
from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from connectors import Ref, Secret, define_connector, define_resource, op, resource_types, with_setup
from connectors.resources import Observed, ResourceType


class Item(BaseModel):
    sku: str = Field(min_length=1)
    title: str = ""
    price_cents: int = Field(default=100, gt=0)
    currency: str = "EUR"
    tags: list[str] = Field(default_factory=list)
    bundle: list[str] = Field(default_factory=list)
    owner: str | None = None
    token: str | None = None
    created_at: str | None = None


class Person(BaseModel):
    username: str


class In(BaseModel):
    id: str


def item_type(**overrides: Any) -> ResourceType:
    spec: dict[str, Any] = dict(
        type="item", title="Item", identity="sku", schema=Item,
        fields={"currency": {"immutable": True}, "tags": {"unordered": True},
                "bundle": {"references": "store.item", "by": "sku"}, "owner": {"references": "hr.person"},
                "token": {"write_only": True}, "created_at": {"vendor_owned": True}},
        find=lambda d: d["sku"], effects={"update": "publish", "delete": "access"},
    )
    spec.update(overrides)
    return define_resource(**spec)


@pytest.fixture
def store():
    return define_connector("store", {"item": {"price": op(effect="publish", input=In, output=In)}},
                            types=[item_type()])


def test_a_type_derives_five_ordinary_operations_with_their_effects_and_targets(store):
    assert sorted(store.operations) == ["store.item.create", "store.item.delete", "store.item.import",
                                        "store.item.price", "store.item.read", "store.item.update"]
    effects = {o.name: (o.effect, o.idempotent) for o in store.operations.values()}
    assert effects == {"price": ("publish", False), "import": ("read", True), "read": ("read", True),
                       "create": ("write", False), "update": ("publish", True), "delete": ("access", True)}
    read = store.op("store.item.read")
    assert read.target is not None and read.target(read.input(id="mug")) == "item/mug"
    create = store.op("store.item.create")
    parsed = create.input.model_validate({"desired": {"sku": "mug", "price_cents": 5}})
    assert create.target is not None and create.target(parsed) == "item/mug"
    assert read.opaque == ("handle",) and read.output is Observed


def test_the_type_is_reached_as_connector_attribute_and_survives_with_setup(store):
    assert store.item is store.types["item"] is store.resource_type("item")
    assert store.item.key == "store.item" and store.item.vendor == "store"
    again = with_setup(store, driver=lambda: None)
    assert again.item is store.item and again.operations is store.operations
    assert dataclasses.replace(store).types == store.types
    with pytest.raises(AttributeError, match="has no attribute or resource type 'widget'"):
        _ = store.widget
    with pytest.raises(KeyError, match=r"store has no resource type widget \(its types: item\)"):
        store.resource_type("widget")
    assert resource_types([store]) == {"store.item": store.item}


def test_create_and_update_inputs_check_desired_against_the_schema(store):
    create = store.op("store.item.create").input
    with pytest.raises(ValidationError, match="price_cents: Input should be greater than 0"):
        create.model_validate({"desired": {"sku": "mug", "price_cents": 0}})
    with pytest.raises(ValidationError, match="store.item has no field colour"):
        create.model_validate({"desired": {"sku": "mug", "colour": "red"}})
    with pytest.raises(ValidationError, match="created_at: set by store, never sent"):
        create.model_validate({"desired": {"sku": "mug", "created_at": "now"}})
    with pytest.raises(ValidationError, match="the identity field sku is missing"):
        create.model_validate({"desired": {"title": "Mug"}})
    with pytest.raises(ValidationError, match="references are resolved before they are sent"):
        create.model_validate({"desired": {"sku": "mug", "token": Secret("T")}})
    update = store.op("store.item.update").input
    with pytest.raises(ValidationError, match="currency: cannot change in place"):
        update.model_validate({"id": "mug", "changes": {"currency": "USD"},
                               "desired": {"sku": "mug", "currency": "USD"}})
    with pytest.raises(ValidationError, match="title: a change must be part of the desired values"):
        update.model_validate({"id": "mug", "changes": {"title": "x"}, "desired": {"sku": "mug"}})
    assert update.model_validate({"id": "mug", "changes": {"title": "x"}, "desired": {"sku": "mug", "title": "x"}})


def test_observed_is_either_there_with_a_handle_or_gone_with_nothing():
    assert Observed(id="a", gone=True).handle is None
    assert Observed(id="a", handle="h1", values={"x": 1}).values == {"x": 1}
    with pytest.raises(ValidationError, match="needs its handle"):
        Observed(id="a")
    with pytest.raises(ValidationError, match="a gone instance has no handle"):
        Observed(id="a", gone=True, handle="h1")


def test_declare_keeps_only_the_declared_fields_in_schema_shape(store):
    clean, problems = store.item.declare("mug", {"sku": "mug", "price_cents": 1500, "tags": ("a", "b")})
    assert problems == []
    assert clean == {"sku": "mug", "price_cents": 1500, "tags": ["a", "b"]}


def test_declare_takes_references_and_secrets_where_the_field_allows_them(store):
    other = Ref(id="resources/a.py#cup", type="store.item", name="cup")
    boss = Ref(id="resources/hr.py#ada", type="hr.person", name="ada")
    clean, problems = store.item.declare("mug", {"sku": "mug", "bundle": [other, "plate"], "owner": boss,
                                                 "token": Secret("STORE_TOKEN")})
    assert problems == []
    assert clean == {"sku": "mug", "bundle": [other, "plate"], "owner": boss, "token": Secret("STORE_TOKEN")}


@pytest.mark.parametrize(("values", "field", "message"), [
    ({"sku": "mug", "colour": "red"}, "colour", "colour: store.item has no field colour; its fields are sku, title"),
    ({"sku": "mug", "created_at": "x"}, "created_at", "created_at: is set by store, never declared: leave it out"),
    ({"sku": "mug", "price_cents": -5}, "price_cents", "price_cents: Input should be greater than 0"),
    ({"sku": "mug", "tags": "a"}, "tags", "tags: Input should be a valid list"),
    ({"sku": ""}, "sku", "sku: is the identity of a store.item and may not be empty"),
    ({"title": "Mug"}, "sku", "sku: missing: it is the identity of a store.item, declare it"),
    ({"sku": "mug", "title": Ref(id="r#a", type="store.item", name="a")}, "title",
     "title: takes a value, not a reference to a: write the value itself"),
    ({"sku": "mug", "owner": Ref(id="r#cup", type="store.item", name="cup")}, "owner",
     "owner: refers to cup, a store.item; owner takes a reference to a hr.person"),
    ({"sku": "mug", "bundle": [Ref(id="r#ada", type="hr.person", name="ada")]}, "bundle",
     "bundle: refers to ada, a hr.person; bundle takes a reference to a store.item"),
    ({"sku": "mug", "title": Secret("X")}, "title", "title: takes no secret: a secret goes only in a write-only field"),
    ({"sku": "mug", "bundle": [{"x": Ref(id="r#a", type="store.item", name="a")}]}, "bundle",
     "bundle: a reference or secret goes directly in the field or in its list, not deeper"),
])
def test_declare_refuses_naming_the_field(store, values, field, message):
    clean, problems = store.item.declare("mug", values)
    assert clean == {}
    assert [p.field for p in problems] == [field]
    assert problems[0].message.startswith(message), problems[0].message


@pytest.mark.parametrize(("overrides", "error", "message"), [
    ({"type": "Item"}, ValueError, "resource type 'Item' must be a lowercase name"),
    ({"type": "my-item"}, ValueError, "must be a lowercase name: letters, digits and underscores"),
    ({"title": " "}, ValueError, "resource type item: title must be a non-empty string"),
    ({"schema": dict}, TypeError, "resource type item: schema must be a pydantic model class"),
    ({"identity": ()}, ValueError, "resource type item: identity names at least one field"),
    ({"identity": "id"}, ValueError, "resource type item: identity 'id' is not a field of Item"),
    ({"fields": {"colour": {}}}, ValueError, "resource type item: field 'colour' is not in its schema Item"),
    ({"fields": {"title": {"secret": True}}}, ValueError,
     "resource type item: field 'title': unknown option 'secret'; the options are immutable, vendor_owned"),
    ({"fields": {"title": {"immutable": "yes"}}}, TypeError, "field 'title': immutable is True or False"),
    ({"fields": {"owner": {"references": "person"}}}, ValueError,
     "field 'owner': references names a resource type as <vendor>.<type>"),
    ({"fields": {"owner": {"by": "username"}}}, ValueError, "field 'owner': `by` goes with `references`"),
    ({"fields": {"title": {"unordered": True}}}, ValueError, "field 'title': unordered is for a list field"),
    ({"fields": {"sku": {"vendor_owned": True}}}, ValueError,
     "field 'sku' is vendor_owned, so it is never declared: give it a default"),
    ({"fields": {"token": {"vendor_owned": True, "write_only": True}}}, ValueError, "cannot both hold"),
    ({"fields": {"sku": {"write_only": True}}}, ValueError, "identity 'sku' must be declared and read back"),
    ({"find": "sku"}, TypeError, "resource type item: find must be a function"),
    ({"normalize": 3}, TypeError, "resource type item: normalize must be a function"),
    ({"effects": {"read": "write"}}, ValueError, "effects are given for create, update, delete; not for read"),
    ({"effects": {"create": "delete"}}, ValueError, "the effect of create must be one of read, write"),
])
def test_a_bad_type_is_refused_when_defined(overrides, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        item_type(**overrides)


def test_a_connector_refuses_clashing_types():
    with pytest.raises(ValueError, match="two resource types are named item"):
        define_connector("store", {}, types=[item_type(), item_type()])
    with pytest.raises(ValueError, match="store.item.read is declared in resources and derived from the resource type"):
        define_connector("store", {"item": {"read": op(effect="read", input=In, output=In)}}, types=[item_type()])
    with pytest.raises(ValueError, match="may not be named 'info'"):
        define_connector("store", {}, types=[item_type(type="info")])
    with pytest.raises(TypeError, match="which is not a define_resource"):
        define_connector("store", {}, types=["item"])  # type: ignore[list-item]


def test_diff_and_observed_follow_the_field_options(store):
    rt = store.item
    desired = {"sku": "mug", "title": "Mug", "tags": ["a", "b", "a"], "currency": "EUR", "token": "t"}
    actual = {"sku": "mug", "title": "Cup", "tags": ["b", "a", "a"], "currency": "USD", "created_at": "x"}
    changes = {c.field: c.replace for c in rt.diff(desired, actual)}
    assert changes == {"title": False, "currency": True}
    assert rt.diff({"tags": ["a", "b"]}, {"tags": ["a", "b", "b"]})[0].field == "tags"
    assert rt.observed({"sku": "mug", "token": "t", "extra": 1, "created_at": "x"}) == {"sku": "mug", "created_at": "x"}
    flipped = item_type(normalize=lambda v: {"sku": v["id"], "title": v["name"]})
    assert flipped.observed({"id": "mug", "name": "Mug"}) == {"sku": "mug", "title": "Mug"}


def test_calling_a_type_as_python_gives_a_declaration(store):
    made = store.item(sku="mug", price_cents=5)
    assert (made.type, dict(made.values)) == ("store.item", {"sku": "mug", "price_cents": 5})


def test_host_marks_a_deploy_target():
    assert item_type(host=True).host is True and item_type().host is False
