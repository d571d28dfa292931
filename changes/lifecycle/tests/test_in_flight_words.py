"""The `in_flight` section of a change's report, from what `manage.py replay --tree --json` and
`manage.py rejudge --tree --json` print (recorded answers, in their contracted shapes), and the
words every surface says it in: the sentence, the table's rows, the merge's policy input.

The children themselves run for real in test_change_in_flight.py."""
from __future__ import annotations

from typing import Any

from changes.lifecycle import in_flight

V1, V2 = "refund@1111111111111111", "refund@2222222222222222"
S1 = "await-shipment@3333333333333333"


def replayed(*rows: dict[str, Any]) -> dict[str, Any]:
    pinned = sum(r["outcome"] == "pinned" for r in rows)
    return {"tree": "/tmp/sanoma-checks-x/acme", "version": "acme@abcdefabcdefabcd", "migrates": len(rows) - pinned,
            "pinned": pinned, "runs": list(rows)}


def run(run_id: str, outcome: str = "migrates", *, step: int | None = None, reason: str = "", steps: int = 3,
        frm: str = V1, to: str = V2, workflow: str = "refund") -> dict[str, Any]:
    return {"run": run_id, "workflow": workflow, "from": frm, "to": to, "outcome": outcome, "reason": reason,
            "steps": steps, "step": step}


def held(approval: int, run_id: str, *, to: str | None = None, reason: str = "") -> dict[str, Any]:
    return {"approval": approval, "run": run_id, "operation": "shop.order.refund", "from": "finance-lead", "to": to,
            "reason": reason}


NONE_HELD = {"policy_version": "policy@0123456789abcdef", "released": [], "reassigned": [], "refused": []}


def test_the_sentence_counts_what_migrates_names_what_is_pinned_and_what_the_policies_decide_again():
    rows = [run(f"refund-{n}") for n in range(41)]
    rows += [run("refund-p1", "pinned", step=4, reason="step 4 was call shop.order.refund, now call shop.order.get"),
             run("refund-p2", "pinned", step=2, reason="the new code waits (message x) before step 3"),
             run("refund-p3", "pinned", reason="workflow refund is not in the new code"),
             run("refund-p4", "pinned", step=7, reason="step 7 was sleep, now call shop.order.get")]
    rejudged = {"policy_version": "policy@fedcba9876543210",
                "released": [held(1, "refund-h1"), held(2, "refund-h2"), held(3, "refund-h3")],
                "reassigned": [held(4, "refund-h4", to="group:security"), held(5, "refund-h5", to="sam")],
                "refused": []}
    section = in_flight.section_of(replayed(*rows), rejudged)
    assert section["said"] == (
        "migrates 41 parked runs, pins 4: refund-p1 at step 4 (step 4 was call shop.order.refund, now call "
        "shop.order.get), refund-p2 at step 2 (the new code waits (message x) before step 3), refund-p3 (workflow "
        "refund is not in the new code), and 1 more; releases 3 held calls, reassigns 2")
    assert in_flight.counts(section) == {"migrates": 41, "pins": 4, "releases": 3, "reassigns": 2, "refuses": 0}
    assert (section["tree_version"], section["policy_version"]) == ("acme@abcdefabcdefabcd", "policy@fedcba9876543210")
    assert [p["run"] for p in section["pinned"]] == ["refund-p1", "refund-p2", "refund-p3", "refund-p4"]
    assert section["pinned"][0] == {"run": "refund-p1", "workflow": "refund", "from": V1, "to": V2, "step": 4,
                                    "reason": "step 4 was call shop.order.refund, now call shop.order.get"}
    assert section["migrated"][0] == {"run": "refund-0", "workflow": "refund", "from": V1, "to": V2, "steps": 3}
    assert not section["truncated"]


def test_the_table_puts_pinned_runs_first_then_the_held_calls_then_what_migrates():
    section = in_flight.section_of(
        replayed(run("refund-a", steps=1), run("refund-b", "pinned", step=4, reason="step 4 was call x, now call y")),
        {**NONE_HELD, "released": [held(9, "refund-h")], "reassigned": [held(8, "refund-r", to="sam")],
         "refused": [held(7, "refund-d", reason="refunds over 500.00 are never made by a workflow")],
         "failed": [held(6, "refund-f", reason="the policy failed")]})
    assert in_flight.table(section) == [
        {"outcome": "pinned", "run": "refund-b", "workflow": "refund",
         "what": f"stays on {V1}: at step 4: step 4 was call x, now call y"},
        {"outcome": "released", "run": "refund-h", "workflow": "",
         "what": "shop.order.refund held for finance-lead: now allowed, the call goes ahead"},
        {"outcome": "reassigned", "run": "refund-r", "workflow": "",
         "what": "shop.order.refund held for finance-lead: now for sam"},
        {"outcome": "refused", "run": "refund-d", "workflow": "",
         "what": "shop.order.refund held for finance-lead: now denied (refunds over 500.00 are never made by a "
                 "workflow)"},
        {"outcome": "unjudged", "run": "refund-f", "workflow": "",
         "what": "shop.order.refund held for finance-lead: the head's policy cannot judge it; it stays held (the "
                 "policy failed)"},
        {"outcome": "migrates", "run": "refund-a", "workflow": "refund", "what": f"{V1} \u2192 {V2}, 1 step replayed"},
    ]
    assert section["said"] == ("migrates 1 parked run, pins 1: refund-b at step 4 (step 4 was call x, now call y); "
                               "releases 1 held call, reassigns 1, refuses 1")


def test_runs_already_on_the_heads_version_and_the_changes_own_run_are_not_moved():
    section = in_flight.section_of(
        replayed(run("ship-1", frm=S1, to=S1, workflow="await-shipment"), run("ship-2", frm=S1, to=S1),
                 run("change-1", workflow="change")),
        {**NONE_HELD, "released": [held(1, "change-1")]}, leave_out=["change-1"])
    assert in_flight.counts(section) == dict.fromkeys(in_flight.COUNTS, 0)
    assert section["unchanged"] == 2
    assert section["said"] == "leaves 2 parked runs as they are (the head does not change their version)"
    assert in_flight.table(section) == []


def test_nothing_in_flight_says_so_and_a_held_call_alone_is_counted_as_one():
    assert in_flight.section_of(replayed(), NONE_HELD)["said"] == "no parked runs"
    only_reassigned = in_flight.section_of(replayed(), {**NONE_HELD, "reassigned": [held(1, "r-1", to="sam"),
                                                                                     held(2, "r-2", to="sam")]})
    assert only_reassigned["said"] == "no parked runs; reassigns 2 held calls"
    pins_only = in_flight.section_of(replayed(run("r-1", "pinned", step=1, reason="step 1 was x, now y")), NONE_HELD)
    assert pins_only["said"] == "migrates 0 parked runs, pins 1: r-1 at step 1 (step 1 was x, now y)"


def test_each_kind_is_cut_at_its_limit_and_the_counts_stay_whole():
    rows = [run(f"refund-{n}") for n in range(in_flight.LISTED + 5)]
    section = in_flight.section_of(replayed(*rows), NONE_HELD)
    assert section["migrates"] == in_flight.LISTED + 5 and len(section["migrated"]) == in_flight.LISTED
    assert section["truncated"] and section["said"] == f"migrates {in_flight.LISTED + 5} parked runs"


def test_the_merges_words_fit_its_input_and_say_when_nothing_was_proven():
    assert in_flight.words(None) == in_flight.UNPROVEN == "work in flight not proven"
    long = in_flight.section_of(replayed(*[run(f"r-{n}", "pinned", step=n, reason="x" * 900) for n in range(3)]),
                                NONE_HELD)
    assert len(long["said"]) > in_flight.WORDS_MAX
    words = in_flight.words(long)
    assert len(words) == in_flight.WORDS_MAX and words.endswith("\u2026") and words.startswith("migrates 0")
    assert in_flight.counts(None) == dict.fromkeys(in_flight.COUNTS, 0)


def test_a_report_whose_config_does_not_resolve_skips_the_proof_and_fails():
    report: dict[str, Any] = {"ok": False, "failed": ["config"], "checks": [{"name": "config", "ok": False}]}
    from pathlib import Path

    in_flight.add_to(report, Path("/nonexistent"), live_root=Path("/nonexistent"), timeout=1)
    assert report["checks"][-1] == {"name": "in_flight", "ok": False, "skipped": "the config does not resolve",
                                    "problems": [], "summary": "", "took_ms": 0}
    assert report["failed"] == ["config", "in_flight"] and "in_flight" not in report
