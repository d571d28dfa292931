"""The metrics the engine fires, counted as a run goes, and what /metrics shows and to whom.

Counters are read from this process's own values (`prometheus_client`'s registry) before and
after, so other processes writing to the same folder change nothing here.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.test import Client, override_settings
from prometheus_client import REGISTRY
from prometheus_client.metrics_core import GaugeMetricFamily
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from runs import services
from runs.approvals import services as approvals
from runs.approvals.permissions import Principal
from runs.authoring import define_workflow
from runs.engine import clock
from runs.models import Approval, Run, RunStatus, Step, WorkerPresence
from runs.policies import allow, approve, approved_for, define_policy, deny
from runs.telemetry import metrics
from runs.telemetry.collector import waiting_kind
from runs.testing import make_user
from runs.tests.fixtures import GET, PUBLISH, REFUND, SEND


def hold_money(call):
    if call.effect != "money" or approved_for(call.run.approvals, call.op["id"], "finance-lead"):
        return allow()
    return approve("finance-lead")


def deny_money(call):
    return deny("no refunds today") if call.effect == "money" else allow()


def read_refund_mail(ctx, input):
    order = ctx.acme.order.get({"order_id": "1"})
    ctx.acme.order.refund({"order_id": "1", "amount": order.total})
    ctx.acme.mail.send({"to": "alice", "text": "refunded"})
    return {"ok": True}


def publish(ctx, input):
    return {"id": ctx.acme.post.publish({"text": "hello"}).id}


def nap(ctx, input):
    ctx.sleep(ms=1)
    return {"ok": True}


METERED = define_workflow(name="metered", uses=[GET, REFUND, SEND], run=read_refund_mail)
PUBLISHING = define_workflow(name="publishing", uses=[PUBLISH], run=publish)
NAPPING = define_workflow(name="napping", uses=["sleep"], run=nap)


def sample(name: str, **labels: str) -> float:
    metrics.flush()  # as a scrape does: this process's values added up since its last write
    return REGISTRY.get_sample_value(name, labels) or 0.0


class Counts:
    """Samples read now, and how much each grew since."""

    def __init__(self, *names: tuple[str, dict[str, str]]) -> None:
        self.names = names
        self.before = [sample(name, **labels) for name, labels in names]

    def grown(self) -> list[float]:
        return [sample(name, **labels) - before for (name, labels), before in zip(self.names, self.before, strict=True)]


def call_sample(op: str, effect: str, outcome: str) -> tuple[str, dict[str, str]]:
    return ("sanoma_calls_total", {"connector": "acme", "operation": op, "effect": effect, "outcome": outcome})


def decide(run: Run, decision: str) -> None:
    approval = Approval.objects.get(run=run, status="pending")
    approvals.send_decision(approval=approval, decision=decision, by=Principal(id="finance-lead"))


def test_a_held_run_counts_its_start_steps_calls_decisions_wake_and_end(engine_for,
                                                                         django_capture_on_commit_callbacks):
    engine = engine_for(METERED, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    counts = Counts(
        ("sanoma_runs_started_total", {"workflow": "metered"}),
        ("sanoma_runs_ended_total", {"workflow": "metered", "outcome": "finished"}),
        ("sanoma_steps_total", {"workflow": "metered", "kind": "call"}),
        call_sample("acme.order.get", "read", "ok"),
        call_sample("acme.order.refund", "money", "ok"),
        call_sample("acme.mail.send", "send", "ok"),
        ("sanoma_policy_decisions_total", {"decision": "approve"}),
        ("sanoma_wake_latency_seconds_count", {}),
        ("sanoma_call_duration_seconds_count", {"connector": "acme", "operation": "acme.order.get", "effect": "read"}),
    )
    with django_capture_on_commit_callbacks(execute=True):
        run = engine.run("metered")
    assert run.status == RunStatus.WAITING
    assert counts.grown() == [1, 0, 1, 1, 0, 0, 1, 0, 1]  # started; the read made; the refund held
    with django_capture_on_commit_callbacks(execute=True):
        decide(run, "approve")
        engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED, run.error
    assert counts.grown() == [1, 1, 3, 1, 1, 1, 1, 1, 1]


def test_steps_are_counted_by_kind_as_the_database_has_them(engine_for, django_capture_on_commit_callbacks):
    engine = engine_for(METERED, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    kinds = ("call",)
    before = {kind: sample("sanoma_steps_total", workflow="metered", kind=kind) for kind in kinds}
    run = engine.run("metered")
    decide(run, "approve")
    engine.drain()
    written = {kind: Step.objects.filter(run=run, kind=kind).count() for kind in kinds}
    assert written["call"] == 3
    assert {kind: sample("sanoma_steps_total", workflow="metered", kind=kind) - before[kind] for kind in kinds} \
        == written


def test_a_denied_call_and_a_rejected_one_are_counted_by_outcome(engine_for):
    engine = engine_for(METERED, policy=define_policy(deny_money, version="v1"))
    counts = Counts(call_sample("acme.order.refund", "money", "denied"),
                    ("sanoma_policy_decisions_total", {"decision": "deny"}),
                    ("sanoma_runs_ended_total", {"workflow": "metered", "outcome": "failed"}))
    run = engine.run("metered")
    assert run.status == RunStatus.FAILED
    assert counts.grown() == [1, 1, 1]

    engine = engine_for(METERED, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    counts = Counts(call_sample("acme.order.refund", "money", "rejected"))
    run = engine.run("metered")
    decide(run, "reject")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FAILED
    assert counts.grown() == [1]


def test_a_retried_attempt_is_counted_and_timed(engine_for):
    engine = engine_for(PUBLISHING)
    engine.fake.fail_next("acme.post.publish")
    counts = Counts(("sanoma_call_retries_total", {"connector": "acme", "operation": "acme.post.publish"}),
                    call_sample("acme.post.publish", "publish", "ok"),
                    ("sanoma_call_duration_seconds_count",
                     {"connector": "acme", "operation": "acme.post.publish", "effect": "publish"}))
    run = engine.run("publishing")
    assert run.status == RunStatus.FINISHED, run.error
    assert counts.grown() == [1, 1, 2]  # one retry; one call settled; two attempts timed


def test_a_sleeper_counts_its_wake_latency_once(engine_for):
    engine = engine_for(NAPPING)
    before = sample("sanoma_wake_latency_seconds_count")
    slow_before = sample("sanoma_wake_latency_seconds_bucket", le="+Inf") - sample(
        "sanoma_wake_latency_seconds_bucket", le="60.0")
    run = engine.run("napping")
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED, run.error
    assert sample("sanoma_wake_latency_seconds_count") - before == 1
    slow_after = sample("sanoma_wake_latency_seconds_bucket", le="+Inf") - sample(
        "sanoma_wake_latency_seconds_bucket", le="60.0")
    assert slow_after == slow_before  # woken within a minute of its deadline


def test_a_cancel_counts_as_an_end_once_it_commits(engine_for, django_capture_on_commit_callbacks):
    engine = engine_for(METERED, policy=define_policy(hold_money, version="v1"))
    counts = Counts(("sanoma_runs_ended_total", {"workflow": "metered", "outcome": "cancelled"}))
    run = engine.run("metered")
    with django_capture_on_commit_callbacks(execute=True):
        services.cancel(run_id=run.id, by="alice", reason="not needed")
    assert counts.grown() == [1]


def test_with_metrics_off_nothing_is_counted(engine_for, django_capture_on_commit_callbacks):
    engine = engine_for(PUBLISHING)
    counts = Counts(("sanoma_runs_started_total", {"workflow": "publishing"}),
                    ("sanoma_steps_total", {"workflow": "publishing", "kind": "call"}),
                    call_sample("acme.post.publish", "publish", "ok"))
    with override_settings(SANOMA_METRICS=False), django_capture_on_commit_callbacks(execute=True):
        assert engine.run("publishing").status == RunStatus.FINISHED
    assert counts.grown() == [0, 0, 0]


def test_a_changes_end_is_named_by_its_outcome():
    assert metrics.change_outcome("finished", None) == "deployed"
    assert metrics.change_outcome("failed", {"code": "checks_failed"}) == "checks_failed"
    assert metrics.change_outcome("cancelled", None) == "cancelled"


# ---- /metrics ---------------------------------------------------------------------------------------


def scrape(client: Client, **headers: str) -> dict[str, list]:
    response = client.get("/metrics", headers=headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return {family.name: family.samples for family in text_string_to_metric_families(response.content.decode())}


def refused(response, status: int, code: str) -> None:
    assert response.status_code == status, response.content
    body = json.loads(response.content)
    assert body["code"] == code and body["error"], body


@pytest.mark.django_db
def test_metrics_are_refused_to_anyone_but_a_superuser_or_the_token():
    make_user("ops", perms=["runs.view_run"])
    make_user("root", superuser=True)
    client = Client()
    response = client.get("/metrics")
    refused(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"].startswith("Bearer")
    refused(client.get("/metrics", headers={"Authorization": "Basic b3BzOm9wcw=="}), 401, "not_authenticated")
    no_token = client.get("/metrics", headers={"Authorization": "Bearer anything"})
    refused(no_token, 403, "permission_denied")
    assert "No metrics token is set on this site" in no_token.json()["error"]  # not "that token is wrong"
    client.force_login(make_user("ops2"))
    refused(client.get("/metrics"), 403, "permission_denied")
    with override_settings(SANOMA_METRICS_TOKEN="s3cret-token"):
        refused(Client().get("/metrics", headers={"Authorization": "Bearer s3cret-tokem"}), 403, "permission_denied")
        assert "sanoma_queue_runnable" in scrape(Client(), Authorization="Bearer s3cret-token")
    root = Client()
    root.force_login(make_user("root2", superuser=True))
    assert "sanoma_queue_runnable" in scrape(root)
    assert root.post("/metrics").status_code == 405


def test_the_gauges_read_what_waits_for_whom_and_who_is_up(engine_for, admin_client):
    engine = engine_for(METERED, NAPPING, policy=define_policy(hold_money, version="v1"))
    held = [engine.run("metered") for _ in range(2)]
    assert {r.status for r in held} == {RunStatus.WAITING}
    Approval.objects.filter(run=held[0]).update(requested_at=clock.now() - timedelta(minutes=10))
    queued = engine.start("napping")
    Run.objects.filter(pk=queued.pk).update(queued_at=clock.now() - timedelta(seconds=90))
    now = clock.now()
    WorkerPresence.objects.create(name="h:1", role="worker", host="h", pid=1, version="app@v7", started_at=now,
                                  seen_at=now)
    WorkerPresence.objects.create(name="h:2", role="worker", host="h", pid=2, version="app@v6", started_at=now,
                                  seen_at=now - timedelta(minutes=5))
    families = scrape(admin_client)

    def values(name: str) -> dict[tuple, float]:
        return {tuple(sorted(s.labels.items())): s.value for s in families[name]}

    assert values("sanoma_runs_waiting") == {(("waiting_for", "approval"), ("workflow", "metered")): 2}
    assert values("sanoma_approvals_pending") == {(("approver", "finance-lead"),): 2}
    [(_, oldest)] = values("sanoma_approval_oldest_pending_seconds").items()
    assert 600 <= oldest < 660
    assert values("sanoma_queue_runnable") == {(): 1}
    [(_, age)] = values("sanoma_queue_oldest_runnable_seconds").items()
    assert 90 <= age < 150
    assert values("sanoma_workers_live") == {(("version", "app@v7"),): 1}  # the one that stopped beating is gone
    text = admin_client.get("/metrics").content.decode()
    for run in [*held, queued]:
        assert run.id not in text  # no label carries a run id


def test_waiting_for_is_a_short_list_of_kinds():
    assert waiting_kind("approval") == "approval"
    assert waiting_kind("paused refund") == "paused"
    assert waiting_kind("") == "unknown"


class SpareCollector(Collector):
    def collect(self):
        family = GaugeMetricFamily("sanoma_spare_answer", "A collector the settings add")
        family.add_metric([], 42)
        yield family


@pytest.mark.django_db
def test_metrics_add_the_collectors_the_settings_name(admin_client):
    with override_settings(SANOMA_METRICS_COLLECTORS=["runs.tests.test_telemetry_metrics.SpareCollector"]):
        families = scrape(admin_client)
    assert [s.value for s in families["sanoma_spare_answer"]] == [42]


@pytest.mark.django_db
def test_a_collector_path_that_names_nothing_is_an_error_naming_it(admin_client):
    with override_settings(SANOMA_METRICS_COLLECTORS=["runs.tests.nowhere.Collector"]):
        response = admin_client.get("/metrics")
    refused(response, 500, "config_invalid")
    assert "SANOMA_METRICS_COLLECTORS names 'runs.tests.nowhere.Collector'" in json.loads(response.content)["error"]


def test_a_host_starting_empties_only_the_folder_this_process_writes_to(tmp_path, monkeypatch):
    own, other = tmp_path / "own", tmp_path / "other"
    for folder in (own, other):
        folder.mkdir()
        (folder / "counter_4242.db").write_bytes(b"stale")
        (folder / "notes.txt").write_text("kept")
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(own))
    assert metrics.reset_folder(str(other)) == 0  # not this process's folder: left alone
    assert (other / "counter_4242.db").exists()
    assert metrics.reset_folder(str(own)) == 1
    assert sorted(p.name for p in own.iterdir()) == ["notes.txt"]
