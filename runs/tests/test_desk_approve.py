"""What an approver sees and decides: the inbox (the desk's, its badge and `/api/approvals`, one
answer for everyone, superusers included) says of each held call what it does in its operation's
words, how much money it moves with its currency, who started the run and when it was asked; a
money operation's ceiling refuses a call above it before the policy or the vendor sees it, and the
example company's refund refuses it at the start.

On the example company (`company/`, its shop on its fake) and its people (`runs.seed`)."""
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from company.resources import staff as company_staff
from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from runs import services
from runs.authoring import define_workflow
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine.drain import drain
from runs.models import Approval, LedgerRecord, Run
from runs.policies.python_policies import approve, define_policy
from runs.seed import seed_declared, seed_person

pytestmark = pytest.mark.django_db

COMPANY = Path(__file__).resolve().parents[2] / "company"


@pytest.fixture
def company(tmp_path: Path) -> Iterator[ResolvedConfig]:
    """The example company on its fakes, with the demo's people (admin, alice, finance-lead, sam, ...)."""
    config = load_config(COMPANY, fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    seed_declared(vars(company_staff).values())
    try:
        yield config
    finally:
        set_config(None)


def _user(username: str):
    return get_user_model().objects.get(username=username)


def desk(username: str) -> Client:
    client = Client()
    client.force_login(_user(username))
    return client


def api(username: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=_user(username))[0].key}")
    return client


def refund(config: ResolvedConfig, order_id: str, cents: int, *, by: str = "alice") -> Run:
    """A refund alice starts, run until the policy holds its money for finance-lead."""
    run = services.start(workflow="refund", input={"order_id": order_id, "amount_cents": cents}, started_by=by)
    drain(config)
    run.refresh_from_db()
    assert run.status == "waiting", (run.status, run.error)
    return run


def inbox_rows(client: Client) -> list[str]:
    page = client.get("/admin/runs/approval/")
    assert page.status_code == 200
    return [str(a.pk) for a in page.context["cl"].result_list]


def api_rows(client: APIClient) -> list[str]:
    answer = client.get("/api/approvals").json()
    ids = {(a.run_id, a.approval_id): str(a.pk) for a in Approval.objects.all()}
    return [ids[(row["run_id"], row["id"])] for row in answer["results"]]


def test_the_desk_inbox_its_badge_and_the_api_agree_for_the_approver_a_superuser_and_an_operator(company):
    """The README: a superuser or an operator is not every approver; the inbox lists what you may
    decide. The desk listed every approval to a superuser while `/api/approvals` and the badge
    listed none."""
    held = [refund(company, "1002", 120000), refund(company, "1001", 1500)]
    seed_person(username="olga", staff=True, perms=("runs.view_any_run", "runs.operate_runs"))
    for who, expected in (("finance-lead", 2), ("admin", 0), ("olga", 0), ("alice", 0), ("sam", 0)):
        client = desk(who)
        assert inbox_rows(client) == api_rows(api(who)), who
        assert len(inbox_rows(client)) == expected, who
        badge = re.search(r'id="inbox-badge"[^>]*>Inbox(?: <strong class="sanoma-badge">(\d+)</strong>)?',
                          client.get("/admin/").content.decode())
        assert badge is not None and int(badge.group(1) or 0) == expected, who
    # The approval's page stays open to whoever may see the run: the superuser reads it, and may not decide.
    approval = Approval.objects.get(run=held[0])
    page = desk("admin").get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert 'id="why-not"' in page and "admin is not the approver; finance-lead is" in page


def test_an_inbox_row_says_what_the_call_does_how_much_who_started_it_and_when(company):
    refund(company, "1002", 90000)  # within the day's budget (budget.cedar): held as every refund is
    refund(company, "1001", 1500)
    page = desk("finance-lead").get("/admin/runs/approval/").content.decode()
    [body] = re.findall(r'<table id="result_list">.*?<tbody>(.*?)</tbody>', page, re.DOTALL)
    rows = re.findall(r"<tr>.*?</tr>", body, re.DOTALL)
    assert len(rows) == 2
    first, second = rows  # newest first
    assert '<strong class="sanoma-summary">Refund 15.00 EUR on order 1001</strong>' in first
    assert '<strong class="sanoma-summary">Refund 900.00 EUR on order 1002</strong>' in second
    for row, amount in ((first, "15.00 EUR"), (second, "900.00 EUR")):
        assert f'<td class="field-amount"><span class="sanoma-money">{amount}</span></td>' in row
        assert '<td class="field-started_by">alice</td>' in row
        assert "Refund needs finance" in row  # the approval's title, under what the call does
        assert '<div class="sanoma-under">refund</div>' in row  # the run's workflow
        # Asked when: the desk's one way of showing a moment, in the viewer's zone, UTC on hover.
        asked = re.search(r'<td class="field-requested"><time datetime="[^"]+" title="[^"]+ UTC">'
                          r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \((?:just now|[^)]+ ago)\)</time></td>", row)
        assert asked, row


def test_the_api_inbox_carries_the_summary_the_amount_and_the_starter(company):
    run = refund(company, "1002", 120000)
    [row] = api("finance-lead").get("/api/approvals").json()["results"]
    assert {k: row[k] for k in ("run_id", "summary", "amount", "started_by", "workflow", "op")} == {
        "run_id": run.id, "summary": "Refund 1,200.00 EUR on order 1002",
        "amount": {"cents": 120000, "currency": "EUR", "shown": "1,200.00 EUR"}, "started_by": "alice",
        "workflow": "refund", "op": "shop.order.refund"}
    assert row["run"] == {"run_id": run.id, "workflow": "refund", "status": "waiting", "started_by": "alice"}


def test_the_approval_page_shows_the_summary_the_amount_the_starter_and_the_workflow(company):
    run = refund(company, "1002", 120000)
    approval = Approval.objects.get(run=run)
    page = desk("finance-lead").get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert 'id="approval-summary">Refund 1,200.00 EUR on order 1002<' in page
    assert 'id="approval-amount">1,200.00 EUR<' in page
    assert 'id="approval-starter">alice<' in page and 'id="approval-workflow">refund<' in page


def test_the_example_refund_above_its_ceiling_is_refused_at_the_start_and_nothing_starts(company):
    reply = api("alice").post("/api/runs", {"workflow": "refund", "input": {"order_id": "1002",
                                                                            "amount_cents": 9 * 10**15}},
                              format="json")
    assert reply.status_code == 400, reply.json()
    assert reply.json()["code"] == "invalid_input"
    assert reply.json()["issues"] == [{
        "path": ["amount_cents"], "code": "above_ceiling",
        "message": "90,000,000,000,000.00 EUR is above the ceiling of 10,000.00 EUR that shop.order.refund declares"}]
    assert not Run.objects.exists()
    at_ceiling = api("alice").post("/api/runs", {"workflow": "refund", "input": {"order_id": "1002",
                                                                                 "amount_cents": 1_000_000}},
                                   format="json")
    assert at_ceiling.status_code == 201


class Pay(BaseModel):
    order_id: str
    amount_cents: int


class Paid(BaseModel):
    ok: bool = True


def payments():
    """A vendor whose refund declares its amount, currency and a ceiling of 1,000.00 EUR."""
    pay = define_connector("pay", {"order": {"refund": op(
        effect="money", input=Pay, output=Paid, amount="amount_cents", currency="EUR", ceiling=100_000,
        summary="Refund {amount_cents:money} on order {order_id}")}})

    def refund_it(state, i, c):
        state.setdefault("refunds", []).append(i.amount_cents)
        return {"ok": True}

    def fake(file=None):
        return define_fake(pay, initial=dict, ops={"order": {"refund": refund_it}}, file=file)

    return with_setup(pay, fake=fake)


class Amount(BaseModel):
    cents: int


def _pay_back(ctx, input: Amount):
    ctx.pay.order.refund({"order_id": "1001", "amount_cents": input.cents})
    return {}


pay_back = define_workflow(name="pay-back", input=Amount, uses=["pay.order.refund"], run=_pay_back)


def test_a_call_above_its_ceiling_fails_the_run_before_the_policy_or_the_vendor_sees_it(engine_for):
    """The workflow computes the amount, so only the call can refuse it: `invalid_input` at the
    amount's path, with no approval asked, no decision recorded, nothing sent to the vendor."""
    engine = engine_for(pay_back, connectors=[payments()],
                        policy=define_policy(lambda call: approve("bob"), version="p"))
    run = engine.run("pay-back", {"cents": 100_001})
    assert run.status == "failed"
    assert run.error["code"] == "invalid_input"
    assert run.error["data"]["issues"] == [{"path": ["amount_cents"], "code": "above_ceiling",
                                            "message": "1,000.01 EUR is above the ceiling of 1,000.00 EUR that "
                                                       "pay.order.refund declares"}]
    assert not Approval.objects.filter(run=run).exists()
    assert not LedgerRecord.objects.filter(run_id=run.id, kind__in=["op.called", "approval.requested"]).exists()
    assert engine.config.fakes["pay"].state.get("refunds") is None and engine.config.fakes["pay"].calls == []
    within = engine.run("pay-back", {"cents": 100_000})
    assert within.status == "waiting" and Approval.objects.get(run=within).op == "pay.order.refund"


def test_a_starter_in_the_approver_group_is_not_offered_what_they_may_not_decide(company):
    """finance-lead starts a refund the policy holds for finance-lead: separation of duties refuses
    their decision, so their inbox does not offer it; the site's opt-in brings it back."""
    run = refund(company, "1002", 5000, by="finance-lead")
    assert Approval.objects.get(run=run).approver == "finance-lead"
    assert inbox_rows(desk("finance-lead")) == api_rows(api("finance-lead")) == []
    with override_settings(SANOMA_ALLOW_SELF_APPROVAL=True):
        assert len(inbox_rows(desk("finance-lead"))) == len(api_rows(api("finance-lead"))) == 1


def _queries(client: Client, url: str) -> int:
    client.get(url)
    with CaptureQueriesContext(connection) as captured:
        assert client.get(url).status_code == 200
    return len(captured.captured_queries)


def test_the_inbox_of_held_refunds_costs_the_same_queries_for_5_and_for_50_rows(company):
    counts = {}
    for rows, more in ((5, 5), (50, 45)):
        for n in range(more):
            services.start(workflow="refund", input={"order_id": "1002", "amount_cents": 100 + n}, started_by="alice")
        drain(company)
        assert Approval.objects.filter(status="pending").count() == rows
        counts[rows] = (_queries(desk("finance-lead"), "/admin/runs/approval/?all=&status=pending"),
                        _queries(desk("finance-lead"), "/api/approvals?limit=100"))
    assert counts[5] == counts[50], counts


def test_the_catalog_and_the_config_say_what_a_money_operation_declares(company):
    page = desk("alice").get("/admin/catalog/connectors/shop/").content.decode()
    assert ('<td class="sanoma-money-rule">amount_cents (minor units of EUR), at most 10,000.00 EUR a call</td>'
            in page)
    assert "<th>summary</th><td>Refund {amount_cents:money} on order {order_id}</td>" in page
    [shop] = [c for c in api("alice").get("/api/config").json()["connectors"] if c["vendor"] == "shop"]
    [refund_op] = [o for o in shop["operations"] if o["id"] == "shop.order.refund"]
    assert refund_op["money"] == {"amount": "amount_cents", "currency": "EUR", "ceiling": 1_000_000}
