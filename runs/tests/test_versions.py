"""App versions: a worker advances only its own version's runs and names the others."""
from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from runs.config.resolution import SanomaConfig, resolve_config
from runs.config.workflows import define_workflow
from runs.engine.advance import advance
from runs.models import Run, RunStatus
from runs.tests.fixtures import GET, SEND, acme, make_fake
from runs.versions import startup_report


class In(BaseModel):
    x: int = 0


class Other(BaseModel):
    y: int = 0


def one(ctx, input):
    return ctx.acme.order.get({"order_id": "1"}).order_id


def two(ctx, input):
    return ctx.acme.order.get({"order_id": "2"}).order_id


def version_of(*workflows, connectors=(acme,), app_version=None):
    return resolve_config(SanomaConfig(connectors=list(connectors), workflows=list(workflows)), fakes="instance",
                          app_version=app_version).version


def test_the_version_follows_the_run_source_the_operations_and_the_input_schema():
    base = version_of(define_workflow(name="v", input=In, uses=[GET], run=one))
    assert version_of(define_workflow(name="v", input=In, uses=[GET], run=one)) == base
    assert version_of(define_workflow(name="v", input=In, uses=[GET], run=two)) != base
    assert version_of(define_workflow(name="v", input=In, uses=[GET, SEND], run=one)) != base
    assert version_of(define_workflow(name="v", input=Other, uses=[GET], run=one)) != base


def test_a_driver_change_does_not_change_the_version():
    def another_fake(file: Path | None = None) -> Any:
        return make_fake(file)

    wf = define_workflow(name="v", input=In, uses=[GET], run=one)
    other_fake = dataclasses.replace(acme, fake=another_fake)  # a copy: with_setup attaches in place
    assert version_of(wf) == version_of(wf, connectors=(other_fake,))


def test_a_named_version_replaces_the_hash():
    config = resolve_config(SanomaConfig(connectors=[acme], app_name="acme"), app_version="abc", fakes="instance")
    assert config.version == "acme@abc"


def test_a_worker_leaves_runs_of_another_version_alone_and_names_them(engine_for, caplog):
    engine = engine_for(define_workflow(name="v", uses=[GET], run=one))
    run = engine.start("v")
    Run.objects.filter(pk=run.id).update(app_version="sanoma@other")
    assert advance(run.id, worker_id="w", config=engine.config) == "skipped"
    assert "leaving run" in caplog.text and run.id in caplog.text
    assert Run.objects.get(pk=run.id).status == RunStatus.QUEUED
    warnings = startup_report(engine.config, promote=False)
    [left] = [w for w in warnings if run.id in w and "left alone by this worker" in w]
    assert "The supervisor starts a worker of their version when it was deployed from a commit" in left
    assert left.endswith("migrate its runs (a patch marker), fork or cancel them")


def test_an_older_worker_warns_unless_promoted(engine_for):
    old = engine_for(define_workflow(name="v", uses=[GET], run=one)).config
    new = engine_for(define_workflow(name="v", uses=[GET], run=two)).config
    assert not any("older than the latest" in w for w in startup_report(old, promote=False))
    assert not any("older than the latest" in w for w in startup_report(new, promote=False))
    assert any("older than the latest" in w for w in startup_report(old, promote=False))
    assert not any("older than the latest" in w for w in startup_report(old, promote=True))
    assert any("older than the latest" in w for w in startup_report(new, promote=False))


def test_the_banner_names_a_function_policy_as_plans_and_the_ledger_do() -> None:
    """The worker's banner names the policy version as the deploy, a plan and the ledger do."""
    from runs.policies import allow, define_policy
    from runs.policies.versions import policy_version_of
    from runs.versions import loaded_policy

    policy = define_policy(lambda call: allow(), version="2026-12")
    assert policy_version_of(policy) == "policy@2026-12"
    assert loaded_policy(policy) == "policy policy@2026-12 (python)"
    assert loaded_policy(None) == "no policy (every call is allowed)"
