"""The operator's desk through Django's test client: what an operator, an approver and a starter see and do."""
from __future__ import annotations

import datetime as dt
import enum

import pytest
from django.contrib.messages import get_messages
from django.test import Client
from pydantic import BaseModel, Field

from runs.admin import approvals as approvals_admin
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.config.registry import get_config
from runs.models import Approval, LedgerRecord, Run, WorkflowEntry
from runs.testing import make_user
from runs.tests.test_api import ask_flow, money_needs_bob, nap_flow, refund_flow
from runs.versions import sync_workflow_entries


class Colour(enum.StrEnum):
    red = "red"
    blue = "blue"


class RichInput(BaseModel):
    order_id: str = Field(min_length=1, description="The order to look at")
    amount: int = Field(gt=0)
    ratio: float = 1.5
    urgent: bool = False
    colour: Colour = Colour.red
    due: dt.datetime | None = None
    tags: list[str] = []


def echo(ctx, input: RichInput):
    return input.model_dump(mode="json")


rich_flow = define_workflow(name="rich", title="Every kind of field", input=RichInput, run=echo)


def linked(ctx, input):
    ctx.approval("Look first", approver="bob", links=["https://shop.example/orders/1", "javascript:alert(1)"],
                 details={"why": "a big order"})
    return {}


linked_flow = define_workflow(name="linked", uses=["approval"], run=linked)


def staff(username: str, **kwargs):
    user = make_user(username, **kwargs)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    return user


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def said(response) -> list[str]:
    return [str(m) for m in get_messages(response.wsgi_request)]


def listed(response) -> list[str]:
    return [str(obj.pk) for obj in response.context["cl"].result_list]


@pytest.fixture
def people(alice):
    alice.is_staff = True
    alice.save(update_fields=["is_staff"])
    return {
        "alice": alice,
        "bob": staff("bob"),
        "carol": staff("carol"),
        "dave": staff("dave", perms=["runs.start_workflow"]),
        "olga": staff("olga", perms=["runs.view_any_run", "runs.operate_runs"]),
        "root": make_user("root", superuser=True),
    }


@pytest.fixture
def engine(engine_for):
    return engine_for(refund_flow, ask_flow, nap_flow, rich_flow, linked_flow, policy=money_needs_bob)


@pytest.fixture
def held(engine, people):
    run = engine.run("refund", {"order_id": "1", "amount": 10}, run_id="refund-1")
    assert run.status == "waiting"
    return run


@pytest.fixture
def fast_decide(monkeypatch):
    monkeypatch.setattr(approvals_admin, "DECIDE_WAIT_SECONDS", 0.1)


# ---- runs ----------------------------------------------------------------------------------------


def test_the_run_list_filters_by_status_workflow_and_starter_and_searches_by_id(held, engine, people):
    engine.run("nap", run_id="nap-1")
    engine.run("nap", run_id="nap-2", by="dave")
    engine.run("rich", {"order_id": "1", "amount": 1}, run_id="rich-1")
    client = browser(people["olga"])
    url = "/admin/runs/run/"

    everything = client.get(url)
    assert everything.status_code == 200
    assert listed(everything) == ["rich-1", "nap-2", "nap-1", "refund-1"]
    assert listed(client.get(url, {"status__exact": "finished"})) == ["rich-1"]
    assert listed(client.get(url, {"status__exact": "waiting"})) == ["nap-2", "nap-1", "refund-1"]
    assert listed(client.get(url, {"workflow": "nap"})) == ["nap-2", "nap-1"]
    assert listed(client.get(url, {"started_by": "dave"})) == ["nap-2"]
    assert listed(client.get(url, {"q": "nap-1"})) == ["nap-1"]
    counted = client.get(url, {"_facets": "True"})
    assert counted.status_code == 200 and listed(counted) == listed(everything)
    page = everything.content.decode()
    assert "Start a run" in page and "Cancel selected runs" in page
    assert "Add run" not in page


def test_who_is_not_an_operator_sees_only_the_runs_they_may_see(held, engine, people):
    engine.run("nap", run_id="nap-1", by="dave")
    assert listed(browser(people["alice"]).get("/admin/runs/run/")) == ["refund-1"]
    assert listed(browser(people["bob"]).get("/admin/runs/run/")) == ["refund-1"]  # the approver
    assert listed(browser(people["carol"]).get("/admin/runs/run/")) == []
    assert listed(browser(people["bob"]).get("/admin/runs/run/", {"_facets": "True", "q": "refund"})) == ["refund-1"]
    assert browser(people["bob"]).get("/admin/runs/approval/", {"_facets": "True"}).status_code == 200
    hidden = browser(people["carol"]).get("/admin/runs/run/refund-1/change/", follow=True)
    assert any("or you may not see it" in m for m in said(hidden))
    # the starter filter lists only starters of runs this user may see
    filters = browser(people["alice"]).get("/admin/runs/run/").content.decode()
    assert "?started_by=alice" in filters and "?started_by=dave" not in filters


def test_a_run_page_is_read_only_and_shows_steps_approvals_and_the_ledger(engine, people):
    run = engine.run("ask", run_id="ask-1")
    approvals.decide(run_id=run.id, decision="approve", note="go ahead", by="bob", timeout=0)
    engine.drain()
    response = browser(people["alice"]).get("/admin/runs/run/ask-1/change/")
    assert response.status_code == 200
    assert response.context["has_change_permission"] is False
    assert response.context["has_delete_permission"] is False
    page = response.content.decode()
    # inline steps and approvals
    assert "step (checkpoint)" in page.lower() and "acme.order.refund" in page
    assert "Refund order 1" in page and "go ahead" in page
    # the ledger timeline, in order
    rows = [row["type"] for row in response.context["ledger_rows"]]
    assert rows == ["run.started", "approval.requested", "approval.decided", "op.called", "run.finished"]
    assert 'class="ledger-row ledger-approvaldecided"' in page
    # pretty JSON of the result
    assert "&quot;refund&quot;: &quot;re_1&quot;" in page
    assert 'name="_save"' not in page and "/delete/" not in page
    assert "Cancel run" not in page  # it has ended
    assert browser(people["alice"]).post("/admin/runs/run/ask-1/change/", {"status": "queued"}).status_code == 403
    assert Run.objects.get(pk="ask-1").status == "finished"


def test_a_run_page_shows_a_failed_runs_error(engine, people):
    engine.run("refund", {"order_id": "9", "amount": 1}, run_id="refund-9")
    response = browser(people["alice"]).get("/admin/runs/run/refund-9/change/")
    page = response.content.decode()
    assert "driver_failed" in page and "no order 9" in page
    errors = [row["error"] for row in response.context["ledger_rows"] if row["error"]]
    assert errors and all(e.startswith("driver_failed: no order 9") for e in errors)


def test_nothing_is_added_changed_or_deleted_anywhere_even_by_a_superuser(held, people):
    client = browser(people["root"])
    record = LedgerRecord.objects.filter(run_id="refund-1").first()
    assert record is not None
    for url in ("/admin/runs/ledgerrecord/add/", "/admin/runs/run/add/", "/admin/runs/approval/add/",
                f"/admin/runs/ledgerrecord/{record.pk}/delete/", "/admin/runs/run/refund-1/delete/"):
        assert client.get(url).status_code == 403, url
        assert client.post(url, {"post": "yes"}).status_code == 403, url
    page = client.get(f"/admin/runs/ledgerrecord/{record.pk}/change/")
    assert page.status_code == 200 and page.context["has_change_permission"] is False
    assert client.post(f"/admin/runs/ledgerrecord/{record.pk}/change/", {"kind": "forged"}).status_code == 403
    changelist = client.get("/admin/runs/ledgerrecord/", {"run_id": "refund-1"})
    assert changelist.status_code == 200
    assert "delete_selected" not in changelist.content.decode()
    assert len(changelist.context["cl"].result_list) == 3
    assert LedgerRecord.objects.filter(run_id="refund-1").count() == 3
    [runs_app] = [app for app in client.get("/admin/").context["app_list"] if app["app_label"] == "runs"]
    read_only = {m["object_name"]: m.get("add_url") for m in runs_app["models"]}
    assert {name: read_only[name] for name in ("LedgerRecord", "Run", "Approval", "AppVersion")} == dict.fromkeys(
        ("LedgerRecord", "Run", "Approval", "AppVersion"))


def test_cancel_selected_runs_asks_why_and_cancels_what_the_user_may_cancel(held, engine, people):
    engine.run("nap", run_id="nap-1")
    data = {"action": "cancel_selected", "_selected_action": ["refund-1", "nap-1"]}
    refused = browser(people["bob"]).post("/admin/runs/run/", data).content.decode()
    assert "0 runs will be cancelled" in refused and "refund-1 (waiting): you may not cancel it" in refused
    assert 'id="confirm-cancel"' not in refused

    asked = browser(people["alice"]).post("/admin/runs/run/", data).content.decode()
    assert "2 runs will be cancelled" in asked and 'name="reason"' in asked
    assert set(Run.objects.values_list("status", flat=True)) == {"waiting"}  # only asked
    blank = browser(people["alice"]).post("/admin/runs/run/", {**data, "confirmed": "yes", "reason": "  "})
    assert blank.status_code == 400 and "Say why the run is cancelled" in blank.content.decode()
    assert set(Run.objects.values_list("status", flat=True)) == {"waiting"}  # nothing done
    done = browser(people["alice"]).post("/admin/runs/run/", {**data, "confirmed": "yes", "reason": "duplicates"},
                                         follow=True)
    assert any("Cancelled 2 run(s)" in m for m in said(done))
    assert set(Run.objects.values_list("status", flat=True)) == {"cancelled"}
    records = LedgerRecord.objects.filter(kind="run.cancelled")
    assert {(r.actor, r.body["reason"]) for r in records} == {("alice", "duplicates")}


def test_the_cancel_button_on_a_run_page(held, people):
    page = browser(people["alice"]).get("/admin/runs/run/refund-1/change/").content.decode()
    assert "Cancel run" in page
    # The approver may see the run but not cancel it: no button offers what would be refused.
    approver_page = browser(people["bob"]).get("/admin/runs/run/refund-1/change/")
    assert approver_page.status_code == 200 and "Cancel run" not in approver_page.content.decode()
    asked = browser(people["alice"]).get("/admin/runs/run/refund-1/cancel/").content.decode()
    assert "Cancel refund-1?" in asked and 'name="reason"' in asked
    assert Run.objects.get(pk="refund-1").status != "cancelled"  # only asked
    response = browser(people["alice"]).post("/admin/runs/run/refund-1/cancel/",
                                             {"confirmed": "yes", "reason": "the customer withdrew"}, follow=True)
    assert any("Cancelled refund-1" in m for m in said(response))
    assert Run.objects.get(pk="refund-1").status == "cancelled"
    [record] = LedgerRecord.objects.filter(run_id="refund-1", kind="run.cancelled")
    assert (record.body["by"], record.body["reason"]) == ("alice", "the customer withdrew")


# ---- the approvals inbox -------------------------------------------------------------------------


def test_the_inbox_shows_what_each_approval_lets_through(held, engine, people):
    engine.run("ask", run_id="ask-1")
    response = browser(people["bob"]).get("/admin/runs/approval/")
    assert response.status_code == 200
    assert [a.run_id for a in response.context["cl"].result_list] == ["ask-1", "refund-1"]  # newest first
    page = response.content.decode()
    assert "Approvals inbox" in page
    assert "acme.order.refund" in page and "&quot;amount&quot;: 10" in page
    assert listed(browser(people["carol"]).get("/admin/runs/approval/")) == []
    assert listed(browser(people["alice"]).get("/admin/runs/approval/")) == []  # she decides nothing
    # An operator decides nothing by being one: her inbox is empty, as `/api/approvals` answers her,
    # and each approval's page is still open to her (she may see every run).
    assert listed(browser(people["olga"]).get("/admin/runs/approval/")) == []
    approval = Approval.objects.get(run_id="refund-1")
    assert browser(people["olga"]).get(f"/admin/runs/approval/{approval.pk}/change/").status_code == 200


def test_approving_from_the_approval_page(held, engine, people, fast_decide):
    approval = Approval.objects.get(run_id="refund-1")
    client = browser(people["bob"])
    page = client.get(f"/admin/runs/approval/{approval.pk}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'name="_approve"' in html and 'name="_reject"' in html
    assert "acme.order.refund" in html and "Refunds need bob" in html

    sent = client.post(
        f"/admin/runs/approval/{approval.pk}/change/", {"_approve": "Approve", "note": "ok by me"}, follow=True
    )
    assert any("sent, still pending (the run will apply it when a worker runs)" in m for m in said(sent))
    assert "Sent and waiting for a worker" in sent.content.decode()

    engine.drain()
    after = client.get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert 'id="approval-status">approved<' in after and "ok by me" in after
    assert 'name="_approve"' not in after
    assert Run.objects.get(pk="refund-1").status == "finished"


def test_an_approval_page_shows_its_links_and_details_safely(engine, people):
    engine.run("linked", run_id="linked-1")
    approval = Approval.objects.get(run_id="linked-1")
    page = browser(people["bob"]).get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert '<a href="https://shop.example/orders/1" rel="noopener noreferrer">' in page
    assert "javascript:alert(1)" in page and 'href="javascript:' not in page
    assert "&quot;why&quot;: &quot;a big order&quot;" in page
    assert "nothing further (a workflow approval)" in page


def test_a_decision_applied_in_time_says_decided(held, engine, people, monkeypatch):
    send = approvals.send_decision

    def send_and_apply(**kwargs):
        message_id = send(**kwargs)
        engine.drain()
        return message_id

    monkeypatch.setattr(approvals, "send_decision", send_and_apply)
    approval = Approval.objects.get(run_id="refund-1")
    response = browser(people["bob"]).post(
        f"/admin/runs/approval/{approval.pk}/change/", {"_reject": "Reject"}, follow=True
    )
    assert any("Decided: approval-1 of run refund-1 is rejected by bob" in m for m in said(response))


def test_a_refusal_names_the_reason(held, engine, people, fast_decide):
    approval = Approval.objects.get(run_id="refund-1")
    url = f"/admin/runs/approval/{approval.pk}/change/"
    starter = browser(people["alice"])
    page = starter.get(url).content.decode()
    # Separation of duties: the starter may not decide her own run's approvals.
    assert "You cannot decide this: alice started this run and cannot approve it (approval-1) (not_approver)" in page
    assert 'name="_approve"' not in page and 'name="_withdraw"' in page

    refused = starter.post(url, {"_approve": "Approve"}, follow=True)
    assert said(refused) == ["Not done: alice started this run and cannot approve it (approval-1) (not_approver)"]
    assert not approval.messages.exists()

    bob = browser(people["bob"])
    bob.post(url, {"_approve": "Approve"})
    engine.drain()
    twice = bob.post(url, {"_reject": "Reject"}, follow=True)
    assert any(m.startswith("Not done:") and ("run_ended" in m or "already_decided" in m) for m in said(twice))

    outsider = browser(people["carol"]).get(url, follow=True)
    assert any("or you may not see it" in m for m in said(outsider))


def test_the_starter_withdraws_an_approval(held, engine, people):
    approval = Approval.objects.get(run_id="refund-1")
    response = browser(people["alice"]).post(f"/admin/runs/approval/{approval.pk}/change/",
                                              {"_withdraw": "Withdraw", "note": "wrong order"}, follow=True)
    assert any("Withdrew approval-1 of run refund-1" in m for m in said(response))
    approval.refresh_from_db()
    assert (approval.status, approval.decided_by, approval.note) == ("withdrawn", "alice", "wrong order")
    engine.drain()
    error = Run.objects.get(pk="refund-1").error
    assert error is not None
    assert error["code"] == "approval_withdrawn"


# ---- starting a run ------------------------------------------------------------------------------


def test_the_start_form_is_built_from_the_input_schema(engine, people):
    client = browser(people["alice"])
    choose = client.get("/admin/runs/run/start/")
    assert choose.status_code == 200
    assert {w["name"] for w in choose.context["workflows"]} >= {"rich", "nap", "refund"}
    form = client.get("/admin/runs/run/start/", {"workflow": "rich"}).context["form"]
    kinds = {name: type(field).__name__ for name, field in form.fields.items()}
    assert kinds == {
        "order_id": "CharField", "amount": "IntegerField", "ratio": "FloatField", "urgent": "BooleanField",
        "colour": "ChoiceField", "due": "DateTimeField", "tags": "JSONTextField", "_run_id": "CharField",
    }
    assert form.fields["order_id"].required and form.fields["amount"].required
    assert not form.fields["due"].required and form.fields["ratio"].initial == 1.5
    assert [c for c, _ in form.fields["colour"].choices] == ['"red"', '"blue"']
    assert form.fields["order_id"].help_text == "The order to look at"
    html = client.get("/admin/runs/run/start/", {"workflow": "rich"}).content.decode()
    assert 'type="datetime-local"' in html and "<textarea" in html and 'type="checkbox"' in html


def test_starting_a_run_from_the_form(engine, people):
    client = browser(people["alice"])
    data = {"_workflow": "rich", "order_id": "1", "amount": "5", "ratio": "1.5", "colour": '"blue"', "urgent": "on",
            "due": "2030-01-02T03:04:05", "tags": '["a", "b"]', "_run_id": "rich-7"}
    response = client.post("/admin/runs/run/start/", data, follow=True)
    assert response.redirect_chain[-1][0] == "/admin/runs/run/rich-7/change/"
    assert any("Started rich as run rich-7" in m for m in said(response))
    run = Run.objects.get(pk="rich-7")
    assert run.started_by == "alice"
    assert run.input == {"order_id": "1", "amount": 5, "ratio": 1.5, "colour": "blue", "urgent": True,
                         "due": "2030-01-02T03:04:05+00:00", "tags": ["a", "b"]}

    minimal = client.post("/admin/runs/run/start/", {"_workflow": "rich", "order_id": "2", "amount": "1",
                                                      "colour": '"red"', "tags": ""}, follow=True)
    started = Run.objects.exclude(pk="rich-7").get()
    assert minimal.redirect_chain[-1][0] == f"/admin/runs/run/{started.pk}/change/"
    assert started.input == {"order_id": "2", "amount": 1, "urgent": False, "colour": "red"}  # empty optionals left out


def test_server_side_errors_show_on_their_fields(engine, people):
    client = browser(people["alice"])
    response = client.post("/admin/runs/run/start/", {"_workflow": "rich", "order_id": "1", "amount": "0",
                                                       "colour": '"red"', "tags": '[1, {"x": 2}]'})
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert errors["amount"] == ["Input should be greater than 0"]
    assert any(e.startswith("0: Input should be a valid string") for e in errors["tags"])
    assert "Please correct the errors below" in response.content.decode()
    assert not Run.objects.exists()

    bad_json = client.post(
        "/admin/runs/run/start/", {"_workflow": "rich", "order_id": "1", "amount": "1", "tags": "[oops"}
    )
    assert bad_json.context["form"].errors["tags"][0].startswith("Not valid JSON")
    assert not Run.objects.exists()


def test_a_user_without_start_permission_is_told_so(engine, people):
    # Up front: the form reads without a Start button, saying why.
    page = browser(people["carol"]).get("/admin/runs/run/start/?workflow=nap").content.decode()
    assert 'id="start-may-not">carol may not start nap (permission_denied)' in page and 'name="_start"' not in page
    # And a post made anyway is refused, starting nothing.
    response = browser(people["carol"]).post("/admin/runs/run/start/", {"_workflow": "nap"})
    assert response.status_code == 200
    assert response.context["form"].non_field_errors() == ["carol may not start nap (permission_denied)"]
    assert not Run.objects.exists()


def test_an_idempotent_start_from_the_form_shows_the_existing_run(engine, people):
    client = browser(people["alice"])
    client.post("/admin/runs/run/start/", {"_workflow": "nap", "_run_id": "nap-1"})
    again = client.post("/admin/runs/run/start/", {"_workflow": "nap", "_run_id": "nap-1"}, follow=True)
    assert any("already started with this input" in m for m in said(again))
    other = client.post(
        "/admin/runs/run/start/", {"_workflow": "rich", "order_id": "1", "amount": "1", "_run_id": "nap-1"}
    )
    assert "already exists with a different" in " ".join(other.context["form"].non_field_errors())


# ---- start permissions and versions --------------------------------------------------------------


def test_workflow_rows_carry_object_permissions(engine, people):
    sync_workflow_entries(get_config())  # as a starting worker does
    client = browser(people["root"])
    response = client.get("/admin/runs/workflowentry/")
    assert response.status_code == 200
    assert set(WorkflowEntry.objects.values_list("name", flat=True)) >= {"rich", "nap", "refund", "ask"}
    entry = WorkflowEntry.objects.get(name="nap")
    page = client.get(f"/admin/runs/workflowentry/{entry.pk}/change/").content.decode()
    assert "permissions/" in page  # guardian's "Object permissions" button
    assert client.get(f"/admin/runs/workflowentry/{entry.pk}/permissions/").status_code == 200
    assert client.get("/admin/runs/workflowentry/add/").status_code == 403


def test_a_get_of_the_workflow_pages_writes_nothing(engine, people):
    client = browser(people["root"])
    assert client.get("/admin/runs/workflowentry/").status_code == 200
    assert client.get("/admin/runs/workflowentry/grant/nap/").status_code == 302
    assert client.get("/admin/catalog/workflows/nap/").status_code == 200
    assert not WorkflowEntry.objects.exists()
    granted = client.post("/admin/runs/workflowentry/grant/nap/")
    entry = WorkflowEntry.objects.get(name="nap")
    assert granted.status_code == 302
    assert granted["Location"].endswith(f"/admin/runs/workflowentry/{entry.pk}/permissions/")
    assert client.get("/admin/runs/workflowentry/grant/nap/")["Location"] == granted["Location"]


def test_app_versions_are_read_only(engine, people):
    client = browser(people["root"])
    assert client.get("/admin/runs/appversion/").status_code == 200
    assert client.get("/admin/runs/appversion/add/").status_code == 403


def test_the_site_root_redirects_to_the_admin(db):
    response = Client().get("/")
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_a_page_someone_may_not_open_says_so_in_the_desks_frame(engine, people):
    response = browser(people["carol"]).get("/admin/runs/appversion/")
    assert response.status_code == 403
    page = response.content.decode()
    assert "You may not open this page" in page and 'href="/admin/"' in page and "Back to the desk" in page
