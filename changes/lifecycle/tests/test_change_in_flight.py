"""What a change does to the work in flight, proven for real before anyone lets it merge.

A small shop company (the example company's shop, on its fakes) whose live runs wait: two
`parcel` runs parked on their `shipped` message, one `refund` run held for finance by the policy.
Three changes go through the change workflow on the embedded git remote (its checks in their own
process, the proof in two more: `manage.py replay --tree` and `manage.py rejudge --tree` on this
test's database):

- a step appended after the wait: both parcels migrate, named nowhere; the refund is untouched;
- a call inserted before the wait: both parcels stay pinned, each named at the step that differs,
  and the policy holds that merge for the operators instead of the owners (`context.input.in_flight`);
- a policy edit that drops finance's hold: the held refund would be released (nothing is decided
  by the check: it stays pending).

Each time the change's report, its page (the *Work in flight* table), `manage.py change show`, the
API's change and the merge's approval (its summary in the inbox, its input) say exactly that.

`transaction=True`: the proof's processes read the parked runs, so what this test writes must be
committed. The change runs advance in this process (`drain`), as in test_change_review.py.
"""
from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.admin.utils import quote
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from changes.lifecycle import in_flight
from changes.lifecycle.models import ChangeRun
from changes.lifecycle.services import open_change
from changes.lifecycle.tests.gitco import POLICY, gitco_site, push
from runs import services as run_services
from runs.config.resolution import ResolvedConfig
from runs.engine.drain import drain
from runs.models import Approval, ApprovalStatus, Run, RunStatus
from runs.testing import make_user

pytestmark = pytest.mark.django_db(transaction=True)

CONFIG = """\
from company.vendors.shop import shop
from runs.authoring import SanomaConfig

config = SanomaConfig(app_name="flightco", connectors=[shop])
"""
PARCEL = '''\
"""Wait for the warehouse to ship an order."""
from pydantic import BaseModel

from runs.authoring import Ctx, define_workflow


class ParcelInput(BaseModel):
    order_id: str


def run(ctx: Ctx, input: ParcelInput):
    order = ctx.shop.order.get({"order_id": input.order_id})
    ctx.wait_message("shipped")
    return {"customer": order.customer}


parcel = define_workflow(name="parcel", title="Wait for a parcel to ship", input=ParcelInput, run=run)
'''
REFUND = '''\
"""Refund an order, as finance allows."""
from pydantic import BaseModel

from runs.authoring import Ctx, define_workflow


class RefundInput(BaseModel):
    order_id: str
    amount_cents: int


def run(ctx: Ctx, input: RefundInput):
    refund = ctx.shop.order.refund({"order_id": input.order_id, "amount_cents": input.amount_cents})
    return {"refund_id": refund.refund_id}


refund = define_workflow(name="refund", title="Refund an order", input=RefundInput, run=run)
'''
FINANCE = """
@id("refunds-need-finance")
@approve("group:finance")
@title("Refund needs finance")
forbid(principal, action == Action::"shop.order.refund", resource);
"""
# The owners merge; a merge that would leave runs on their old code is the operators' to let through.
MERGES = POLICY.replace('''forbid(principal, action == Action::"sanoma.change.merge", resource);''', '''\
forbid(principal, action == Action::"sanoma.change.merge", resource)
unless { context.input.in_flight.pins > 0 };

@id("merges-that-pin-runs-need-operators")
@approve("group:operators")
@title("Merge a change that leaves runs on their old code")
forbid(principal, action == Action::"sanoma.change.merge", resource)
when { context.input.in_flight.pins > 0 };''')
DECIDERS = {"group:owners": "sam", "group:operators": "olga"}
FILES = {"sanoma_config.py": CONFIG, "workflows/parcel.py": PARCEL, "workflows/refund.py": REFUND,
         "policies/main.cedar": MERGES + FINANCE}


@pytest.fixture
def site(tmp_path: Path, transactional_db: None) -> Iterator[tuple[Path, Path, ResolvedConfig]]:
    make_user("fran", groups=["staff", "finance"])
    make_user("olga", groups=["staff", "operators"])
    with gitco_site(tmp_path, FILES) as made:
        get_user_model().objects.filter(username__in=["alice", "sam", "olga"]).update(is_staff=True)
        yield made


def desk(username: str) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.get(username=username))
    return client


def api(username: str) -> APIClient:
    client = APIClient()
    user = get_user_model().objects.get(username=username)
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return client


def park(config: ResolvedConfig) -> tuple[list[str], str]:
    """Two parcels waiting for `shipped`, a refund held for finance: the work in flight."""
    parcels = [run_services.start(workflow="parcel", input={"order_id": order}, started_by="alice", config=config).id
               for order in ("1001", "1002")]
    refund = run_services.start(workflow="refund", input={"order_id": "1001", "amount_cents": 500},
                                started_by="alice", config=config).id
    drain(config)
    waiting = dict(Run.objects.filter(pk__in=[*parcels, refund]).values_list("id", "waiting_for"))
    assert waiting == {parcels[0]: "message", parcels[1]: "message", refund: "approval"}, waiting
    assert Approval.objects.get(run_id=refund, status=ApprovalStatus.PENDING).approver == "group:finance"
    return sorted(parcels), refund


def review(site: tuple[Path, Path, ResolvedConfig], branch: str, files: dict[str, str]
           ) -> tuple[Run, ChangeRun, Approval]:
    """The change of `branch` (pushed with `files`) checked, proven, and its merge held."""
    remote, clone, config = site
    push(clone, branch, files, branch)
    run = open_change(branch=branch, title=branch, url=str(remote), by="alice", config=config)
    drain(config)
    change = ChangeRun.objects.get(pk=run.id)
    assert change.checks.get("ok"), change.checks
    approval = Approval.objects.get(run_id=run.id, status=ApprovalStatus.PENDING)
    assert approval.op == "sanoma.change.merge"
    return run, change, approval


def shown(run_id: str) -> str:
    out = io.StringIO()
    call_command("change", "show", run_id, stdout=out)
    return out.getvalue()


def table_rows(page: str) -> list[tuple[str, ...]]:
    """The *Work in flight* table's rows as (outcome, run, workflow, what)."""
    block = page.split('id="in-flight"', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r'<tr class="in-flight (\w+)"><td>\w+</td><td class="run"><a href="[^"]*">([^<]+)</a></td>'
                      r"<td>([^<]*)</td><td>([^<]*)</td></tr>", block)
    return [(outcome, run, workflow, what.replace("&#x27;", "'").replace("&rarr;", "\u2192"))
            for outcome, run, workflow, what in rows]


def every_surface_says(run: Run, approval: Approval, section: dict[str, Any], approver: str) -> None:
    """The report's section on the change's page, `change show`, the API and the merge's approval."""
    said = section["said"]
    counts = {k: section[k] for k in ("migrates", "pins", "releases", "reassigns", "refuses")}
    merging = approval.op_input or {}
    assert merging["in_flight"] == counts and merging["work_in_flight"] == said
    assert approval.approver == approver

    page = desk("alice").get(f"/admin/lifecycle/changerun/{quote(run.id)}/change/").content.decode()
    said_html = said.replace("'", "&#x27;")
    assert f'<caption>Work in flight: <span class="sanoma-as-is">{said_html}</span></caption>' in page
    decider = DECIDERS[approver]
    approval_page = desk(decider).get(f"/admin/runs/approval/{approval.pk}/change/").content.decode()
    assert table_rows(approval_page) == table_rows(page)

    text = shown(run.id)
    assert f"  work in flight: {said}\n" in text
    answer = api("alice").get(f"/api/changes/{run.id}").json()
    assert answer["in_flight"] == section and "in_flight" not in answer["checks"]
    inbox = desk(decider).get("/admin/runs/approval/").content.decode()
    assert f"Merge {run.input['branch']} (" in inbox and f") into main: {said}".replace("'", "&#x27;") in inbox


def test_a_changes_review_says_which_parked_runs_migrate_which_stay_pinned_and_which_held_calls_go(site):
    remote, clone, config = site
    parcels, refund = park(config)
    # Each workflow has a version of its own (its code, what it calls, the policy): a change of the
    # parcel's code leaves the refund's version as it is, and the deploy leaves the refund alone.
    # Where the version still covers the whole app, the refund moves with any change.
    own_versions = bool(getattr(config, "workflow_versions", None))
    moved_along = [] if own_versions else [refund]

    # A step appended after the wait: the parcels reach their wait by the same steps, and migrate.
    appended = PARCEL.replace('    return {"customer": order.customer}',
                              '    ctx.shop.customer.notify({"customer": order.customer, "subject": "Shipped"})\n'
                              '    return {"customer": order.customer}')
    run, change, approval = review(site, "notify-when-shipped", {"workflows/parcel.py": appended})
    section = change.checks["in_flight"]
    assert [c["name"] for c in change.checks["checks"]][-1] == "in_flight"
    assert sorted(m["run"] for m in section["migrated"]) == sorted([*parcels, *moved_along]), section
    assert (section["pins"], section["releases"], section["unchanged"]) == (0, 0, 1 - len(moved_along))
    assert section["said"] == f"migrates {2 + len(moved_along)} parked runs"
    every_surface_says(run, approval, section, "group:owners")
    run_services.cancel(run_id=run.id, by="alice", reason="the test's next change")

    # A call inserted before the wait: the parcels' records differ at step 2; they stay pinned, named.
    inserted = PARCEL.replace('    ctx.wait_message("shipped")',
                              '    ctx.shop.customer.notify({"customer": order.customer, "subject": "Packed"})\n'
                              '    ctx.wait_message("shipped")')
    run, change, approval = review(site, "notify-when-packed", {"workflows/parcel.py": inserted})
    section = change.checks["in_flight"]
    assert (section["migrates"], section["pins"]) == (len(moved_along), 2), section
    pinned = sorted(section["pinned"], key=lambda p: p["run"])
    assert [(p["run"], p["step"]) for p in pinned] == [(parcels[0], 2), (parcels[1], 2)]
    reason = pinned[0]["reason"]
    assert reason == "step 2 was wait shipped, now call shop.customer.notify", reason
    assert pinned[1]["reason"] == reason
    assert section["said"] == (f"migrates {len(moved_along)} parked run{'' if moved_along else 's'}, pins 2: "
                               + ", ".join(f"{p['run']} at step 2 ({p['reason']})" for p in section["pinned"]))
    every_surface_says(run, approval, section, "group:operators")  # the policy read context.input.in_flight
    run_services.cancel(run_id=run.id, by="alice", reason="the test's next change")

    # A policy edit that drops finance's hold: the held refund would be released.
    run, change, approval = review(site, "refunds-go-ahead", {"policies/main.cedar": MERGES})
    section = change.checks["in_flight"]
    assert [(r["run"], r["operation"], r["from"]) for r in section["released"]] == [
        (refund, "shop.order.refund", "group:finance")], section
    assert (section["releases"], section["reassigns"], section["refuses"], section["pins"]) == (1, 0, 0, 0)
    if own_versions:  # the policy is part of every workflow's version: each parked run is proven on it, and migrates
        assert sorted(m["run"] for m in section["migrated"]) == sorted([*parcels, refund]), json.dumps(section)
        assert section["said"] == "migrates 3 parked runs; releases 1 held call"
    else:  # the app's version covers its code only: a policy edit leaves every run on it
        assert (section["migrates"], section["unchanged"]) == (0, 3), json.dumps(section)
        assert section["said"] == ("leaves 3 parked runs as they are (the head does not change their version); "
                                   "releases 1 held call")
    every_surface_says(run, approval, section, "group:owners")
    # The check decided nothing: the refund still waits for finance.
    assert Approval.objects.get(run_id=refund, status=ApprovalStatus.PENDING).approver == "group:finance"
    assert Run.objects.get(pk=refund).status == RunStatus.WAITING


def test_a_proof_that_cannot_run_fails_the_check_with_its_own_words(tmp_path):
    """`replay --tree` on a folder that is no company's root exits 2: the check fails saying why."""
    tree = tmp_path / "not_a_company"
    tree.mkdir()
    made, section = in_flight.check(tree, live_root=tmp_path, timeout=120)
    assert section is None and not made["ok"] and made["summary"] == "the work in flight could not be proven"
    [problem] = made["problems"]
    assert problem["message"].startswith("manage.py replay --tree exited 2: "), problem
    assert str(tree) in problem["message"]

    report = in_flight.add_to({"ok": True, "failed": [], "checks": [{"name": "config", "ok": True}]}, tree,
                              live_root=tmp_path, timeout=120)
    assert (report["ok"], report["failed"], report["checks"][-1]["name"]) == (False, ["in_flight"], "in_flight")
    assert "in_flight" not in report


def test_a_proof_that_takes_too_long_is_ended_and_fails_the_check_saying_so(tmp_path):
    made, section = in_flight.check(tmp_path, live_root=tmp_path, timeout=0.2)  # no Django starts in 0.2 s
    assert section is None and not made["ok"]
    assert [p["message"] for p in made["problems"]] == ["manage.py replay --tree did not finish within 0.2 s"]
