"""The health conditions read from the database, as the desk's page and the health collector's
gauges (read through prometheus_client's own registry, as /metrics does) see them."""
from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from prometheus_client import CollectorRegistry, generate_latest

from runs import presence
from runs.authoring import define_workflow
from runs.engine import clock
from runs.health import conditions
from runs.health.metrics import HealthCollector
from runs.health.models import LedgerVerification
from runs.models import PresenceRole, Run, RunStatus, Step
from runs.tests.fixtures import GET
from runs.tests.test_ledger_integrity import _bypass, chain_of, flow


def ask(ctx, input):
    ctx.approval("Go?", approver="bob")
    return {"ok": True}


with_sla = define_workflow(name="with-sla", uses=["approval"], run=ask, approval_sla=timedelta(hours=1))
other_sla = define_workflow(name="other-sla", uses=["approval"], run=ask, approval_sla="2d")
no_sla = define_workflow(name="no-sla", uses=["approval"], run=ask)


def read_order(ctx, input):
    return {"total": ctx.acme.order.get({"order_id": "1"}).total}


reading = define_workflow(name="reading", uses=[GET], run=read_order)


def gauges() -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    registry = CollectorRegistry()
    registry.register(HealthCollector())
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in registry.collect() for sample in family.samples}


def by_key() -> dict[str, conditions.Condition]:
    return {c.key: c for c in conditions.conditions()}


def test_approvals_past_their_workflows_sla_are_counted_per_workflow(engine_for):
    engine = engine_for(with_sla, other_sla, no_sla)
    for name in ("with-sla", "with-sla", "other-sla", "no-sla"):
        assert engine.run(name).status == RunStatus.WAITING

    seen = gauges()
    assert seen[("sanoma_approvals_over_sla", (("workflow", "with-sla"),))] == 0
    assert seen[("sanoma_approval_sla_seconds", (("workflow", "with-sla"),))] == 3600
    assert seen[("sanoma_approval_sla_seconds", (("workflow", "other-sla"),))] == 2 * 86400
    assert not [key for key in seen if ("workflow", "no-sla") in key[1]]  # no SLA: no series
    assert by_key()["approvals"].ok is True

    clock.advance(timedelta(hours=2))
    seen = gauges()
    assert seen[("sanoma_approvals_over_sla", (("workflow", "with-sla"),))] == 2
    assert seen[("sanoma_approvals_over_sla", (("workflow", "other-sla"),))] == 0
    shown = by_key()["approvals"]
    assert shown.ok is False
    assert shown.summary == "2 approval(s) pending past their workflow's SLA"
    assert shown.details == ("with-sla: 2 pending longer than 60 min, the oldest for 2 h",)


def test_a_run_queued_past_the_limit_and_no_live_worker(engine_for):
    engine = engine_for(reading)
    assert by_key()["queue"].summary == "no run is queued"
    assert by_key()["workers"].ok is True  # nothing runnable: no worker needed

    run = engine.start("reading")
    shown = by_key()
    assert shown["queue"].ok is True and shown["queue"].summary.startswith("1 run(s) queued; the oldest for ")
    assert shown["workers"].ok is False
    assert shown["workers"].summary == "no live worker, 1 run(s) runnable"

    presence.beat(role=PresenceRole.WORKER, version="v1")
    assert by_key()["workers"].ok is True
    clock.advance(conditions.QUEUE_LIMIT + timedelta(seconds=1))
    queued = by_key()["queue"]
    assert queued.ok is False and queued.summary == "1 run(s) queued; the oldest for 5 min"

    Run.objects.filter(pk=run.pk).update(waiting_for="paused workflow reading")  # held by a pause: not runnable
    assert by_key()["queue"].ok is True


def test_a_vendor_failing_more_than_the_rate_is_named(engine_for):
    engine = engine_for(reading)
    for _ in range(conditions.FAILURE_MIN_CALLS + 1):
        assert engine.run("reading").status == RunStatus.FINISHED
    assert by_key()["vendors"].ok is True
    # Three of the ten calls in the window that reached the vendor fail there (more than 20 %);
    # a call a policy refused is not the vendor's.
    ids = list(Step.objects.filter(kind="call").order_by("-id").values_list("id", flat=True))
    Step.objects.filter(id__in=ids[:3]).update(error={"code": "driver_failed", "message": "502"})
    Step.objects.filter(id__in=ids[3:4]).update(error={"code": "policy_denied", "message": "no"})
    shown = by_key()["vendors"]
    assert shown.ok is False
    assert shown.details == ("acme: 3 of 10 calls failed (30%)",)
    # Out of the window, they no longer count.
    clock.advance(conditions.FAILURE_WINDOW + timedelta(seconds=1))
    assert by_key()["vendors"].ok is True


@pytest.mark.django_db(transaction=True)
def test_ledger_verify_is_kept_and_read_by_the_gauges(engine_for):
    engine = engine_for(flow)
    assert ("sanoma_ledger_verify_ok", ()) not in gauges()  # never verified: no series
    assert by_key()["ledger"].ok is None

    run = engine.run("ledgered")
    call_command("ledger", "verify")
    kept = LedgerVerification.objects.get()
    assert (kept.ok, kept.runs, kept.broken, kept.first_break) == (True, 1, 0, "")
    seen = gauges()
    assert seen[("sanoma_ledger_verify_ok", ())] == 1
    assert seen[("sanoma_ledger_verify_last_timestamp_seconds", ())] == kept.checked_at.timestamp()

    call_command("ledger", "verify", "--run", run.id)  # one run's verify is not kept
    assert LedgerVerification.objects.count() == 1

    edited = chain_of(run.id)[1]["record_id"]
    _bypass([f"UPDATE runs_ledgerrecord SET actor = 'mallory' WHERE record_id = '{edited}'"])
    with pytest.raises(CommandError):
        call_command("ledger", "verify")
    latest = LedgerVerification.objects.order_by("-id").first()
    assert latest is not None and not latest.ok and latest.broken == 1 and edited in latest.first_break
    assert gauges()[("sanoma_ledger_verify_ok", ())] == 0
    shown = by_key()["ledger"]
    assert shown.ok is False and shown.alert == "SanomaLedgerVerifyFailed" and edited in shown.details[0]

    clock.advance(conditions.VERIFY_STALE + timedelta(minutes=1))
    LedgerVerification.objects.filter(ok=False).delete()
    shown = by_key()["ledger"]
    assert shown.ok is False and shown.alert == "SanomaLedgerVerifyStale"


def test_the_collector_output_parses_as_prometheus_text(engine_for):
    engine_for(with_sla)
    registry = CollectorRegistry()
    registry.register(HealthCollector())
    text = generate_latest(registry).decode()
    assert 'sanoma_approvals_over_sla{workflow="with-sla"} 0.0' in text
