"""`describe_config` and `GET /api/config` on the example company: everything the repo declares,
as plain JSON, and never a credential or a secret's value."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.conf import settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from runs.config.describe import describe_config
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.testing import make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def company():
    config = load_config(Path(settings.BASE_DIR) / "company", fakes="instance")
    set_config(config)
    yield config
    set_config(None)


def test_the_config_described_holds_workflows_connectors_resources_and_the_policy(company, monkeypatch):
    monkeypatch.setenv("SHOP_API_KEY", "sk_live_do_not_show_0123456789")
    described = describe_config(company)
    json.dumps(described)  # plain JSON all the way down
    workflows = {w["name"]: w for w in described["workflows"]}
    assert workflows["refund"]["input"]["required"] == ["order_id", "amount_cents"]
    assert "shop.order.refund" in workflows["refund"]["uses"] and "def run(ctx" in workflows["refund"]["source"]
    assert workflows["refunds-report"]["trigger"]["schedule"] == "0 8 * * 1-5"
    outline = workflows["refund"]["outline"]
    assert outline["file"] == "workflows/refund.py" and outline["problems"] == []
    assert [n["op"] for n in outline["nodes"] if n["kind"] == "op"][:2] == ["shop.order.get", "shop.order.refund"]
    shop = next(c for c in described["connectors"] if c["vendor"] == "shop")
    assert shop["logo"].startswith("data:image/svg+xml;base64,")
    refund = next(o for o in shop["operations"] if o["id"] == "shop.order.refund")
    assert (refund["effect"], refund["idempotent"]) == ("money", False)
    assert {"name": "SHOP_API_KEY", "description": "an API key with order and staff scopes", "required": True} in (
        shop["environment"])
    assert {t["type"] for t in shop["types"]} >= {"shop.product", "shop.staff_role"}
    assert described["resources"]["resources"] and described["resources"]["problems"] == []
    assert described["policy"]["kind"] == "CedarPolicy" and described["policy"]["version"]
    assert "sk_live_do_not_show" not in json.dumps(described)


def test_the_api_serves_it_to_a_signed_in_caller_only(company):
    client = APIClient()
    assert client.get("/api/config").status_code in (401, 403)
    user = make_user("reader")
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    answer = client.get("/api/config")
    assert answer.status_code == 200 and answer.json()["app"] == company.app_name
