"""Deploys with real `manage.py worker` and `manage.py deploy` processes.

- Editing one workflow does not touch another's runs: a run parked on its message under one
  worker finishes under the next, started after an unrelated workflow's file changed, with no
  migration or pin (its version did not change).
- A deploy of an edit of each kind, in different workflows, over runs parked every way (approval,
  sleep, message, child wait): the appended step and the `ctx.patched` branch migrate, the inserted
  step pins. The deploy's database connection is cut (`pg_terminate_backend`, as a restart or
  failover cuts it) while it is moving runs: it rides it out. Then every run is migrated or pinned
  exactly once, with its record, the migrated ones finish on the new worker, the pinned one is left
  alone, and no vendor effect happens twice.
- Two deploys at once move each run once.

The company is a copy of the worker company with the workflows below, in a folder of the test's own.
"""
from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from django.db import connection

from runs import ledger
from runs.approvals.services import decide
from runs.config.resolution import ResolvedConfig, load_config
from runs.models import AppVersion, LedgerKind, LedgerRecord, Run, RunStatus
from runs.services import send_message, start
from runs.testing import make_user
from runs.tests import db_roles_setup
from runs.tests.processes import REPO, Worker, database_url, worker_env

# The worker test company (a data folder beside the wakeups tests; read as files, not imported).
ROOT = Path(__file__).resolve().parents[2] / "wakeups" / "tests" / "worker_company"

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

STARTER = "deploy-tester"
BOSS = "boss"
PATIENCE = 90.0
NAP_SECONDS = 25  # the sleeping run is still asleep at the deploy, and wakes on the new worker
_copies = itertools.count()

HEAD = "from runs.authoring import define_workflow\n\n\n"
# Each workflow in its file: the old code, and the new code (None: unchanged).
FILES: dict[str, tuple[str, str | None]] = {
    "ask_then_post": (
        'def run(ctx, input):\n    ctx.approval("Go ahead?", approver="boss")\n'
        '    return ctx.tally.entry.post({"n": 1, "note": "asked"}).entry_id\n',
        'def run(ctx, input):\n    ctx.approval("Go ahead?", approver="boss")\n'
        '    first = ctx.tally.entry.post({"n": 1, "note": "asked"}).entry_id\n'
        '    return [first, ctx.tally.entry.post({"n": 2, "note": "appended"}).entry_id]\n'),
    "wait_then_post": (
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    ctx.wait_message("go")\n    return "went"\n',
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    ctx.wait_message("go")\n    ctx.tally.entry.post({"n": 2, "note": "appended"})\n    return "went on"\n'),
    "post_then_wait": (
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    ctx.wait_message("go")\n    return "went"\n',
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    ctx.tally.entry.post({"n": 2, "note": "inserted"})\n    ctx.wait_message("go")\n    return "went"\n'),
    "patched_wait": (
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    ctx.wait_message("go")\n    return "went"\n',
        'def run(ctx, input):\n    ctx.tally.entry.post({"n": 1, "note": "before"})\n'
        '    extra = ctx.patched("second-post")\n'
        '    if extra:\n        ctx.tally.entry.post({"n": 2, "note": "patched"})\n'
        '    ctx.wait_message("go")\n    return "patched" if extra else "old path"\n'),
    "nap_then_post": (
        f'def run(ctx, input):\n    ctx.tally.entry.post({{"n": 1, "note": "before"}})\n'
        f'    ctx.sleep(seconds={NAP_SECONDS})\n    return "woke"\n',
        f'def run(ctx, input):\n    ctx.tally.entry.post({{"n": 1, "note": "before"}})\n'
        f'    ctx.sleep(seconds={NAP_SECONDS})\n    ctx.tally.entry.post({{"n": 2, "note": "appended"}})\n'
        '    return "woke, posted"\n'),
    "child_then_post": (
        'def run(ctx, input):\n    kid = ctx.start_run("kid")\n    return ctx.wait_run(kid)\n',
        'def run(ctx, input):\n    kid = ctx.start_run("kid")\n    got = ctx.wait_run(kid)\n'
        '    ctx.tally.entry.post({"n": 2, "note": "appended"})\n    return got\n'),
    "kid": ('def run(ctx, input):\n    ctx.wait_message("go")\n    return "kid went"\n', None),
}
MIGRATES = {"ask-then-post", "wait-then-post", "patched-wait", "nap-then-post", "child-then-post"}
PINS = {"post-then-wait"}
# What each migrated run returns once it finished on the new code.
RESULTS = {"ask-then-post": 2, "wait-then-post": "went on", "patched-wait": "old path",
           "nap-then-post": "woke, posted", "child-then-post": "kid went"}


def _source(name: str, body: str) -> str:
    return f"{HEAD}{body}\n\n{name} = define_workflow(name={name.replace('_', '-')!r}, run=run)\n"


def write_code(root: Path, *, new: bool) -> None:
    for name, (old, edited) in FILES.items():
        body = edited if new and edited is not None else old
        (root / "workflows" / f"{name}.py").write_text(_source(name, body))


class Site:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.root = tmp / f"deploy_company_{next(_copies)}"
        shutil.copytree(ROOT, self.root, ignore=shutil.ignore_patterns("__pycache__", "harness.py"))
        write_code(self.root, new=False)
        self.var = tmp / "var"
        (self.var / "fakes").mkdir(parents=True)
        self.env = worker_env(db_url=database_url(connection.settings_dict), var_dir=self.var, version="",
                              root=self.root)
        self.config: ResolvedConfig = load_config(self.root, fakes="instance", fake_dir=self.var / "fakes")
        self.workers: list[Worker] = []
        make_user(STARTER, perms=["runs.start_workflow"])
        make_user(BOSS)

    def worker(self) -> Worker:
        worker = Worker(self.env, self.tmp / f"worker-{len(self.workers)}.log")
        self.workers.append(worker)
        return worker.start()

    def start(self, workflow: str, n: int) -> Run:
        return start(workflow=workflow, input={}, started_by=STARTER, run_id=f"{workflow}-{n}", config=self.config)

    def deploy(self) -> subprocess.Popen[str]:
        return subprocess.Popen([sys.executable, str(REPO / "manage.py"), "deploy", "--json"], cwd=REPO,
                                env=self.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def effects(self) -> list[dict[str, Any]]:
        return list(json.loads((self.var / "fakes" / "tally.json").read_text())["state"]["effects"])

    def describe(self) -> str:
        return "\n".join(w.describe() for w in self.workers)

    def cleanup(self) -> None:
        for worker in self.workers:
            worker.cleanup()


@pytest.fixture
def site(tmp_path: Path):
    made = Site(tmp_path)
    yield made
    made.cleanup()


def statuses(**filters: Any) -> Counter[str]:
    return Counter(Run.objects.filter(**filters).values_list("status", flat=True))


def test_editing_one_workflow_leaves_the_parked_runs_of_another_on_their_version(site: Site) -> None:
    worker = site.worker()
    run = start(workflow="wait-then-post", input={}, started_by=STARTER, run_id="parked", config=site.config)
    worker.wait_for(lambda: Run.objects.filter(pk="parked", status=RunStatus.WAITING).exists(), within=PATIENCE,
                    what="the run to wait for its message")
    assert worker.terminate() == 0, worker.describe()
    before = AppVersion.objects.order_by("-promoted_at").first()
    assert before is not None
    # One string in another workflow's file; the worker restarts on it.
    (site.root / "workflows" / "kid.py").write_text(_source("kid", FILES["kid"][0].replace("kid went", "kid left")))
    worker = site.worker()
    assert "migrated 0 run(s), pinned 0" in worker.output(), worker.describe()
    after = AppVersion.objects.order_by("-promoted_at").first()
    assert after is not None and after.pk != before.pk
    assert after.workflows["kid"] != before.workflows["kid"]
    assert {n: v for n, v in after.workflows.items() if n != "kid"} == \
        {n: v for n, v in before.workflows.items() if n != "kid"}
    send_message(run_id=run.id, topic="go", payload={}, by=STARTER)
    worker.wait_for(lambda: Run.objects.filter(pk="parked", status=RunStatus.FINISHED).exists(), within=PATIENCE,
                    what="the parked run to finish on the new worker")
    assert Run.objects.get(pk="parked").app_version == before.workflows["wait-then-post"]
    assert not LedgerRecord.objects.filter(kind__in=(LedgerKind.RUN_MIGRATED, LedgerKind.RUN_PINNED)).exists()
    assert worker.terminate() == 0, worker.describe()


def _park_every_way(site: Site, per_workflow: int) -> dict[str, str]:
    """Runs of each workflow parked under a worker of the old code; {run id: workflow}."""
    worker = site.worker()
    parked = {}
    for name in FILES:
        workflow = name.replace("_", "-")
        if workflow == "kid":
            continue
        for n in range(per_workflow):
            parked[site.start(workflow, n).id] = workflow
    kids = per_workflow
    worker.wait_for(lambda: statuses(pk__in=list(parked))[RunStatus.WAITING] == len(parked)
                    and statuses(workflow="kid")[RunStatus.WAITING] == kids,
                    within=PATIENCE, progress=lambda: statuses(status=RunStatus.WAITING)[RunStatus.WAITING],
                    what="every run to park")
    assert worker.terminate() == 0, worker.describe()
    return parked


def _own_backend() -> int:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        return int(cursor.fetchone()[0])


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the connection is cut with pg_terminate_backend")
def test_a_deploy_migrates_or_pins_every_parked_run_once_riding_out_a_cut_connection(site: Site) -> None:
    parked = _park_every_way(site, per_workflow=3)
    old = AppVersion.objects.order_by("-promoted_at").first()
    assert old is not None
    effects_before = site.effects()
    write_code(site.root, new=True)
    # The deploy will block on the last run's row, held by the owner; its connection is cut there.
    held = max(parked, key=lambda run_id: (run_id.startswith("wait-then-post"), run_id))
    name = connection.settings_dict["NAME"]
    mine = _own_backend()
    # Two owner connections: one holds the row (a transaction), the other watches and cuts (each
    # of its statements a transaction of its own: pg_stat_activity is read afresh every time).
    with db_roles_setup.owner_connect(autocommit=False) as holder, \
            db_roles_setup.owner_connect(autocommit=True) as watcher:
        holder.execute("SELECT 1 FROM runs_run WHERE id = %s FOR UPDATE", [held])
        deploying = site.deploy()
        ends = time.monotonic() + PATIENCE
        cut: list[int] = []
        while not cut and time.monotonic() < ends and deploying.poll() is None:
            rows = watcher.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND pid <> %s AND wait_event_type = 'Lock' "
                "AND pid NOT IN (pg_backend_pid(), %s)", [name, mine, holder.info.backend_pid]).fetchall()
            cut = [int(pid) for (pid,) in rows]
            time.sleep(0.02)
        for pid in cut:
            watcher.execute("SELECT pg_terminate_backend(%s)", [pid])
        holder.rollback()  # the row lock goes
    assert cut, "the deploy never waited on the held row"
    out, err = deploying.communicate(timeout=PATIENCE)
    assert deploying.returncode == 0, err
    assert "connection was lost" in err, err
    said = json.loads(out)
    assert {p["run"] for p in said["migrated"]} == {r for r, w in parked.items() if w in MIGRATES}
    assert {p["run"] for p in said["pinned"]} == {r for r, w in parked.items() if w in PINS}
    for pin in said["pinned"]:
        assert pin["reason"] == "step 2 was wait go, now call tally.entry.post" and pin["step"] == 2, pin

    worker = site.worker()  # its own deploy finds every run moved or pinned already
    new = AppVersion.objects.order_by("-promoted_at").first()
    assert new is not None and new.pk != old.pk
    assert new.workflows["kid"] == old.workflows["kid"]  # an unchanged workflow keeps its version
    assert f"pinned {len([w for w in parked.values() if w in PINS])}" in worker.output(), worker.describe()
    for run_id, workflow in parked.items():
        kinds = Counter(LedgerRecord.objects.filter(run_id=run_id).values_list("kind", flat=True))
        if workflow in MIGRATES:
            assert (kinds[LedgerKind.RUN_MIGRATED], kinds[LedgerKind.RUN_PINNED]) == (1, 0), run_id
            record = LedgerRecord.objects.get(run_id=run_id, kind=LedgerKind.RUN_MIGRATED)
            assert record.body["from"] == old.workflows[workflow] and record.body["to"] == new.workflows[workflow]
        else:
            assert (kinds[LedgerKind.RUN_MIGRATED], kinds[LedgerKind.RUN_PINNED]) == (0, 1), run_id
    assert not LedgerRecord.objects.filter(workflow="kid", kind__in=(LedgerKind.RUN_MIGRATED,
                                                                     LedgerKind.RUN_PINNED)).exists()
    assert site.effects() == effects_before  # proving and moving called no vendor

    # The runs go on: the approval is given, the messages sent, the sleep ends by itself.
    for run_id, workflow in parked.items():
        if workflow == "ask-then-post":
            decide(run_id=run_id, decision="approve", by=BOSS, timeout=0)
        elif workflow in ("wait-then-post", "patched-wait", "post-then-wait"):
            send_message(run_id=run_id, topic="go", payload={}, by=STARTER)
    for kid in Run.objects.filter(workflow="kid"):
        send_message(run_id=kid.id, topic="go", payload={}, by=STARTER)
    migrated = [r for r, w in parked.items() if w in MIGRATES]
    worker.wait_for(lambda: statuses(pk__in=migrated)[RunStatus.FINISHED] == len(migrated),
                    within=PATIENCE + NAP_SECONDS, progress=lambda: statuses(pk__in=migrated)[RunStatus.FINISHED],
                    what="every migrated run to finish on the new worker")
    for run_id in migrated:
        run = Run.objects.get(pk=run_id)
        expected = RESULTS[parked[run_id]]
        got: Any = run.result
        assert (len(got) if isinstance(expected, int) else got) == expected, (run_id, got)
        assert run.app_version == new.workflows[parked[run_id]]
    pinned = [r for r, w in parked.items() if w in PINS]
    time.sleep(1.0)  # a few sweeps: the new worker leaves the pinned runs alone
    for run_id in pinned:
        run = Run.objects.get(pk=run_id)
        assert (run.status, run.app_version) == (RunStatus.QUEUED, old.workflows["post-then-wait"]), run_id
    # No vendor effect twice: every idempotency key once, and exactly the posts the code makes.
    effects = site.effects()
    keys = Counter(e["key"] for e in effects)
    assert max(keys.values()) == 1
    per_run = Counter(e["run"] for e in effects)
    for run_id, workflow in parked.items():
        expected_posts = {"ask-then-post": 2, "wait-then-post": 2, "post-then-wait": 1, "patched-wait": 1,
                          "nap-then-post": 2, "child-then-post": 1}[workflow]
        assert per_run[run_id] == expected_posts, (run_id, per_run[run_id])
    assert ledger.verify().breaks == []
    assert worker.terminate() == 0, worker.describe()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="two deploys at once need row locks")
def test_two_deploys_at_once_move_each_run_once(site: Site) -> None:
    worker = site.worker()
    ids = [site.start("wait-then-post", n).id for n in range(12)]
    worker.wait_for(lambda: statuses(pk__in=ids)[RunStatus.WAITING] == len(ids), within=PATIENCE,
                    what="the runs to park")
    assert worker.terminate() == 0, worker.describe()
    write_code(site.root, new=True)
    gate = threading.Barrier(2)
    outputs: list[tuple[int, str, str]] = []

    def one() -> None:
        gate.wait()
        process = site.deploy()
        out, err = process.communicate(timeout=PATIENCE)
        outputs.append((process.returncode, out, err))

    threads = [threading.Thread(target=one) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [code for code, _, _ in outputs] == [0, 0], outputs
    moved = [p["run"] for _, out, _ in outputs for p in json.loads(out)["migrated"]]
    assert sorted(moved) == sorted(ids)  # each run once, by one of the two
    assert Counter(LedgerRecord.objects.filter(kind=LedgerKind.RUN_MIGRATED).values_list("run_id", flat=True)) \
        == Counter(ids)
