"""An approval the policy asks for covers the operation for the rest of the run, unless the
operation is approved per target (`op(..., approve_each_target=True)`): then an approval lets
through calls of the target it was asked for, and a call of another target asks again."""
from __future__ import annotations

from pathlib import Path
from textwrap import dedent

from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.fakes import define_fake
from runs.approvals.services import decide
from runs.authoring import define_workflow
from runs.models import Approval
from runs.policies import load_cedar_policy
from runs.testing import make_user


class Push(BaseModel):
    branch: str
    sha: str


class Pushed(BaseModel):
    ok: bool = True


def _connector(each: bool):
    vendor = define_connector("forge", {"branch": {"merge": op(
        effect="write", input=Push, output=Pushed, idempotent=True, target=lambda i: f"{i.branch}@{i.sha}",
        approve_each_target=each)}})
    def merge(state: dict, i: Push, c: object) -> dict:
        state["merged"].append(i.sha)
        return {"ok": True}

    return with_setup(vendor, fake=lambda file: define_fake(vendor, initial=lambda: {"merged": []},
                                                            ops={"branch": {"merge": merge}}, file=file))


def _policy(tmp_path: Path):
    folder = tmp_path / "policies"
    folder.mkdir()
    (folder / "main.cedar").write_text(dedent('''
        @id("permit-all")
        permit(principal, action, resource);

        @id("merges-need-owners")
        @approve("owner")
        forbid(principal, action == Action::"forge.branch.merge", resource);
    ''').lstrip())
    return load_cedar_policy(folder)


def _merge_twice(ctx, input):
    ctx.forge.branch.merge({"branch": "b", "sha": "aaa"})
    ctx.forge.branch.merge({"branch": "b", "sha": "bbb"})
    return {}


def _held(run_id: str) -> list[str]:
    return list(Approval.objects.filter(run_id=run_id).order_by("seq").values_list("status", flat=True))


def _approved_once(engine_for, tmp_path, *, each: bool):
    """Two merges in one run, the first held and approved by the owner: the engine, and the run after."""
    make_user("owner")
    forge = _connector(each=each)
    flow = define_workflow(name="merges", uses=[forge.op("forge.branch.merge")], run=_merge_twice)
    engine = engine_for(flow, policy=_policy(tmp_path), connectors=[forge])
    run = engine.run("merges")
    decide(run_id=run.id, decision="approve", by="owner", timeout=0)
    engine.drain()
    run.refresh_from_db()
    return engine, run


def test_an_operation_approved_per_target_asks_again_for_another_target(engine_for, tmp_path):
    engine, run = _approved_once(engine_for, tmp_path, each=True)
    # The first merge went through; the second (another commit) waits for an approval of its own.
    assert (run.status, _held(run.id)) == ("waiting", ["approved", "pending"])
    assert engine.config.fakes["forge"].state["merged"] == ["aaa"]
    covers = list(Approval.objects.filter(run_id=run.id).order_by("seq").values_list("covers", flat=True))
    assert covers == [["forge.branch.merge@b@aaa"], ["forge.branch.merge@b@bbb"]]
    decide(run_id=run.id, decision="approve", by="owner", timeout=0)
    engine.drain()
    run.refresh_from_db()
    assert run.status == "finished" and engine.config.fakes["forge"].state["merged"] == ["aaa", "bbb"]


def test_without_it_one_approval_covers_the_operation_for_the_rest_of_the_run(engine_for, tmp_path):
    engine, run = _approved_once(engine_for, tmp_path, each=False)
    assert (run.status, _held(run.id)) == ("finished", ["approved"])
    assert engine.config.fakes["forge"].state["merged"] == ["aaa", "bbb"]


def test_approving_each_target_needs_a_target():
    try:
        op(effect="write", input=Push, output=Pushed, approve_each_target=True)
    except ValueError as err:
        assert "approve_each_target needs a target" in str(err)
    else:
        raise AssertionError("an operation approved per target without a target was accepted")
