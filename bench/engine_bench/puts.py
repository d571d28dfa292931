"""(i) collection puts through ctx beside plain steps, and (j) messages delivered to waiting runs."""
from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from engine_bench.common import VERSION
from engine_bench.database import Counted
from engine_bench.in_process import advance_all


class BenchNote(BaseModel):
    key: str
    n: int
    text: str


class PutsInput(BaseModel):
    n: int = 10


def put_notes(ctx: Any, input: PutsInput) -> dict[str, int]:
    for i in range(input.n):
        ctx.data.bench_notes.put({"record": {"key": f"{ctx.run_id}:{i}", "n": i, "text": "x" * 40}})
    return {"puts": input.n}


def listen(ctx: Any, input: Any) -> dict[str, Any]:
    return {"heard": ctx.wait_message("go")}


def collections_config(config: Any, var: Path) -> Any:
    """The bench company with a collection and the two workflows above. The bench vendor stays on
    its in-memory fake; with a fake folder given, the collection is on the database driver."""
    from runs.authoring import define_collection, define_workflow
    from runs.config.resolution import SanomaConfig, resolve_config

    bench_notes = define_collection("bench_notes", record=BenchNote, key="key")
    puts_workflow = define_workflow(name="puts", input=PutsInput, uses=[bench_notes.put], run=put_notes)
    listen_workflow = define_workflow(name="listen", uses=["wait_message"], run=listen)
    # The config's own connectors and workflows (sanoma's and the built-in workflows come again with it).
    return resolve_config(
        SanomaConfig(app_name="bench", connectors=[c for c in config.connectors if c.vendor != "sanoma"],
                     workflows=[*(wf for wf in config.workflows.values() if not wf.builtin), puts_workflow,
                                listen_workflow],
                     collections=[bench_notes], policy=config.policy),
        fakes="instance", fake_dir=var / "fakes", app_version=VERSION)


def start_many(config: Any, workflow: str, prefix: str, count: int, input: dict[str, Any]) -> list[str]:
    from django_q.models import OrmQ

    from runs import services

    ids = [services.start(workflow=workflow, input=input, started_by="bench", run_id=f"{prefix}-{i}",
                          config=config).id for i in range(count)]
    OrmQ.objects.all().delete()  # no cluster runs here: advance() is called directly
    return ids


def collection_puts(config: Any, runs: int, puts: int, rounds: int) -> dict[str, float]:
    """(i) seconds per put and per step (10-call runs), and marginal (minus 0-call runs), medians
    over rounds that alternate which goes first."""
    from runs.models import CollectionRecord

    if "data" in config.fakes or config.drivers["data.bench_notes.put"].vendor != "data":
        raise SystemExit("(i) the collection must be on the database driver")
    advance_all(config, start_many(config, "puts", "i-warm", 20, {"n": puts}))
    found: dict[str, list[float]] = {"put": [], "step": [], "put_marginal": [], "step_marginal": []}
    for r in range(rounds):
        for kind in ("put", "step") if r % 2 == 0 else ("step", "put"):
            workflow = "puts" if kind == "put" else "steps"
            full = advance_all(config, start_many(config, workflow, f"i{r}-{kind}-full", runs, {"n": puts}))
            empty = advance_all(config, start_many(config, workflow, f"i{r}-{kind}-empty", runs, {"n": 0}))
            found[kind].append(full / (runs * puts))
            found[kind + "_marginal"].append((full - empty) / (runs * puts))
    stored = CollectionRecord.objects.filter(collection="bench_notes").count()
    expected = (20 + rounds * runs) * puts
    if stored != expected:
        raise SystemExit(f"(i) {stored} records stored, expected {expected}")
    return {name: statistics.median(values) for name, values in found.items()}


def messages_delivered(config: Any, runs: int) -> dict[str, float]:
    """(j) messages per second: send (waking the waiting run) then advance it until it has read it."""
    from django_q.models import OrmQ

    from runs import services
    from runs.engine.advance import advance
    from runs.models import Run

    ids = start_many(config, "listen", "j", runs, {})
    for run_id in ids:
        if advance(run_id, worker_id="bench-in-process", config=config) != "waiting":
            raise SystemExit(f"(j) run {run_id} is not waiting for its message")
    counted = Counted()
    with counted.active():
        started = time.perf_counter()
        for n, run_id in enumerate(ids):
            services.send_message(run_id=run_id, topic="go", payload={"n": n}, by="bench")
            outcome = advance(run_id, worker_id="bench-in-process", config=config)
            if outcome != "finished":
                raise SystemExit(f"(j) run {run_id} did not finish after its message: {outcome}")
        elapsed = time.perf_counter() - started
    OrmQ.objects.all().delete()
    heard = Run.objects.filter(pk__in=ids, status="finished").values_list("result", flat=True)
    if sorted((r or {})["heard"]["n"] for r in heard) != list(range(runs)):
        raise SystemExit("(j) not every run read its own message")
    return {"per_s": runs / elapsed, "each": elapsed / runs, "statements": counted.statements / runs,
            "commits": (counted.commits + counted.autocommit_statements) / runs}
