"""`manage.py resources [--json]` and `GET /api/resources`: the data files of the config's root."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.selectors import declared_resources
from company.vendors.shop import shop
from connectors.errors import ConfigError
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig
from runs.testing import make_user

COMPANY = Path(__file__).resolve().parents[2] / "company"


def config_at(root: Path | None) -> ResolvedConfig:
    return ResolvedConfig(app_name="acme", version="acme@test", root=root, connectors=[shop], ops={}, drivers={},
                          fakes={}, workflows={}, policy=None, steps=[], demo={})


@pytest.fixture
def use_root():
    def use(root: Path | None) -> None:
        set_config(config_at(root))

    yield use
    set_config(None)


@pytest.fixture
def broken_root(tmp_path):
    root = tmp_path / "acme"
    (root / "resources").mkdir(parents=True)
    (root / "resources" / "catalog.py").write_text(
        "from company.vendors.shop import shop\n"
        'mug = shop.product(sku="mug", title="Mug", price_cents=1500)\n'
        'cup = shop.product(sku="cup", title="Cup", price_cents=-1)\n'
    )
    return root


def run(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("resources", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_the_command_lists_the_example_companys_resources(use_root):
    use_root(COMPANY)
    out, err = run()
    assert err == ""
    lines = out.splitlines()
    assert lines[0].endswith('resources/catalog.py:4  shop.product  mug  sku="mug", title="Mug", price_cents=1500, '
                             'tags=["kitchen"]')
    assert any('shop.webhook  orders_hook' in line and 'signing_secret=secret("SHOP_WEBHOOK_SECRET")' in line
               for line in lines)
    assert any("shop.staff_role  alice_support  user=resources/staff.py#alice" in line for line in lines)
    assert any(line.endswith('resources/staff.py:15  sanoma.group  owners  name="owners"') for line in lines)
    assert lines[-1] == "23 resources in 5 files, 0 problems"


def test_the_command_prints_problems_at_file_line_column_and_fails(use_root, broken_root):
    use_root(broken_root)
    err = io.StringIO()
    with pytest.raises(CommandError, match="1 problems in the data files"):
        call_command("resources", stdout=io.StringIO(), stderr=err)
    assert err.getvalue().strip().endswith(
        "resources/catalog.py:3:56: cup: price_cents: Input should be greater than 0")


def test_the_command_as_json(use_root, broken_root):
    use_root(broken_root)
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("resources", "--json", stdout=out, stderr=io.StringIO())
    document = json.loads(out.getvalue())
    assert [r["id"] for r in document["resources"]] == ["resources/catalog.py#mug"]
    assert document["problems"] == [{"file": "resources/catalog.py", "line": 3, "column": 56, "resource":
                                     "resources/catalog.py#cup",
                                     "message": "cup: price_cents: Input should be greater than 0"}]
    assert document["root"] == str(broken_root.resolve())


def test_a_config_without_a_root_is_a_config_error(use_root):
    use_root(None)
    with pytest.raises(ConfigError, match="has no root folder"):
        declared_resources()
    with pytest.raises(CommandError, match="has no root folder"):
        run()


@pytest.mark.django_db
def test_the_api_answers_the_declared_resources_to_a_signed_in_caller(use_root, broken_root):
    use_root(broken_root)
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=make_user("ada"))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    reply = client.get("/api/resources")
    assert reply.status_code == 200
    assert reply["Cache-Control"] == "no-store"
    body = reply.json()
    assert body["files"] == ["resources/catalog.py"]
    assert body["resources"] == [{"id": "resources/catalog.py#mug", "type": "shop.product", "name": "mug",
                                  "values": {"sku": "mug", "title": "Mug", "price_cents": 1500}, "references": [],
                                  "file": "resources/catalog.py", "line": 2, "column": 1}]
    assert body["problems"][0]["column"] == 56
    use_root(COMPANY)
    body = client.get("/api/resources/").json()
    assert body["problems"] == [] and len(body["resources"]) == 23
    role = next(r for r in body["resources"] if r["id"] == "apps/support/resources/agents.py#alice_support")
    assert role["values"] == {"user": {"ref": "resources/staff.py#alice"}, "role": "support"}


@pytest.mark.django_db
def test_the_api_refuses_a_caller_who_is_not_signed_in(use_root):
    use_root(COMPANY)
    reply = APIClient().get("/api/resources")
    assert reply.status_code == 401
    assert reply.json()["code"] == "not_authenticated"
