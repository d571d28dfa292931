"""Drift, plan and apply on the example company, on its fakes and the real engine: the invariant
(change the vendor by hand; drift shows exactly that; the plan reverses exactly that, with the
policy's verdicts; apply ends with drift clean and an empty plan), and the rules around it."""
from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import override_settings

from changes import services
from changes.credentials import runtime
from changes.credentials.models import Credential
from changes.credentials.tests.credentials_company.harness import TEST_KEY, rows_containing
from changes.models import ManagedResource
from company.vendors.shop import shop
from runs.approvals.services import decide
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.models import LedgerKind, LedgerRecord, Run
from runs.policies.versions import policy_version_of
from runs.testing import make_user

COMPANY = Path(__file__).resolve().parents[2] / "company"
SECRET = "whsec-drift-apply-0123456789"


@pytest.fixture
def acme(db, monkeypatch):
    monkeypatch.setenv("SHOP_WEBHOOK_SECRET", SECRET)
    config = resolve_config(SanomaConfig(app_name="acme", connectors=[shop], root=COMPANY), fakes="instance")
    set_config(config)
    runtime.invalidate()  # no stored value cached from another test's (rolled back) database
    make_user("ops", groups=["staff"], perms=["runs.start_workflow"])
    make_user("sec", groups=["staff", "security"], perms=["runs.start_workflow"])
    with override_settings(SANOMA_RETRY_DELAYS=(0.01, 0.02)):
        yield config
    set_config(None)
    runtime.invalidate()


def drift(config):
    return services.drift(by="ops", here=True, config=config)[1]


def apply(config, approver="sec"):
    """An apply run, approving each held change as it waits; returns (run, output, approvals)."""
    run = services.start("apply", by="ops", config=config)
    approved: list[dict] = []
    while True:
        followed = services.follow(run, here=True, config=config, timeout=60)
        if followed.ended:
            return run, services.report(followed.run), approved
        for waiting in followed.waiting:
            approved.append(waiting)
            decide(run_id=run.id, decision="approve", by=approver, approval_id=waiting["approval"], timeout=0)


def statuses(report):
    return {e["id"]: e["status"] for e in report["resources"] if e["status"] != "clean"}


def test_the_invariant_on_the_example_company(acme):
    first = drift(acme)
    assert first["summary"]["error"] == 0
    # the fake starts with mug, tee and cap; tote, the staff roles, the webhook and the people are new
    assert statuses(first)["resources/catalog.py#tote"] == "gone"
    run, out, approvals = apply(acme)
    assert out["summary"]["failed"] == 0 and out["summary"]["skipped"] == 0, out
    assert {a["approver"] for a in approvals} == {"group:security"}  # access (people, roles) waits for security
    settled = drift(acme)
    assert statuses(settled) == {}, settled
    assert services.plan(settled, by="ops", config=acme)["empty"]

    # by hand, at the vendor: a price changed, a product removed, a declared staff role removed, and
    # a staff role no data file declares added (sanoma cannot list the shop's roles, and never ends
    # what it did not create: drift and plan leave that one alone)
    def by_hand(state):
        state["products"]["mug"] = 1700
        del state["catalog"]["tee"], state["products"]["tee"]
        state["staff"].remove({"username": "sam", "role": "admin"})
        state["staff"].append({"username": "alice", "role": "admin"})

    acme.fakes["shop"].update(by_hand)
    changed = drift(acme)
    assert statuses(changed) == {"resources/catalog.py#mug": "drifted", "resources/catalog.py#tee": "gone",
                                 "resources/shop_access.py#sam_admin": "gone"}
    mug = next(e for e in changed["resources"] if e["name"] == "mug")
    assert mug["diffs"] == [{"path": "price_cents", "desired": 1500, "actual": 1700}]

    plan = services.plan(changed, by="ops", config=acme)
    shown = [(c["action"], c["name"], [(k["op"], k["verdict"]["decision"], k["verdict"].get("approver"))
                                       for k in c["calls"]]) for c in plan["changes"]]
    assert shown == [("update", "mug", [("shop.product.update", "allow", None)]),
                     ("create", "tee", [("shop.product.create", "allow", None)]),
                     ("create", "sam_admin", [("shop.staff_role.create", "held", "group:security")])]
    assert plan["holds"] == {"group:security": 1}
    assert plan["changes"][0]["calls"][0]["input"]["changes"] == {"price_cents": 1500}

    before = LedgerRecord.objects.filter(kind=LedgerKind.OP_CALLED).count()
    run, out, approvals = apply(acme)
    assert [a["approver"] for a in approvals] == ["group:security"]
    assert [(c["action"], c["name"], c["status"]) for c in out["changes"]] == [
        ("update", "mug", "done"), ("create", "tee", "done"), ("create", "sam_admin", "done")]
    calls = [r.body["op"] for r in LedgerRecord.objects.filter(run_id=run.id, kind=LedgerKind.OP_CALLED)
             .order_by("id")]
    # one vendor call per change, in plan order; each create noted as sanoma's; the rest is the observation
    assert [op for op in calls if op.rsplit(".", 1)[1] in ("create", "update", "delete")] == [
        "shop.product.update", "shop.product.create", "shop.staff_role.create"]
    assert calls.count("sanoma.resources.record") == 2
    # the read, one import per declared resource (18, none a host), the 3 changes, the 2 records
    assert calls.count("sanoma.resources.read") == 1 and len(calls) == 1 + 23 + 3 + 2
    assert LedgerRecord.objects.filter(kind=LedgerKind.OP_CALLED).count() == before + len(calls)
    assert set(ManagedResource.objects.filter(type="shop.product").values_list("import_id", flat=True)) == {
        "tee", "tote"}
    after = drift(acme)
    assert statuses(after) == {} and after["summary"]["error"] == 0
    assert services.plan(after, by="ops", config=acme)["empty"]
    assert {"username": "alice", "role": "admin"} in acme.fakes["shop"].state["staff"]  # not sanoma's: kept


def test_the_secret_never_enters_a_record(acme):
    _, out, _ = apply(acme)
    assert out["summary"]["failed"] == 0
    hooks = acme.fakes["shop"].state["webhooks"]
    assert [h["secret"] for h in hooks.values()] == [SECRET]  # the vendor got it
    assert rows_containing(SECRET) == []  # every text column of every table
    create = LedgerRecord.objects.get(kind=LedgerKind.OP_CALLED, body__op="shop.webhook.create")
    assert create.body["input"]["desired"]["signing_secret"] == {"secret": "SHOP_WEBHOOK_SECRET"}


def test_a_secret_set_with_the_credentials_command_reaches_the_vendor_and_nothing_else(acme, settings, monkeypatch):
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    stored = "whsec-stored-9f8e7d6c5b4a3210"
    runtime.invalidate()
    monkeypatch.setattr("sys.stdin", io.StringIO(stored + "\n"))
    call_command("credentials", "set", "SHOP_WEBHOOK_SECRET", stdout=io.StringIO())
    _, out, _ = apply(acme)
    hook = next(c for c in out["changes"] if c["type"] == "shop.webhook")
    assert hook["status"] == "done", hook
    assert [h["secret"] for h in acme.fakes["shop"].state["webhooks"].values()] == [stored]
    assert Credential.objects.filter(name="SHOP_WEBHOOK_SECRET").count() == 1
    assert rows_containing(stored) == []  # not even the credential's own row holds it in plain text
    assert statuses(drift(acme)) == {}  # write-only: never compared, so the webhook is clean


def test_a_missing_secret_fails_that_change_and_apply_goes_on(acme, monkeypatch):
    monkeypatch.delenv("SHOP_WEBHOOK_SECRET")
    _, out, _ = apply(acme)
    hook = next(c for c in out["changes"] if c["type"] == "shop.webhook")
    assert hook["status"] == "failed" and "SHOP_WEBHOOK_SECRET is missing" in hook["error"]["message"]
    assert out["summary"]["done"] > 0


def test_people_become_users_and_a_removed_one_is_deactivated_not_deleted(acme):
    apply(acme)
    sam = get_user_model().objects.get(username="sam")
    assert sam.is_active and sam.email == "sam@acme.example" and (sam.first_name, sam.last_name) == ("Sam", "Aalto")
    assert sorted(sam.groups.values_list("name", flat=True)) == ["owners", "security", "staff"]
    assert ManagedResource.objects.filter(type="sanoma.person", import_id="sam").exists()
    # sam leaves the files: only what apply created is ever removed, and a person only deactivated
    ManagedResource.objects.create(type="sanoma.person", import_id="old-timer", created_by="x",
                                   created_at=sam.date_joined)
    make_user("old-timer")
    make_user("hand-made")
    plan = services.plan(drift(acme), by="ops", config=acme)
    assert [(c["action"], c["import_id"]) for c in plan["changes"]] == [("delete", "old-timer")]
    apply(acme)
    users = get_user_model().objects
    assert not users.get(username="old-timer").is_active and users.get(username="hand-made").is_active
    assert services.plan(drift(acme), by="ops", config=acme)["empty"]


def test_an_import_the_policy_denies_is_an_error_and_the_run_goes_on(acme):
    from runs.policies.python_policies import allow_all

    class DenyTee:
        kind = "python"

        def decide(self, call):
            if call.op_id == "shop.product.import" and call.target == "product/tee":
                return type(allow_all.decide(call))(kind="deny", reason="tee is secret")
            return allow_all.decide(call)

    acme.policy = DenyTee()
    report = drift(acme)
    tee = next(e for e in report["resources"] if e["name"] == "tee")
    assert tee["status"] == "error" and "tee is secret" in tee["error"]["message"]
    assert tee["error"]["code"] == "policy_denied"
    assert report["summary"]["error"] == 1 and len(report["resources"]) == 23


def test_a_resource_with_no_driver_is_an_error(acme):
    acme.drivers.pop("shop.webhook.import")
    report = drift(acme)
    hook = next(e for e in report["resources"] if e["type"] == "shop.webhook")
    assert hook["status"] == "error" and hook["error"]["code"] == "no_driver"
    assert report["summary"]["error"] == 1


def test_the_commands(acme, monkeypatch):
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("drift", "--as", "ops", "--here", stdout=out)
    assert exited.value.code == 2 and "gone     shop.product  tote  (resources/catalog.py:7): not at the vendor" \
        in out.getvalue()
    assert out.getvalue().splitlines()[-1] == "4 clean, 2 drifted, 17 gone, 0 error"
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("plan", "--as", "ops", "--here", "--json", stdout=out)
    assert exited.value.code == 2
    plan = json.loads(out.getvalue())
    tote = next(c for c in plan["changes"] if c["name"] == "tote")
    assert tote["action"] == "create" and tote["calls"][0]["op"] == "shop.product.create"
    assert tote["calls"][0]["verdict"] == {"decision": "allow"}
    sam_admin = next(c for c in plan["changes"] if c["name"] == "sam_admin")
    assert sam_admin["calls"][0]["verdict"]["decision"] == "held"
    assert sam_admin["calls"][0]["verdict"]["approver"] == "group:security"
    assert plan["summary"] == {"create": 17, "update": 2, "replace": 0, "delete": 0}
    # references first: each group before the people in it, each person before their roles
    order = [c["resource"] for c in plan["changes"]]
    assert order.index("resources/staff.py#finance") < order.index("resources/staff.py#finance_lead") < \
        order.index("resources/shop_access.py#finance_lead_finance")
    assert order.index("resources/staff.py#owners") < order.index("resources/staff.py#sam") < \
        order.index("resources/shop_access.py#sam_admin")
    # asked, and told no: nothing is started
    monkeypatch.setattr("builtins.input", lambda prompt: "n")
    with pytest.raises(CommandError, match="Nothing applied"):
        call_command("apply", "--as", "ops", "--here", stdout=io.StringIO())
    assert not Run.objects.filter(workflow="apply").exists()

    def no_terminal(prompt):
        raise EOFError

    monkeypatch.setattr("builtins.input", no_terminal)
    with pytest.raises(CommandError, match="no answer on standard input"):
        call_command("apply", "--as", "ops", "--here", stdout=io.StringIO())
    assert not Run.objects.filter(workflow="apply").exists()
    out = io.StringIO()
    with pytest.raises(SystemExit) as exited:
        call_command("apply", "--as", "ops", "--here", "--yes", "--timeout", "1", stdout=out)
    assert exited.value.code == 3  # it waits for security, and says so
    assert "waiting for group:security to approve approval-" in out.getvalue()
    run = Run.objects.get(workflow="apply")
    while True:  # security approves each held change as it comes
        followed = services.follow(run, here=True, config=acme, timeout=60)
        if followed.ended:
            break
        decide(run_id=run.id, decision="approve", by="sec", approval_id=followed.waiting[0]["approval"], timeout=0)
    assert services.report(followed.run)["summary"]["failed"] == 0
    out = io.StringIO()
    call_command("drift", "--as", "ops", "--here", stdout=out)  # exit 0: no SystemExit
    assert out.getvalue().splitlines()[-1] == "23 clean, 0 drifted, 0 gone, 0 error"
    out = io.StringIO()
    call_command("plan", "--as", "ops", "--here", stdout=out)
    assert out.getvalue().strip().splitlines() == [f"judged with policy {policy_version_of(acme.policy)}", "no changes"]


def test_the_commands_refuse_bad_input(acme):
    with pytest.raises(CommandError, match="nobody"):
        call_command("drift", "--as", "nobody", "--here", stdout=io.StringIO())
    assert not Run.objects.exists()


class DenySome:
    """Allows everything but the calls named (op, target) -> reason."""

    kind = "python"

    def __init__(self, denied):
        self.denied = denied

    def decide(self, call):
        from runs.policies.python_policies import allow_all

        reason = self.denied.get((call.op_id, call.target))
        decided = allow_all.decide(call)
        return decided if reason is None else type(decided)(kind="deny", reason=reason)


def test_a_denied_change_fails_what_refers_to_it_is_skipped_and_the_rest_is_made(acme):
    acme.policy = DenySome({("shop.product.create", "product/tote"): "no bags this year",
                            ("sanoma.person.create", "person/sam"): "sam is not hired yet"})
    plan = services.plan(drift(acme), by="ops", config=acme)
    verdicts = {c["name"]: c["calls"][0]["verdict"] for c in plan["changes"]}
    assert verdicts["tote"] == {"decision": "deny", "reason": "no bags this year"}
    _, out, approvals = apply(acme)
    assert approvals == []
    by_name = {c["name"]: c for c in out["changes"]}
    assert by_name["tote"]["status"] == "failed" and by_name["tote"]["error"]["code"] == "policy_denied"
    assert "no bags this year" in by_name["tote"]["error"]["message"]
    assert by_name["sam"]["status"] == "failed"
    assert by_name["sam_admin"]["status"] == "skipped"  # it refers to sam
    assert "resources/staff.py#sam" in by_name["sam_admin"]["error"]["message"]
    assert out["summary"] == {**out["summary"], "done": 16, "failed": 2, "skipped": 1}
    assert not get_user_model().objects.filter(username="sam").exists()
    assert statuses(drift(acme)) == {"resources/catalog.py#tote": "gone", "resources/staff.py#sam": "gone",
                                     "resources/shop_access.py#sam_admin": "gone"}


def test_an_immutable_field_that_differs_is_replaced(acme):
    apply(acme)

    def in_dollars(state):
        state["catalog"]["tote"]["currency"] = "USD"
        state["catalog"]["cap"]["currency"] = "USD"  # cap declares no currency: not compared

    acme.fakes["shop"].update(in_dollars)
    changed = drift(acme)
    assert statuses(changed) == {"resources/catalog.py#tote": "drifted"}
    tote = next(e for e in changed["resources"] if e["name"] == "tote")
    assert tote["diffs"] == [{"path": "currency", "desired": "EUR", "actual": "USD"}]
    plan = services.plan(changed, by="ops", config=acme)
    assert [(c["action"], [k["op"] for k in c["calls"]]) for c in plan["changes"]] == [
        ("replace", ["shop.product.delete", "shop.product.create"])]
    _, out, _ = apply(acme)
    assert [(c["action"], c["status"]) for c in out["changes"]] == [("replace", "done")]
    assert acme.fakes["shop"].state["catalog"]["tote"]["currency"] == "EUR"
    assert statuses(drift(acme)) == {}


def test_a_person_who_differs_is_updated(acme):
    apply(acme)
    alice = get_user_model().objects.get(username="alice")
    alice.email = "alice@elsewhere.example"
    alice.save()
    alice.groups.clear()
    changed = drift(acme)
    entry = next(e for e in changed["resources"] if e["name"] == "alice")
    assert entry["diffs"] == [{"path": "email", "desired": "alice@acme.example", "actual": "alice@elsewhere.example"},
                              {"path": "groups", "desired": ["staff"], "actual": []}]
    plan = services.plan(changed, by="ops", config=acme)
    assert [(c["action"], c["calls"][0]["verdict"]) for c in plan["changes"]] == [
        ("update", {"decision": "held", "approver": "group:security", "title": plan["changes"][0]["calls"][0][
            "verdict"]["title"]})]
    apply(acme)
    alice.refresh_from_db()
    assert alice.email == "alice@acme.example" and list(alice.groups.values_list("name", flat=True)) == ["staff"]
    assert statuses(drift(acme)) == {}


def test_a_create_that_cannot_be_noted_as_sanomas_says_it_was_made(acme):
    acme.policy = DenySome({("sanoma.resources.record", "shop.product/tote"): "no bookkeeping"})
    _, out, _ = apply(acme)
    tote = next(c for c in out["changes"] if c["name"] == "tote")
    assert tote["status"] == "failed" and tote["error"]["op"] == "sanoma.resources.record"
    assert tote["error"]["message"].startswith("shop.product.create was made, but ")
    assert "tote" in acme.fakes["shop"].state["catalog"]  # made at the vendor...
    assert not ManagedResource.objects.filter(type="shop.product", import_id="tote").exists()  # ...not sanoma's
    assert statuses(drift(acme)) == {}
