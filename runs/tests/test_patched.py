"""Patch markers: `ctx.patched("name")` is True for a run that reaches it on the patched code
(recorded as a patch step) and False, taking no step, for a run recorded before the patch; so a
parked run of the old code is proven, migrates and finishes on the old path, while new runs take
the new one. A patch is retired by removing the call and keeping the new path."""
from __future__ import annotations

from pathlib import Path

import pytest

from connectors.errors import InvalidInput
from runs import services
from runs.authoring import define_workflow
from runs.config.lint import lint_paths
from runs.engine.proof import prove, version_of
from runs.models import Run, RunStatus, Step
from runs.tests.fixtures import GET, SEND
from runs.tests.test_lint import make_root


def before(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.wait_message("shipped")
    ctx.acme.mail.send({"to": "a", "text": "shipped"})


def patched_before_the_wait(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    if ctx.patched("warn-first"):
        ctx.acme.mail.send({"to": "a", "text": "about to ship"})
    ctx.wait_message("shipped")
    ctx.acme.mail.send({"to": "a", "text": "shipped"})


def retired(ctx, input):
    ctx.acme.order.get({"order_id": "1"})
    ctx.acme.mail.send({"to": "a", "text": "about to ship"})
    ctx.wait_message("shipped")
    ctx.acme.mail.send({"to": "a", "text": "shipped"})


def bad_name(ctx, input):
    ctx.patched("Not A Name")


def version(engine_for, body):
    return engine_for(define_workflow(name="ship", uses=[GET, SEND, "wait_message"], run=body))


def steps_of(run: Run) -> list[tuple[int, str, str]]:
    return list(Step.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "name"))


def moved(run: Run, engine) -> None:
    """What a deploy does to a run its proof migrates: the run goes on the new version."""
    Run.objects.filter(pk=run.pk).update(app_version=version_of(engine.config, run.workflow))


def test_a_run_recorded_before_the_patch_takes_the_old_path_and_its_seqs_line_up(engine_for):
    old = version(engine_for, before)
    parked = old.run("ship")
    assert parked.waiting_for == "message"
    assert steps_of(parked) == [(1, "call", "acme.order.get"), (2, "wait", "shipped")]

    new = version(engine_for, patched_before_the_wait)
    proof = prove(run=parked, config=new.config)
    assert (proof.outcome, proof.steps_replayed) == ("migrates", 2)

    moved(parked, new)
    services.send_message(run_id=parked.id, topic="shipped", payload={"n": 1}, by="alice")
    new.drain()
    parked.refresh_from_db()
    assert parked.status == RunStatus.FINISHED, parked.error
    # The old path: no patch step, no early mail; the message and the mail after it at seqs 3 and 4.
    assert steps_of(parked) == [(1, "call", "acme.order.get"), (2, "wait", "shipped"), (3, "message", "shipped"),
                                (4, "call", "acme.mail.send")]
    assert [m["text"] for m in new.fake.state["mail"]] == ["shipped"]


def test_a_run_that_reaches_the_patch_on_the_new_code_records_true_and_replays_it(engine_for):
    new = version(engine_for, patched_before_the_wait)
    run = new.run("ship")
    assert run.waiting_for == "message"
    assert steps_of(run) == [(1, "call", "acme.order.get"), (2, "patch", "warn-first"), (3, "call", "acme.mail.send"),
                             (4, "wait", "shipped")]
    assert Step.objects.get(run=run, seq=2).output == {"patched": True}
    services.send_message(run_id=run.id, topic="shipped", payload={}, by="alice")
    new.drain()  # replays the patch step from the record: True again, the same steps
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED, run.error
    assert [m["text"] for m in new.fake.state["mail"]] == ["about to ship", "shipped"]
    assert prove(run=run, config=new.config).outcome == "migrates"


def test_a_retired_patch_keeps_the_runs_that_took_its_new_path_and_pins_those_that_did_not(engine_for):
    old_path = version(engine_for, before).run("ship")
    new_path = version(engine_for, patched_before_the_wait).run("ship")
    gone = version(engine_for, retired)
    took = prove(run=new_path, config=gone.config)
    assert (took.outcome, took.steps_replayed) == ("migrates", 4)  # its patch step is stepped over
    kept = prove(run=old_path, config=gone.config)
    assert (kept.outcome, kept.step) == ("pinned", 2)
    assert kept.reason == "step 2 was wait shipped, now call acme.mail.send"
    # Moved onto the retired code, the run that took the new path finishes there.
    moved(new_path, gone)
    services.send_message(run_id=new_path.id, topic="shipped", payload={}, by="alice")
    gone.drain()
    new_path.refresh_from_db()
    assert new_path.status == RunStatus.FINISHED, new_path.error
    assert [kind for _, kind, _ in steps_of(new_path)] == ["call", "patch", "call", "wait", "message", "call"]


def test_a_patch_name_that_is_not_a_name_fails_the_run_naming_it(engine_for):
    engine = engine_for(define_workflow(name="bad", uses=[], run=bad_name))
    run = engine.run("bad")
    assert run.status == RunStatus.FAILED
    assert run.error["code"] == InvalidInput.code
    assert "ctx.patched takes a patch's name" in run.error["message"] and "'Not A Name'" in run.error["message"]
    assert not Step.objects.filter(run=run).exists()


@pytest.mark.parametrize(("text", "says"), [
    ('ctx.patched(name)', "ctx.patched takes the patch's name as one string literal"),
    ('ctx.patched("Bad Name")', "the patch name 'Bad Name' must be lowercase letters"),
])
def test_the_lint_refuses_a_patch_name_that_is_not_one_literal(tmp_path: Path, text: str, says: str):
    root = make_root(tmp_path, {"workflows/flow.py": f'''
        from runs.authoring import define_workflow


        def run(ctx, input):
            name = "x"
            if {text}:
                return 1
            return 2


        flow = define_workflow(name="flow", run=run)
    '''})
    found = [(p.line, p.column, p.rule) for p in lint_paths(root) if p.rule == "patch"]
    assert found == [(6, 8, "patch")]
    assert says in next(p.message for p in lint_paths(root) if p.rule == "patch")


def test_the_lint_refuses_a_patch_name_used_twice(tmp_path: Path):
    root = make_root(tmp_path, {"workflows/flow.py": '''
        from runs.authoring import define_workflow


        def run(ctx, input):
            if ctx.patched("new-fee"):
                return 1
            if ctx.patched("new-fee"):
                return 2
            return 3


        flow = define_workflow(name="flow", run=run)
    '''})
    problems = [p for p in lint_paths(root) if p.rule == "patch"]
    assert [(p.line, p.column) for p in problems] == [(7, 8)]
    assert problems[0].message == ("patch: the patch name 'new-fee' is used again (first on line 5): give each "
                                   "change its own name, so each is retired on its own")


def test_the_outline_draws_the_branch_a_patch_chooses_and_the_marker_as_a_call_site():
    from runs.config.outline import outline_of

    drawn = outline_of(define_workflow(name="ship", uses=[GET, SEND, "wait_message"], run=patched_before_the_wait))
    assert drawn.problems == ()
    assert [node.kind for node in drawn.nodes] == ["op", "branch", "message", "op"]
    branch = drawn.nodes[1]
    assert branch.info == {"patch": "warn-first"}
    assert [(s.role, s.label) for s in branch.sections] == [("case", 'if ctx.patched("warn-first")'), ("past", "")]
    assert ("patched", None) in [(site.call, site.node) for site in drawn.sites]
