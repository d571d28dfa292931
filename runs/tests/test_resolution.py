"""Resolving a company's config: every problem with the connectors and workflows, in one message."""
from __future__ import annotations

import pytest
from pydantic import BaseModel

from connectors import define_connector, op
from connectors.errors import ConfigError
from runs.config.resolution import SanomaConfig, resolve_config
from runs.config.workflows import define_workflow


class In(BaseModel):
    id: str


class Out(BaseModel):
    ok: bool = True


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
    shop = define_connector(
        "shop", {"order": {"get": op(effect="read", input=In, output=Out, given="order {order_id} exists")}}
    )
    refusal = (r"shop.order.get's given phrase 'order \{order_id\} exists' names \{order_id\}, "
               r"which is not an input field; its fields are id")
    with pytest.raises(ConfigError, match=refusal):
        resolve_config(SanomaConfig(connectors=[shop]))
