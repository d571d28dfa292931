"""Declaring connectors: operations, effects, vendor info (SPEC 4.1)."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from connectors import VendorInfo, define_connector, op
from connectors.errors import ConfigError
from runs.config.resolution import SanomaConfig, resolve_config
from runs.config.workflows import define_workflow


class In(BaseModel):
    id: str


class Out(BaseModel):
    ok: bool = True


SVG = '<svg xmlns="http://www.w3.org/2000/svg"><circle r="4"/></svg>'


def test_operations_are_named_vendor_resource_name_and_keep_their_contract():
    ghost = define_connector("ghost", {"post": {
        "create": op(effect="write", input=In, output=Out, description="Create a draft"),
        "publish": op(effect="publish", input=In, output=Out, idempotent=True, target=lambda i: f"post/{i.id}"),
    }})
    publish = ghost.op("ghost.post.publish")
    assert (publish.vendor, publish.resource, publish.name, publish.effect, publish.idempotent) == (
        "ghost", "post", "publish", "publish", True)
    assert publish.target(In(id="7")) == "post/7"
    assert ghost.op("ghost.post.create").idempotent is False
    assert publish.plain() == {"id": "ghost.post.publish", "vendor": "ghost", "resource": "post", "name": "publish",
                               "effect": "publish"}


def test_an_unknown_effect_is_refused_naming_the_effects():
    with pytest.raises(ValueError, match="effect must be one of read, write, publish, send, money, access"):
        op(effect="delete", input=In, output=Out)


def test_schemas_must_be_pydantic_models():
    with pytest.raises(TypeError, match="input must be a pydantic model class"):
        op(effect="read", input=dict, output=Out)


def test_an_opaque_field_must_be_a_field():
    with pytest.raises(ValueError, match="opaque field 'token' is neither an input nor an output field"):
        op(effect="read", input=In, output=Out, opaque=["token"])


@pytest.mark.parametrize("logo", ["<svg>x</svg><svg>y</svg>", "<img src=x>", "hello <svg></svg>", "<svg>unclosed"])
def test_a_logo_must_be_one_svg_element(logo):
    with pytest.raises(ValueError, match="logo must be one <svg>...</svg> element"):
        define_connector("v", {}, info=VendorInfo(logo=logo))


def test_a_good_logo_and_an_https_homepage_are_kept():
    connector = define_connector("v", {}, info=VendorInfo(title="Vendor", logo=f"  {SVG}\n", homepage="https://v.example.com"))
    assert connector.info.title == "Vendor"


@pytest.mark.parametrize("homepage", ["http://v.example.com", "v.example.com", "https://"])
def test_a_homepage_must_be_an_https_url(homepage):
    with pytest.raises(ValueError, match="homepage must be an https: URL"):
        define_connector("v", {}, info=VendorInfo(homepage=homepage))


def test_resolving_lists_every_problem_in_one_message():
    one = define_connector("dup", {"x": {"get": op(effect="read", input=In, output=Out)}})
    two = define_connector("dup", {"x": {"get": op(effect="read", input=In, output=Out)}})

    def body(ctx, input):
        return {}

    workflows = [
        define_workflow(name="drift", run=body),
        define_workflow(name="uses-nothing-real", uses=["nope.x.y"], run=body),
    ]
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[one, two], workflows=workflows))
    problems = refused.value.problems
    assert len(problems) == 3
    text = str(refused.value)
    assert "Two connectors declare dup.x.get" in text
    assert 'named "drift", the name of a built-in workflow' in text
    assert "uses nope.x.y, which no connector in the config declares" in text


def test_a_phrase_naming_a_field_the_input_lacks_stops_the_config_naming_op_and_field():
    shop = define_connector("shop", {"order": {"get": op(effect="read", input=In, output=Out, given="order {order_id} exists")}})
    with pytest.raises(ConfigError, match=r"shop.order.get's given phrase 'order \{order_id\} exists' names \{order_id\}, which is not an input field; its fields are id"):
        resolve_config(SanomaConfig(connectors=[shop]))
