"""A real worker process: the example company's held newsletter is announced in Slack exactly once,
even when the worker is SIGKILLed with the post in flight (Slack took it, the answer never came).

The example company runs on its real drivers here: Resend and Slack at their local servers, the
shop at an address it is never asked. Its config announces approvals in #approvals. The Slack
server holds the first `chat.postMessage` for 3 s before taking it; the worker is killed as soon as
the request arrives. A second worker finds the announcement claimed past its deadline (in doubt),
reads the channel's history, finds the message by the key in its metadata, and marks it delivered
without posting again.
"""
from __future__ import annotations

import time
from pathlib import Path

import pytest
from django.conf import settings
from django.db import connection

from connectors.vendors.resend.tests.resend_server import KEY, ResendServer
from connectors.vendors.slack.tests.slack_server import TOKEN, SlackServer
from runs import services
from runs.approvals.announce_models import AnnouncementStatus, ApprovalAnnouncement
from runs.config.resolution import load_config
from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import EXAMPLE_COMPANY_CREDENTIALS, Worker, database_url, worker_env

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

VERSION = "announce-test"
STALL = 60.0


def test_a_held_call_is_announced_once_though_the_worker_dies_mid_post(tmp_path: Path, monkeypatch) -> None:
    root = Path(settings.BASE_DIR) / "company"
    resend_server, slack_server = ResendServer(), SlackServer()
    with resend_server, slack_server:
        env = {**EXAMPLE_COMPANY_CREDENTIALS, "RESEND_API_KEY": KEY, "RESEND_API_URL": resend_server.url,
               "SLACK_BOT_TOKEN": TOKEN,
               "SLACK_API_URL": slack_server.url, "SHOP_API_URL": "https://shop.invalid",
               "SHOP_API_KEY": "shop-key-0123456789"}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        config = load_config(root, app_version=VERSION)
        make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
        run = services.start(workflow="newsletter", input={"subject": "December news", "html": "<p>Hi</p>"},
                             started_by="alice", config=config)
        slack_server.fault(delay=3.0, path="/chat.postMessage")  # taken, but answered late
        proc_env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version=VERSION,
                              root=root, SANOMA_FAKES="", **env)
        first = Worker(proc_env, tmp_path / "worker1.log")
        second = Worker(proc_env, tmp_path / "worker2.log")
        try:
            first.start()
            first.wait_for(lambda: slack_server.requests_to("POST", "/chat.postMessage"), within=STALL,
                           what="the announcement's post to reach Slack")
            first.kill()
            held = Run.objects.get(pk=run.pk)
            assert (held.status, held.waiting_for) == (RunStatus.WAITING, "approval")
            row = ApprovalAnnouncement.objects.get(run_id=run.pk)
            assert row.status == AnnouncementStatus.SENDING  # its worker died with the post in flight
            ends = time.monotonic() + 10
            while not slack_server.messages("C0APPROVALS") and time.monotonic() < ends:
                time.sleep(0.05)
            assert len(slack_server.messages("C0APPROVALS")) == 1  # Slack took it
            second.start()
            second.wait_for(lambda: ApprovalAnnouncement.objects.filter(
                pk=row.pk, status__in=[AnnouncementStatus.DELIVERED, AnnouncementStatus.FAILED]).exists(),
                within=STALL, what="the announcement to be settled")
        finally:
            first.cleanup()
            second.cleanup()
        row.refresh_from_db()
        assert (row.status, row.reconciled) == (AnnouncementStatus.DELIVERED, True), (row.error, second.describe())
        [message] = slack_server.messages("C0APPROVALS")
        assert row.output == {"channel": "C0APPROVALS", "ts": message["ts"]}
        assert "Newsletter needs an owner" in message["text"] and "Decide in the desk" in message["text"]
        assert len(slack_server.requests_to("POST", "/chat.postMessage")) == 1  # never posted again
        assert resend_server.sends == []  # the send waits for its owner
