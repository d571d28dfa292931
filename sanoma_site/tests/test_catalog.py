"""The desk's catalog on the example company: a page per connector (operations with effects,
idempotency, timeouts, input and output fields, phrases, the workflows and scenarios using each,
resource types, credentials status) and per workflow (trigger and next fires, input fields,
operations, source, runs, scenarios, who may start it)."""
from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client

from runs import services
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.seed import seed_person

pytestmark = pytest.mark.django_db


@pytest.fixture
def company():
    config = load_config(Path(settings.BASE_DIR) / "company", fakes="instance")
    set_config(config)
    yield config
    set_config(None)


@pytest.fixture
def root() -> Client:
    client = Client()
    client.force_login(seed_person(username="root", superuser=True))
    return client


def test_the_home_page_links_the_catalog(company, root):
    home = root.get("/admin/").content.decode()
    assert "/admin/catalog/workflows/" in home and "/admin/catalog/connectors/" in home


def test_a_connectors_page_shows_each_operation_and_who_uses_it(company, root):
    assert "Shop" in root.get("/admin/catalog/connectors/").content.decode()
    page = root.get("/admin/catalog/connectors/shop/").content.decode()
    assert 'id="op-shop.order.refund"' in page and 'class="sanoma-effect money"' in page
    assert "<code>amount_cents</code>" in page  # the input, as a table of fields
    assert "/admin/catalog/workflows/refund/" in page  # a workflow that uses it
    assert "scenarios/refund.feature:" in page and "company/scenarios/" not in page  # from the root
    assert "SHOP_API_URL" in page and "shop.product" in page  # credentials and resource types
    assert root.get("/admin/catalog/connectors/nope/").status_code == 404


def test_a_workflows_page_shows_its_trigger_input_operations_source_runs_and_starters(company, root):
    seed_person(username="alice", groups=("staff",), perms=("runs.start_workflow",))
    run = services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 500}, started_by="alice",
                         config=company)
    page = root.get("/admin/catalog/workflows/refund/").content.decode()
    assert "started by hand" in page and "<code>order_id</code>" in page
    assert "shop.order.refund" in page and "def run(ctx: Ctx, input: RefundInput):" in page
    assert '<ol class="sanoma-outline" id="outline">' in page and "<strong>op</strong> shop.order.refund" in page
    assert run.id in page and "users alice" in page and "refund.feature" in page
    listing = root.get("/admin/catalog/workflows/").content.decode()
    assert "support.onboard-team" in listing and "await-shipment" in listing
    assert root.get("/admin/catalog/workflows/nope/").status_code == 404


def test_a_scheduled_workflows_page_shows_its_next_fires(company, root):
    page = root.get("/admin/catalog/workflows/refunds-report/").content.decode()
    assert "cron " in page and "; next: <time" in page
