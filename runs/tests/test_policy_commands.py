"""The operator's commands with the example company's policies (`company/policies/shop.cedar`):
`manage.py decide <run> approve|reject --as <user> [--note]` and `manage.py policy explain`."""
from __future__ import annotations

import json
import time
from io import StringIO
from pathlib import Path
from types import SimpleNamespace

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError

from company.sanoma_config import notes
from company.vendors.shop import shop
from company.workflows.refund import refund
from runs import presence
from runs.approvals import services as approvals
from runs.authoring import define_workflow
from runs.models import Approval, DecisionMessage, PresenceRole, Run
from runs.policies import load_cedar_policy
from runs.policies.versions import policy_version_of
from runs.testing import make_user
from runs.versions import register_version

COMPANY_POLICIES = Path(settings.BASE_DIR) / "company" / "policies"


def grant(ctx, input):
    return ctx.shop.staff.grant({"username": "newhire", "role": "support"}).model_dump()


def erase(ctx, input):
    return ctx.shop.customer.delete({"customer": "ada@example.com"}).model_dump()


granting = define_workflow(name="grant-access", uses=[shop.op("shop.staff.grant")], run=grant)
erasing = define_workflow(name="erase-customer", uses=[shop.op("shop.customer.delete")], run=erase)


@pytest.fixture
def company(engine_for):
    policy = load_cedar_policy(COMPANY_POLICIES)
    assert policy is not None
    engine = engine_for(refund, granting, erasing, connectors=[shop], collections=[notes], policy=policy)
    make_user("sam", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead")
    make_user("intern")
    make_user("sec", groups=["security"])
    return SimpleNamespace(engine=engine, policy=policy, fake=engine.config.fakes["shop"])


def run_command(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def held_refund(company, amount: int = 500) -> Run:
    run = company.engine.run("refund", {"order_id": "1001", "amount_cents": amount}, by="sam")
    assert run.status == "waiting", run.error
    return run


@pytest.fixture
def worker_while_waiting(monkeypatch):
    """A worker advances runs while `decide` waits for the run to read the decision; it says it is up,
    as a worker does (`runs.presence`), so `decide` waits for it."""

    def start(engine):
        # What a worker records when it starts (the workflow versions it runs), then its beat.
        register_version(version=engine.config.version, promote=False, config=engine.config)
        presence.beat(role=PresenceRole.WORKER, version=engine.config.version)
        fake_time = SimpleNamespace(monotonic=time.monotonic, sleep=lambda s: engine.drain())
        monkeypatch.setattr(approvals, "time", fake_time)

    return start


# -- manage.py decide ---------------------------------------------------------------------------------------


def test_decide_approves_as_finance_lead_and_prints_the_decided_approval(company, worker_while_waiting):
    run = held_refund(company)
    (held,) = Approval.objects.filter(run=run)
    assert held.title == "Refund needs finance"  # the policy's @title
    worker_while_waiting(company.engine)

    out = run_command("decide", run.id, "approve", "--as", "finance-lead", "--note", "ok", "--json")

    state = json.loads(out)  # with --json, the approval alone
    assert state["status"] == "approved" and state["note"] == "ok" and state["decided_by"] == "finance-lead"
    assert state["op"] == "shop.order.refund" and state["input"]["amount_cents"] == 500
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert [r["refund_id"] for r in company.fake.state["refunds"]] == ["re_1"]
    decided = company.engine.records(run, "approval.decided")
    assert [(r["by"], r["decision"], r["note"]) for r in decided] == [("finance-lead", "approve", "ok")]


def test_decide_without_a_worker_says_it_is_still_pending_then_applies(company):
    run = held_refund(company)
    out = run_command("decide", run.id, "approve", "--as", "finance-lead", "--timeout", "0", "--id", "m-1")
    assert out.strip() == "approval-1: sent; still pending (the run applies it when a worker runs)"  # the line alone
    # the operator retries the same message: it is sent once
    run_command("decide", run.id, "approve", "--as", "finance-lead", "--timeout", "0", "--id", "m-1")
    assert DecisionMessage.objects.filter(approval__run=run).count() == 1

    company.engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert Approval.objects.get(run=run).decided_with == "m-1"


def test_decide_reject_fails_the_run(company, worker_while_waiting):
    run = held_refund(company)
    worker_while_waiting(company.engine)
    out = run_command("decide", run.id, "reject", "--as", "finance-lead", "--note", "not this one")
    assert out == "approval-1: rejected by finance-lead\n"
    run.refresh_from_db()
    assert run.status == "failed" and run.error is not None
    assert run.error["code"] == "approval_rejected"
    assert "not this one" in run.error["message"]
    assert company.fake.state["refunds"] == []


def test_decide_a_group_hold_as_a_member(company, worker_while_waiting):
    run = company.engine.run("grant-access", by="sam")
    (held,) = Approval.objects.filter(run=run)
    assert (held.approver, held.title) == ("group:security", "shop.staff.grant needs group security")
    worker_while_waiting(company.engine)
    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "sam")
    # sam is not in group security, and started the run: separation of duties says so first.
    assert str(caught.value) == "sam started this run and cannot approve it (approval-1) [not_approver]"
    assert run_command("decide", run.id, "approve", "--as", "sec").startswith("approval-1: approved by sec")
    assert company.fake.state["staff"] == [{"username": "newhire", "role": "support"}]


def test_decide_refusals_are_command_errors_naming_what_is_wrong(company):
    run = held_refund(company)

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "intern", "--timeout", "0")
    assert str(caught.value) == f"No run {run.id}, or you may not see it [run_not_found]"  # intern may not see it

    with pytest.raises(CommandError) as caught:
        run_command("decide", "no-such-run", "approve", "--as", "finance-lead", "--timeout", "0")
    assert str(caught.value) == "No run no-such-run, or you may not see it [run_not_found]"

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "finance-lead", "--approval", "approval-7", "--timeout", "0")
    assert "approval-7" in str(caught.value) and "[no_pending_approval]" in str(caught.value)

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "maybe", "--as", "finance-lead")
    assert "maybe" in str(caught.value) and "approve" in str(caught.value) and "reject" in str(caught.value)

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve")
    assert "--as" in str(caught.value)

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "finance-lead", "--timeout", "soon")
    assert "--timeout" in str(caught.value)

    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "   ", "--timeout", "0")
    assert "[invalid_input]" in str(caught.value)

    assert DecisionMessage.objects.count() == 0
    assert Approval.objects.get(run=run).status == "pending"


def test_decide_again_after_the_run_ended_says_so(company, worker_while_waiting):
    run = held_refund(company)
    worker_while_waiting(company.engine)
    run_command("decide", run.id, "approve", "--as", "finance-lead")
    with pytest.raises(CommandError) as caught:
        run_command("decide", run.id, "approve", "--as", "finance-lead", "--timeout", "0")
    assert str(caught.value) == f"Run {run.id} has finished; it takes no more decisions [run_ended]"


# -- manage.py policy explain ------------------------------------------------------------------------------------


def lines_of(out: str) -> dict[str, str]:
    """The explanation's policy lines by policy id."""
    found = {}
    for line in out.splitlines():
        if line.startswith("  ["):
            mark = line[3:line.index("]")].strip()
            policy_id = line.split("] ", 1)[1].split()[1]
            found[policy_id] = mark
    return found


def test_explain_a_refund_shows_the_hold_for_finance_and_the_policies_that_applied(company):
    out = run_command("policy", "explain", "--op", "shop.order.refund", "--as", "sam",
                      "--input", '{"order_id": "1001", "amount_cents": 500}')
    first = out.splitlines()[0]
    assert first == f"shop.order.refund: {policy_version_of(company.policy)} (cedar)"
    assert lines_of(out) == {
        "operators-apply": "no",  # shop.cedar: operators keep the resources as declared, in apply runs only
        "merges-need-owners": "no",  # company/policies/changes.cedar: merging a change to the repo
        "reads-open": "no",
        "staff-may-act": "applies",
        "refunds-need-finance": "applies",
        "refund-daily-budget": "no",  # company/policies/budget.cedar: 5.00 EUR is within the day's budget
        "newsletters-need-owners": "no",  # company/policies/newsletter.cedar: a refund is not a newsletter
        "access-needs-security": "no",
        "no-customer-erasure": "no",
        "refunds-keep-notes": "no",  # company/policies/data.cedar: the notes collection
        "notes-kept": "no",
    }
    assert "shop.cedar:" in out  # where each policy is
    assert "decision now: approve (held for finance-lead)" in out


def test_explain_a_read_is_allowed_for_anyone(company):
    out = run_command(
        "policy", "explain", "--op", "shop.order.get", "--as", "intern", "--input", '{"order_id": "1001"}'
    )
    assert lines_of(out)["reads-open"] == "applies"
    assert lines_of(out)["staff-may-act"] == "no"
    assert out.rstrip().endswith("decision now: allow")


def test_explain_a_forbidden_erasure_gives_the_reason(company):
    out = run_command("policy", "explain", "--op", "shop.customer.delete", "--as", "sam",
                      "--input", '{"customer": "ada@example.com"}')
    assert lines_of(out)["no-customer-erasure"] == "applies"
    assert ("decision now: deny: shop.customer.delete was denied by policy: customer data is erased by the "
            "privacy team by hand, never by a workflow") in out


def test_the_company_denies_an_erasure_run_and_holds_access_for_security(company):
    run = company.engine.run("erase-customer", by="sam")
    assert run.status == "failed" and run.error["code"] == "policy_denied"
    assert "erased by the privacy team" in run.error["message"]
    assert company.fake.state["customers"] == ["ada@example.com", "grace@example.com"]


def test_explain_as_json_gives_the_whole_explanation(company):
    out = run_command("policy", "explain", "--op", "shop.staff.grant", "--as", "sam",
                      "--input", '{"username": "x", "role": "admin"}', "--json")
    data = json.loads(out)
    assert data["op"] == "shop.staff.grant" and data["kind"] == "cedar" and data["defined"] is True
    assert data["decision"]["kind"] == "approve" and data["decision"]["approver"] == "group:security"
    assert data["decision"]["policies"] == ["access-needs-security"]
    by_id = {p["id"]: p for p in data["policies"]}
    assert by_id["access-needs-security"]["satisfied"] is True
    assert by_id["access-needs-security"]["approver"] == "group:security"
    assert by_id["access-needs-security"]["lifted_by"] is None
    assert data["request"]["principal"] == {"type": "User", "id": "sam"}
    assert data["request"]["action"] == {"type": "Action", "id": "shop.staff.grant"}


def test_explain_a_recorded_call_shows_both_decisions(company, worker_while_waiting):
    run = held_refund(company)
    worker_while_waiting(company.engine)
    run_command("decide", run.id, "approve", "--as", "finance-lead")
    refund_seq = next(r["seq"] for r in company.engine.records(run, "op.called") if r["op"] == "shop.order.refund")

    out = run_command("policy", "explain", "--run", run.id, "--seq", str(refund_seq))
    assert out.splitlines()[0] == f"shop.order.refund: {policy_version_of(company.policy)} (cedar)"
    assert "refunds-need-finance" in out and "lifted by approval-1" in out
    assert "decision now: allow" in out
    assert f"decision recorded: allow under {company.policy.version}" in out


def test_explain_a_held_call_before_it_is_decided(company):
    run = held_refund(company)
    (held,) = Approval.objects.filter(run=run)
    out = run_command("policy", "explain", "--run", run.id, "--seq", str(held.op_seq))
    assert "decision now: approve (held for finance-lead)" in out
    assert "decision recorded" not in out


def test_explain_bad_arguments_are_command_errors_naming_what_is_wrong(company):
    run = held_refund(company)
    cases = [
        (("policy", "explain"), "give --run and --seq, or --op and --as"),
        (("policy", "explain", "--run", run.id), "--run needs --seq"),
        (("policy", "explain", "--op", "shop.order.refund"), "--op needs --as"),
        (("policy", "explain", "--op", "shop.order.refund", "--as", "sam", "--input", "{not json"),
         "--input is not JSON"),
        (("policy", "explain", "--op", "shop.nothing.here", "--as", "sam"), "No operation shop.nothing.here"),
        (("policy", "explain", "--op", "shop.order.refund", "--as", "sam", "--input", '{"order_id": "1"}'),
         "The input to shop.order.refund does not match its schema"),
        (("policy", "explain", "--run", "no-such-run", "--seq", "1"), "No run no-such-run [run_not_found]"),
        (("policy", "explain", "--run", run.id, "--seq", "99"), f"Run {run.id} has no call numbered 99"),
        (("policy", "explain", "--run", run.id, "--seq", "two"), "--seq"),
        (("policy", "describe"), "explain"),
    ]
    for args, says in cases:
        with pytest.raises(CommandError) as caught:
            run_command(*args)
        assert says in str(caught.value), (args, str(caught.value))


def test_explain_a_schema_error_names_the_field(company):
    with pytest.raises(CommandError) as caught:
        run_command("policy", "explain", "--op", "shop.order.refund", "--as", "sam", "--input", '{"order_id": "1"}')
    assert "amount_cents" in str(caught.value)
    assert "[invalid_input]" in str(caught.value)


def retry_refund(ctx, input):
    try:
        ctx.shop.order.refund({"order_id": "1001", "amount_cents": 500})
        first = "refunded"
    except Exception as err:
        first = str(err)
    ctx.approval("Escalated refund", approver="finance-lead", covers=[shop.op("shop.order.refund")])
    second = ctx.shop.order.refund({"order_id": "1001", "amount_cents": 500})
    return {"first": first, "second": second.refund_id}


retrying = define_workflow(name="retry-refund", uses=[shop.op("shop.order.refund"), "approval"], run=retry_refund)


def test_explain_a_recorded_call_uses_only_the_approvals_it_had_not_later_ones(engine_for):
    """A call held and rejected, then a later escalation approved: explaining the first call must not
    say a later approval lifted it (it was held, and rejected)."""
    engine = engine_for(retrying, connectors=[shop], policy=load_cedar_policy(COMPANY_POLICIES))
    make_user("sam", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead")
    run = engine.run("retry-refund", by="sam")
    approvals.decide(run_id=run.id, decision="reject", by="finance-lead", timeout=0)
    engine.drain()
    approvals.decide(run_id=run.id, decision="approve", by="finance-lead", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished", run.error
    first, second = engine.records(run, "op.called")
    assert first["approval"] == "approval-1" and first["error"]["code"] == "approval_rejected"
    assert second["decision"]["kind"] == "allow"

    later = run_command("policy", "explain", "--run", run.id, "--seq", str(second["seq"]))
    assert "lifted by approval-2" in later and "decision now: allow" in later

    out = run_command("policy", "explain", "--run", run.id, "--seq", str(first["seq"]))
    assert "decision recorded: approve" in out
    assert "approval-2" not in out, out  # approval-2 was asked for after this call was settled
    assert "decision now: approve (held for finance-lead)" in out
