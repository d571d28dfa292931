"""Approvals announced in Slack: the outbox row written with the approval, posted once after commit,
a lost post found by the reconcile read instead of posted again, a 429 waited out, a final refusal
kept with Slack's code; and the config's checks."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import timedelta

import pytest
from django.conf import settings as settings_module
from django.test import Client
from pydantic import BaseModel

from company.vendors.shop import shop
from company.workflows.newsletter import newsletter
from connectors.errors import ConfigError
from connectors.vendors.resend import resend
from connectors.vendors.slack import slack, slack_channel
from connectors.vendors.slack.driver import make_driver
from connectors.vendors.slack.tests.slack_server import TOKEN, SlackServer
from runs.approvals import announce
from runs.approvals.announce_models import AnnouncementStatus, ApprovalAnnouncement
from runs.authoring import SanomaConfig, allow, approve, define_policy, define_workflow
from runs.config.registry import set_config
from runs.config.resolution import resolve_config
from runs.engine import clock
from runs.models import Approval, RunStatus
from runs.services import start
from runs.testing import drain, make_user

HOLD_SENDS = define_policy(lambda call: approve({"group": "owners"}, "Newsletter needs an owner")
                           if call.op["id"] == "resend.broadcast.send" else allow(), version="hold-sends")
INPUT = {"subject": "December news", "html": "<p>Hello</p>"}


def _config(channel: str = "#approvals"):
    return SanomaConfig(app_name="acme", connectors=[resend, slack], workflows=[newsletter], policy=HOLD_SENDS,
                        announce_approvals=slack_channel(channel, desk="https://desk.acme.example"))


@pytest.fixture
def server(monkeypatch):
    with SlackServer() as running:
        monkeypatch.setenv("SLACK_BOT_TOKEN", TOKEN)
        monkeypatch.setenv("SLACK_API_URL", running.url)
        monkeypatch.setenv("RESEND_API_KEY", "re_unused_0000")
        yield running


@pytest.fixture
def held(db):
    """A newsletter run held for its send, on every fake (Slack's too)."""
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(_config(), fakes="instance")
    set_config(config)
    run = start(workflow="newsletter", input=INPUT, started_by="alice", config=config)
    drain(config)
    run.refresh_from_db()
    yield config, run
    set_config(None)


def test_the_held_send_is_announced_with_what_who_and_where_to_decide(held):
    config, run = held
    assert (run.status, run.waiting_for) == (RunStatus.WAITING, "approval")
    [row] = ApprovalAnnouncement.objects.all()
    approval = Approval.objects.get(run=run)
    assert (row.approval_id, row.status, row.attempts) == (approval.pk, AnnouncementStatus.PENDING, 0)
    text = row.message["text"]
    assert row.message["channel"] == "#approvals"
    assert "*Newsletter needs an owner*" in text and f"run {run.id} of newsletter, started by alice" in text
    assert "Asked: Send broadcast bc_1 to its segment" in text and "Who decides: group owners" in text
    assert f"<https://desk.acme.example/admin/runs/approval/{approval.pk}/change/|Decide in the desk>" in text
    assert announce.deliver_due(config=config) == ["delivered"]
    [message] = config.fakes["slack"].state["channels"]["C0APPROVALS"]["messages"]
    assert message["text"] == text
    row.refresh_from_db()
    assert (row.status, (row.output or {})["channel"], row.attempts) == (AnnouncementStatus.DELIVERED, "C0APPROVALS", 1)
    assert announce.deliver_due(config=config) == []  # delivered once


def test_a_final_refusal_keeps_slacks_code_and_the_run_goes_on(held):
    config, run = held
    config.fakes["slack"].fail_next("slack.message.post", slack_refusal("channel_not_found"))
    assert announce.deliver_due(config=config) == ["failed"]
    row = ApprovalAnnouncement.objects.get()
    assert (row.status, (row.error or {})["vendor_code"]) == (AnnouncementStatus.FAILED, "channel_not_found")
    run.refresh_from_db()
    assert run.status == RunStatus.WAITING  # the approval waits as before


def slack_refusal(code: str):
    from runs.authoring import DriverError

    return DriverError(f"slack refused chat.postMessage: {code}", vendor_code=code, retryable=False)


@pytest.fixture
def on_server(db, server):
    """The held run with Slack on its real driver, at the local server; the rest on fakes."""
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(_config(), fakes="instance")
    real = make_driver()
    for op_id in slack.operations:
        config.drivers[op_id] = real
    set_config(config)
    start(workflow="newsletter", input=INPUT, started_by="alice", config=config)
    drain(config)
    yield config
    set_config(None)


def test_a_429_is_waited_out_and_a_failed_post_is_looked_for_before_posting_again(on_server, server):
    config = on_server
    server.rate_limit(retry_after=20)
    assert announce.deliver_due(config=config) == ["retry"]
    row = ApprovalAnnouncement.objects.get()
    error = row.error or {}
    assert (row.status, error["status"], error["vendor_code"]) == (AnnouncementStatus.PENDING, 429, "ratelimited")
    assert announce.deliver_due(config=config) == []  # not before its Retry-After
    clock.advance(timedelta(seconds=21))
    server.fault(status=502, body={"ok": False, "error": "fatal_error"}, path="/chat.postMessage")
    assert announce.deliver_due(config=config) == ["retry"]  # a 502 may have landed: in doubt
    row.refresh_from_db()
    assert row.status == AnnouncementStatus.SENDING
    clock.advance(timedelta(seconds=60))
    assert announce.deliver_due(config=config) == ["delivered"]  # not in the channel: posted again
    assert len(server.requests_to("GET", "/conversations.history")) == 1
    row.refresh_from_db()
    assert (row.status, row.reconciled, row.attempts) == (AnnouncementStatus.DELIVERED, False, 3)
    assert len(server.messages("C0APPROVALS")) == 1


def test_a_post_whose_answer_was_lost_is_found_in_the_channel_and_not_posted_again(on_server, server, monkeypatch):
    config = on_server
    monkeypatch.setattr(announce, "TIMEOUT", 0.5)
    server.fault(delay=1.5, path="/chat.postMessage")  # Slack takes it, but answers too late
    assert announce.deliver_due(config=config) == ["retry"]
    row = ApprovalAnnouncement.objects.get()
    assert (row.status, (row.error or {})["name"]) == (AnnouncementStatus.SENDING, "DriverTimeout")
    server_done = time.monotonic() + 5
    while not server.messages("C0APPROVALS") and time.monotonic() < server_done:
        time.sleep(0.05)
    clock.advance(timedelta(seconds=60))
    assert announce.deliver_due(config=config) == ["delivered"]
    row.refresh_from_db()
    assert (row.status, row.reconciled) == (AnnouncementStatus.DELIVERED, True)
    [message] = server.messages("C0APPROVALS")
    assert row.output == {"channel": "C0APPROVALS", "ts": message["ts"]}
    assert len(server.requests_to("POST", "/chat.postMessage")) == 1


def manage_check(**environ: str) -> subprocess.CompletedProcess[str]:
    """`manage.py check` on the example company, in a process whose environment holds only `environ`."""
    env = {k: os.environ[k] for k in ("PATH", "HOME", "LANG") if k in os.environ}
    return subprocess.run([sys.executable, "manage.py", "check"], cwd=settings_module.BASE_DIR, capture_output=True,
                          text=True, timeout=120, env={**env, **environ})


def test_a_site_announcing_with_no_address_for_its_links_is_refused_at_startup(tmp_path):
    """The example company announces in #approvals without desk=: in production, where
    SANOMA_SITE_URL has no default, its commands (the worker's among them) refuse to start until it
    is set; in development the site's address is ./demo's."""
    production = {"SANOMA_VAR_DIR": str(tmp_path), "DJANGO_ENV": "production", "DJANGO_ALLOWED_HOSTS": "x.example",
                  "DJANGO_SECRET_KEY": "kq8-4Zr_w1Lh7Vx2Pn6Ty0Bm3Jc9Fd5Gs8Ha2We4Ru7Io1Ep3Qt6Yz0Xk9Cv5Bn2Ml"}
    refused = manage_check(**production)
    assert refused.returncode != 0
    assert ("company/sanoma_config.py: (sanoma.E013) announce_approvals posts each approval in #approvals with a "
            "link to the desk, and the desk's address is unknown: neither slack_channel(desk=...) nor "
            "SANOMA_SITE_URL is set") in refused.stderr
    assert "HINT: Set SANOMA_SITE_URL to the site's address" in refused.stderr
    fine = manage_check(**production, SANOMA_SITE_URL="https://sanoma.example.com")
    assert fine.returncode == 0 and "no issues" in fine.stdout, fine.stderr
    assert manage_check(SANOMA_VAR_DIR=str(tmp_path)).returncode == 0  # development: http://127.0.0.1:8000
    bad = manage_check(SANOMA_VAR_DIR=str(tmp_path), SANOMA_SITE_URL="sanoma.example.com")
    assert bad.returncode != 0
    assert "SANOMA_SITE_URL='sanoma.example.com': must be the site's address with its scheme" in bad.stderr


def test_a_config_announcing_without_slack_is_refused_naming_the_fix():
    with pytest.raises(ConfigError) as refused:
        resolve_config(SanomaConfig(connectors=[resend], workflows=[newsletter],
                                    announce_approvals=slack_channel("#approvals")), fakes="instance")
    assert "announce_approvals posts with slack.message.post, which no connector in the config declares" in str(
        refused.value)
    with pytest.raises(ValueError, match="channel's #name or ID"):
        slack_channel("")
    with pytest.raises(ValueError, match="the desk's address"):
        slack_channel("#a", desk="desk.example")


class RefundIn(BaseModel):
    order_id: str = "1001"
    amount_cents: int = 1500


refund_only = define_workflow(name="refund-only", input=RefundIn, uses=[shop.op("shop.order.refund")],
                              run=lambda ctx, input: ctx.shop.order.refund(
                                  {"order_id": input.order_id, "amount_cents": input.amount_cents}).refund_id)
HOLD_MONEY = define_policy(lambda call: approve("finance-lead", "Refund needs finance")
                           if call.effect == "money" else allow(), version="hold-money")


def test_a_held_money_call_says_the_money_at_risk_and_operators_see_its_announcement(db, settings):
    settings.SANOMA_SITE_URL = "https://sanoma.acme.example"  # no desk= below: the site's own address
    make_user("alice", perms=["runs.start_workflow"])
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop, slack], workflows=[refund_only],
                                         policy=HOLD_MONEY, announce_approvals=slack_channel("C0APPROVALS")),
                            fakes="instance")
    set_config(config)
    try:
        start(workflow="refund-only", input={}, started_by="alice", config=config)
        drain(config)
        row = ApprovalAnnouncement.objects.get()
        assert "Money at risk: 15.00 EUR" in row.message["text"]
        assert "Asked: Refund 15.00 EUR on order 1001" in row.message["text"]
        assert "Who decides: finance-lead" in row.message["text"]
        approval = Approval.objects.get()
        # Absolute, so Slack makes it a link: under SANOMA_SITE_URL, the config naming no desk.
        assert row.message["text"].endswith(
            f"\n<https://sanoma.acme.example/admin/runs/approval/{approval.pk}/change/|Decide in the desk>")
        assert announce.deliver_due(config=config) == ["delivered"]
        [posted] = config.fakes["slack"].state["channels"]["C0APPROVALS"]["messages"]
        assert posted["text"] == row.message["text"]
        ops, walk_in = make_user("ops", perms=["runs.view_any_run"]), make_user("walk-in", groups=["staff"])
        for user in (ops, walk_in):
            user.is_staff = True
            user.save()
        operator = Client()
        operator.force_login(ops)
        page = operator.get("/admin/runs/approvalannouncement/")
        assert page.status_code == 200 and "delivered" in page.content.decode()
        outsider = Client()
        outsider.force_login(walk_in)
        assert outsider.get("/admin/runs/approvalannouncement/").status_code in (302, 403)
    finally:
        set_config(None)
