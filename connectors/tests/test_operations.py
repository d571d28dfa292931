"""Declaring connectors: operations, effects, vendor info."""
from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from connectors import VendorInfo, define_connector, op


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
    assert publish.target is not None
    assert publish.target(In(id="7")) == "post/7"
    assert ghost.op("ghost.post.create").idempotent is False
    assert publish.plain() == {"id": "ghost.post.publish", "vendor": "ghost", "resource": "post", "name": "publish",
                               "effect": "publish"}


def test_an_unknown_effect_is_refused_naming_the_effects():
    with pytest.raises(ValueError, match="effect must be one of read, write, publish, send, money, access"):
        op(effect="delete", input=In, output=Out)


def test_schemas_must_be_pydantic_models():
    not_a_model: Any = dict  # deliberately the wrong type: refused at run time
    with pytest.raises(TypeError, match="input must be a pydantic model class"):
        op(effect="read", input=not_a_model, output=Out)


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
