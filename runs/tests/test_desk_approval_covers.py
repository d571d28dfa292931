"""What an approval lets through besides its own call, said to its approver: an approved hold lets
every later call of the operations it covers in the run through that the same rules hold for the
same approver, without asking again (another rule's hold asks again); the inbox row, the approval's
page and the run's Approvals say so in words, naming the rules.

On the example company (`company/`), whose refund the policy holds for finance-lead (and, past the
day's budget, by a second rule)."""
from __future__ import annotations

import re

import pytest

from runs.engine.drain import drain
from runs.models import Approval
from runs.tests.test_desk_approve import company, desk, refund  # noqa: F401 (company: the fixture)

pytestmark = pytest.mark.django_db

SAID = ("Also lets through every later shop.order.refund of this run held for finance-lead by rule "
        "refund-daily-budget or refunds-need-finance, without asking again")


def test_the_inbox_row_says_the_approval_lets_later_calls_of_its_operation_through(company):  # noqa: F811
    refund(company, "1002", 120000)
    page = desk("finance-lead").get("/admin/runs/approval/").content.decode()
    [row] = re.findall(r'<td class="field-lets_through">(.*?)</td>', page, re.DOTALL)
    assert "<code>shop.order.refund</code>" in row
    assert f'<span class="sanoma-covers">{SAID}</span>' in row


def test_the_approval_page_says_it_under_what_the_call_does(company):  # noqa: F811
    run = refund(company, "1002", 120000)
    approval = Approval.objects.get(run=run)
    page = desk("finance-lead").get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert f'id="approval-covers-said"><strong>{SAID}.</strong>' in page
    rules = '<code>refund-daily-budget</code>, <code>refunds-need-finance</code>'
    assert f'<tr><th>rules</th><td id="approval-rules">{rules}</td></tr>' in page


def test_the_run_page_names_what_an_approval_covers_and_links_a_decided_one_without_open(company):  # noqa: F811
    run = refund(company, "1002", 120000)
    approval = Approval.objects.get(run=run)
    client = desk("finance-lead")
    page = client.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    [covers] = re.findall(r'<td class="field-lets_through">(.*?)</td>', page, re.DOTALL)
    assert covers.strip() == "<p>shop.<wbr>order.<wbr>refund</p>"  # a narrow column breaks it after a dot
    assert '["shop.order.refund"]' not in page and "[&quot;shop.order.refund&quot;]" not in page
    assert f"{approval.approval_id}</a> (decide)" in page
    client.post(f"/admin/runs/approval/{approval.pk}/change/", {"_approve": "1", "note": ""})
    drain(company)
    approval.refresh_from_db()
    assert approval.status == "approved"
    page = client.get(f"/admin/runs/run/{run.id}/change/").content.decode()
    [link] = re.findall(r'<td class="field-approval">(.*?)</td>', page, re.DOTALL)
    assert link.strip().endswith(f"{approval.approval_id}</a></p>"), link
    assert "(open)" not in link
