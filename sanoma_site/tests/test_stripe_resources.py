"""Stripe's products and webhook endpoints as resources: drift, plan and apply on Stripe's real
driver against the local Stripe server, and a webhook endpoint's signing secret never kept."""
from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings

from changes import services
from connectors.vendors.stripe import stripe
from connectors.vendors.stripe.tests.stripe_server import API_KEY, StripeServer
from runs import selectors
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, SanomaConfig, resolve_config
from runs.models import Run
from runs.testing import make_user

MUG = 'mug = stripe.product(id="prod_mug", name="Mug", metadata={"sku": "mug"})\n'
HOOK = ('hook = stripe.webhook_endpoint(url="https://acme.example/stripe/events", '
        'enabled_events=["charge.refunded", "payment_intent.succeeded"])\n')


def write(root: Path, *declarations: str) -> None:
    path = root / "resources" / "stripe.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("from connectors.vendors.stripe import stripe\n" + "".join(declarations))


@pytest.fixture
def site(db, tmp_path, monkeypatch) -> Iterator[tuple[ResolvedConfig, Path, StripeServer]]:
    with StripeServer() as server:
        monkeypatch.setenv("STRIPE_API_KEY", API_KEY)
        monkeypatch.setenv("STRIPE_API_BASE", server.url)
        root = tmp_path / "payco"
        write(root, MUG, HOOK)
        config = resolve_config(SanomaConfig(app_name="payco", connectors=[stripe], root=root))
        set_config(config)
        make_user("ops", perms=["runs.start_workflow"])
        with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
            yield config, root, server
        set_config(None)


def drift(config: ResolvedConfig) -> dict[str, Any]:
    return services.drift(by="ops", here=True, config=config)[1]


def apply(config: ResolvedConfig) -> tuple[Run, dict[str, Any]]:
    run = services.start("apply", by="ops", config=config)
    followed = services.follow(run, here=True, config=config, timeout=60)
    assert followed.ended, followed
    return followed.run, services.report(followed.run)


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e["status"] for e in report["resources"]}


def test_products_and_webhook_endpoints_are_made_kept_and_removed_as_declared(site):
    config, root, server = site
    assert statuses(drift(config)) == {"mug": "gone", "hook": "gone"}
    run, out = apply(config)
    assert [(c["action"], c["name"], c["status"]) for c in out["changes"]] == [
        ("create", "mug", "done"), ("create", "hook", "done")], out
    assert server.stripe.products["prod_mug"]["metadata"] == {"sku": "mug"}
    [endpoint] = server.stripe.webhook_endpoints.values()
    assert endpoint["secret"].startswith("whsec_")  # Stripe made one and showed it once
    ledger = json.dumps(selectors.ledger_of(run_id=run.id))
    assert "whsec_" not in ledger and "secret" not in json.dumps(out)  # never kept
    assert statuses(drift(config)) == {"mug": "clean", "hook": "clean"}

    # Someone changes both by hand at Stripe: drift shows it, apply puts them back.
    server.stripe.products["prod_mug"]["name"] = "Big mug"
    endpoint["enabled_events"] = ["charge.refunded"]
    changed = drift(config)
    assert statuses(changed) == {"mug": "drifted", "hook": "drifted"}
    plan = services.plan(changed, by="ops", config=config)
    assert [(c["action"], c["name"]) for c in plan["changes"]] == [("update", "mug"), ("update", "hook")]
    _, out = apply(config)
    assert [c["status"] for c in out["changes"]] == ["done", "done"], out
    assert server.stripe.products["prod_mug"]["name"] == "Mug"
    assert sorted(endpoint["enabled_events"]) == ["charge.refunded", "payment_intent.succeeded"]
    updates = server.requests_to("POST", f"/v1/webhook_endpoints/{endpoint['id']}")
    assert updates and updates[-1].header("Idempotency-Key")
    assert statuses(drift(config)) == {"mug": "clean", "hook": "clean"}

    # No longer declared: sanoma made them, so sanoma deletes them.
    write(root)
    _, out = apply(config)
    assert sorted((c["action"], c["status"]) for c in out["changes"]) == [("delete", "done"), ("delete", "done")], out
    assert not server.stripe.products and not server.stripe.webhook_endpoints


def test_a_product_refused_by_stripe_fails_its_change_naming_stripes_code(site):
    config, root, server = site
    server.stripe.products["prod_mug"] = {"id": "prod_mug", "object": "product", "name": "Mug", "description": None,
                                          "active": True, "metadata": {}, "created": 1}
    write(root, MUG)
    server.fault(status=400, method="GET", path="/v1/products/prod_mug", times=10,
                 body={"error": {"type": "invalid_request_error", "code": "parameter_invalid", "message": "bad"}})
    report = drift(config)
    [mug] = report["resources"]
    assert mug["status"] == "error" and "parameter_invalid" in json.dumps(mug)
