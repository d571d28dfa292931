"""The demo's company does what the README and the demo's page say it does, on its own people and
its own workflows (`company/`, its shop on its fake): its people come from its data files and each
signs in to what their role allows; a shipment left in doubt is settled by the operator, or by the
carrier's lookup; runs are found by the order they are for; the `--as ops` commands run; the
superuser and the operators may apply, a viewer may not.
"""
from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.test import Client, override_settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.resources.directory import people_and_groups
from changes.services import verdict
from connectors.errors import SanomaError
from runs import recovery
from runs.config.datafiles import read_datafiles
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import clock
from runs.engine.drain import drain
from runs.models import LedgerRecord, Run
from runs.seed import DEMO_SUPERUSER as SUPERUSER
from runs.seed import people_from_datafiles, seed_from_datafiles
from runs.services import start
from sanoma_site.demo import demo_secrets, stage_in_doubt, start_example_runs

COMPANY = Path(__file__).resolve().parents[2] / "company"
FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]
User = get_user_model()


@pytest.fixture
def company(tmp_path: Path, db) -> Iterator[ResolvedConfig]:
    """The example company on its fakes (kept in files, as the demo keeps them), and its people."""
    config = load_config(COMPANY, fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    with override_settings(PASSWORD_HASHERS=FAST_HASHER):
        seed_from_datafiles(read_datafiles(COMPANY, config.connectors))
        try:
            yield config
        finally:
            set_config(None)


def api(username: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + Token.objects.get_or_create(
        user=User.objects.get(username=username))[0].key)
    return client


def booking(config: ResolvedConfig) -> dict:
    """What the carrier's dashboard shows: its one booking."""
    [booked] = config.fakes["shop"].state["shipments"]
    return booked


# ---- people ------------------------------------------------------------------------------------


def test_the_demo_people_are_the_data_files_people_and_each_signs_in_to_what_their_role_allows(company):
    people = {p.username: p for p in people_from_datafiles(read_datafiles(COMPANY, company.connectors))}
    assert {"admin", "alice", "finance-lead", "ops", "vera"} <= set(people)
    assert [p.username for p in people.values() if p.superuser] == [SUPERUSER]
    rows, _ = people_and_groups(read_datafiles(COMPANY, company.connectors))
    assert {r.username: r.desk for r in rows if r.declared_at} == {name: "can sign in" for name in people}

    may = {name: User.objects.get(username=name) for name in ("admin", "alice", "finance-lead", "ops", "vera")}
    assert may["admin"].is_superuser and not any(u.is_superuser for n, u in may.items() if n != "admin")
    # The starter starts, sees only her own runs; the operator sees and operates every run; the viewer
    # sees every run and does nothing else.
    assert may["alice"].has_perm("runs.start_workflow") and not may["alice"].has_perm("runs.view_any_run")
    assert all(may["ops"].has_perm(p) for p in ("runs.view_any_run", "runs.operate_runs", "runs.rerun_runs",
                                                "runs.pause", "credentials.manage_credentials"))
    assert may["vera"].has_perm("runs.view_any_run")
    assert not any(may["vera"].has_perm(p) for p in ("runs.start_workflow", "runs.operate_runs", "runs.pause"))
    assert sorted(g.name for g in may["finance-lead"].groups.all()) == ["finance", "staff"]

    refund = start(workflow="refund", input={"order_id": "1001", "amount_cents": 1500}, started_by="alice",
                   config=company)
    mine = start(workflow="follow-up", input={"order_id": "1002"}, started_by="finance-lead", config=company)
    for name in may:
        client = Client()
        signed_in = client.post("/admin/login/?next=/admin/", {"username": name, "password": name})
        assert signed_in.status_code == 302 and signed_in["Location"] == "/admin/", name
        listed = client.get("/admin/runs/run/")
        assert listed.status_code == 200, name
        shown = {run.id for run in listed.context["cl"].result_list} & {refund.id, mine.id}
        sees_all = name in ("admin", "ops", "vera")
        assert shown == ({refund.id, mine.id} if sees_all else
                         {refund.id} if name == "alice" else {mine.id}), name
        before = Run.objects.count()
        starts = client.post("/admin/runs/run/start/?workflow=follow-up",
                             {"order_id": "1001", "after_seconds": "2", "_start": "Start"})
        may_start = name != "vera"
        assert (starts.status_code == 302, Run.objects.count() - before) == (may_start, int(may_start)), name
        if not may_start:
            assert "vera may not start follow-up" in starts.content.decode()


def test_each_secret_the_data_files_name_gets_a_made_up_value_long_enough_for_the_shop():
    from company.vendors.shop import shop

    secrets = demo_secrets(read_datafiles(COMPANY, [shop]))
    assert list(secrets) == ["SHOP_WEBHOOK_SECRET"] and len(secrets["SHOP_WEBHOOK_SECRET"]) >= 16


# ---- a call in doubt ---------------------------------------------------------------------------


def test_a_shipment_in_doubt_waits_for_the_operator_who_settles_it_and_the_carrier_books_once(company):
    run = stage_in_doubt(company)
    assert run.status == "queued"  # taken over from the worker that died, for the next one
    drain(company)
    run.refresh_from_db()
    assert (run.status, run.waiting_for) == ("waiting", "in_doubt")
    out = io.StringIO()
    call_command("resolve", stdout=out)
    assert out.getvalue().split() == [run.id, "ship", "step", "2:", "shop.shipment.book", "(attempt", "1)"]

    booked = booking(company)
    with pytest.raises(SanomaError, match="permission|operate"):  # the starter may not settle it
        recovery.resolve_in_doubt(run_id=run.id, happened=True, output=booked, by="alice")
    call_command("resolve", run.id, "--happened", "--output", json.dumps(booked), "--note", "in the dashboard",
                 "--as", "ops", stdout=io.StringIO())
    drain(company)
    run.refresh_from_db()
    assert run.status == "finished" and run.result == {"shipment_id": booked["shipment_id"],
                                                       "tracking": booked["tracking"]}
    calls = [c["op"] for c in company.fakes["shop"].calls]
    assert calls.count("shop.shipment.book") == 1  # never booked twice
    assert calls.count("shop.customer.notify") == 1
    [resolved] = LedgerRecord.objects.filter(run_id=run.id, kind="op.resolved")
    assert (resolved.body["by"], resolved.body["happened"], resolved.actor) == ("ops", True, "ops")


def test_the_carriers_lookup_settles_a_doubt_it_can_answer_without_anyone(company):
    run = stage_in_doubt(company, lookup_down=False)
    drain(company)
    run.refresh_from_db()
    # The booking may still land until its deadline (its timeout from the intent): until then the
    # run waits in doubt and the lookup is not asked; past it, the lookup settles the doubt.
    assert (run.status, run.waiting_for) == ("waiting", "in_doubt") and run.wake_at is not None
    assert "shop.shipment.find" not in [c["op"] for c in company.fakes["shop"].calls]
    clock.advance(run.wake_at - clock.now())
    drain(company)
    run.refresh_from_db()
    assert run.status == "finished" and (run.result or {}).get("tracking") == booking(company)["tracking"]
    [resolved] = LedgerRecord.objects.filter(run_id=run.id, kind="op.resolved")
    assert (resolved.body["by"], resolved.body["happened"]) == ("reconcile", True)
    assert [c["op"] for c in company.fakes["shop"].calls].count("shop.shipment.book") == 1


# ---- tags --------------------------------------------------------------------------------------


def test_the_runs_of_order_1001_are_found_by_their_tag_in_the_api_and_the_command(company):
    ship = stage_in_doubt(company)
    started, problems = start_example_runs()
    assert not problems
    drain(company)
    by_workflow = {run.workflow: run.id for run in [ship, *started]}
    for_1001 = {by_workflow["refund"], by_workflow["ship"]}

    answered = api("ops").get("/api/runs", {"tag": "order=1001"})
    assert answered.status_code == 200
    assert {row["run_id"] for row in answered.json()["results"]} == for_1001
    customer = api("ops").get("/api/runs", {"tag": ["order=1001", "customer=ada@example.com"]}).json()
    # The shipment in doubt has not read the order yet, so it is not tagged with its customer.
    assert {row["run_id"] for row in customer["results"]} == {by_workflow["refund"]}
    assert {row["run_id"] for row in api("ops").get("/api/runs", {"tag": "order=1002"}).json()["results"]} == {
        by_workflow["follow-up"]}
    out = io.StringIO()
    call_command("runs", "--tag", "order=1001", "--as", "ops", stdout=out)
    assert {line.split()[4] for line in out.getvalue().splitlines() if line.startswith("20")} == for_1001


# ---- the operator's commands and apply -----------------------------------------------------------


def run_command(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    try:
        call_command(*args, stdout=out)
    except SystemExit as exit:
        return int(exit.code or 0), out.getvalue()
    return 0, out.getvalue()


def test_the_operators_commands_run_as_written(company):
    for args in (("pause", "shop", "--reason", "API down since 14:02"),
                 ("pause", "shop.order.refund", "--reason", "double charges"),
                 ("pause", "refund", "--kind", "workflow", "--reason", "pricing review"),
                 ("unpause", "shop"), ("unpause", "shop.order.refund"), ("unpause", "refund", "--kind", "workflow")):
        call_command(*args, "--as", "ops", stdout=io.StringIO())
    # --here: the command runs the run itself, as the demo's worker would.
    code, drifted = run_command("drift", "--as", "ops", "--here")
    assert code == 2 and "gone     shop.product  tote" in drifted, drifted
    # The people and groups the demo seeded are what the data files declare.
    assert not [line for line in drifted.splitlines() if "sanoma." in line], drifted
    code, planned = run_command("plan", "--as", "ops", "--here")
    assert code == 2 and "shop.product.create: allowed" in planned and "denied" not in planned, planned
    with pytest.raises(CommandError, match="vera may not start drift"):
        call_command("plan", "--as", "vera", "--here", stdout=io.StringIO())


def test_the_superuser_and_the_operators_may_apply_and_a_viewer_may_not(company):
    update = {"id": "mug", "handle": "prod_1", "changes": {"price_cents": 1500},
              "desired": {"sku": "mug", "title": "Mug", "price_cents": 1500}}
    create = {"desired": {"sku": "tote", "title": "Tote bag", "price_cents": 1200}}
    for who in ("admin", "ops"):
        assert verdict(company, "shop.product.update", update, who)["decision"] == "allow", who
        assert verdict(company, "shop.product.create", create, who)["decision"] == "allow", who
        # Access still waits for security, whoever applies.
        held = verdict(company, "shop.staff_role.create", {"desired": {"user": "sam", "role": "admin"}}, who)
        assert (held["decision"], held["approver"]) == ("held", "group:security"), who
    refused = verdict(company, "shop.product.update", update, "vera")
    assert refused["decision"] == "deny", refused
