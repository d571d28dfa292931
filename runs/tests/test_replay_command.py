"""`manage.py replay`, run as the docs say: in a process of its own, on the test database, against
the example company and against a copy of it edited in a temporary folder (the same package name,
proven in a process of its own), with fixtures exported and proven without the runs' database."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.db import connection

from runs import services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine.proof import version_of
from runs.models import LedgerRecord, Run, RunStatus
from runs.testing import drain, make_user
from runs.tests.processes import REPO, database_url, worker_env

COMPANY = REPO / "company"

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live(tmp_path: Path, alice) -> Iterator[ResolvedConfig]:
    config = load_config(COMPANY, fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    yield config
    set_config(None)


def replay(tmp_path: Path, *args: str, db_url: str | None = None) -> subprocess.CompletedProcess[str]:
    env = worker_env(db_url=db_url or database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                     root=COMPANY)
    return subprocess.run([sys.executable, str(REPO / "manage.py"), "replay", *args], cwd=REPO, env=env, text=True,
                          capture_output=True, timeout=300, check=False)


def park(config: ResolvedConfig, workflow: str, **input: object) -> Run:
    # Staff may write to customers under the company's policy.
    staff = make_user("sam", groups=["staff"], perms=["runs.start_workflow"])
    run = services.start(workflow=workflow, input=input, started_by=staff.username, config=config)
    drain(config)
    run.refresh_from_db()
    return run


def tree(tmp_path: Path, edits: dict[str, tuple[str, str]]) -> Path:
    """A copy of the company root under `tmp_path`, folder named `company` as the live one is,
    with each file's `old` text replaced by `new`."""
    copy = tmp_path / "head" / "company"
    shutil.copytree(COMPANY, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, (old, new) in edits.items():
        path = copy / rel
        text = path.read_text()
        assert old in text, (rel, old)
        path.write_text(text.replace(old, new))
    return copy


UNRELATED = {"workflows/follow_up.py": ('"How is your order?"', '"How is your order going?"')}
INSERTED = {"workflows/await_shipment.py": (
    '        shipped = ctx.wait_message("shipped"',
    '        ctx.shop.order.get({"order_id": input.order_id})\n        shipped = ctx.wait_message("shipped"')}


def test_the_live_code_migrates_every_parked_run(tmp_path, live):
    waiting = park(live, "await-shipment", order_id="1001")
    assert (waiting.status, waiting.waiting_for) == (RunStatus.WAITING, "message")
    done = replay(tmp_path, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tree"] == str(COMPANY) and report["version"] == live.version
    assert (report["migrates"], report["pinned"]) == (1, 0)
    assert report["runs"] == [{"run": waiting.id, "workflow": "await-shipment", "from": waiting.app_version,
                               "to": version_of(live, "await-shipment"), "outcome": "migrates", "reason": "",
                               "steps": 3, "step": None}]


def test_a_copy_of_the_root_with_an_unrelated_edit_migrates_and_one_with_an_inserted_step_pins(tmp_path, live):
    waiting = park(live, "await-shipment", order_id="1001")
    records = LedgerRecord.objects.count()

    unrelated = tree(tmp_path / "a", UNRELATED)
    done = replay(tmp_path, "--tree", str(unrelated), "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["tree"] == str(unrelated) and report["version"] != live.version
    assert [(r["run"], r["outcome"]) for r in report["runs"]] == [(waiting.id, "migrates")]

    inserted = tree(tmp_path / "b", INSERTED)
    done = replay(tmp_path, "--tree", str(inserted), "--workflow", "await-shipment")
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[0] == (f"{waiting.id} (await-shipment): pinned at step 3: "
                                           "step 3 was wait shipped, now call shop.order.get")
    assert done.stdout.splitlines()[-1].startswith("0 migrate, 1 pinned, against acme@")
    assert LedgerRecord.objects.count() == records  # a proof writes nothing
    assert Run.objects.get(pk=waiting.pk).app_version == waiting.app_version


def test_exported_fixtures_are_proven_against_a_tree_without_the_runs_database(tmp_path, live):
    waiting = park(live, "await-shipment", order_id="1001")
    finished = park(live, "follow-up", order_id="1001", after_seconds=0)
    assert finished.status == RunStatus.FINISHED, finished.error
    fixtures = tmp_path / "fixtures"
    done = replay(tmp_path, "--export", str(fixtures), "--ended")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"exported 2 runs to {fixtures}"
    assert sorted(p.name for p in fixtures.iterdir()) == sorted([f"{waiting.id}.json", f"{finished.id}.json"])

    # A database that holds no runs at all (not even its tables): the fixtures are all there is.
    empty = "sqlite://" + str(tmp_path / "empty.sqlite3")
    for edits, code, outcomes in ((UNRELATED, 0, {waiting.id: "migrates", finished.id: "migrates"}),
                                  (INSERTED, 1, {waiting.id: "pinned", finished.id: "migrates"})):
        head = tree(tmp_path / str(code), edits)
        done = replay(tmp_path, "--fixtures", str(fixtures), "--tree", str(head), "--json", db_url=empty)
        assert done.returncode == code, done.stderr
        assert {r["run"]: r["outcome"] for r in json.loads(done.stdout)["runs"]} == outcomes
    # The finished run's whole history replays: its last step is its notify, then it returned.
    [proof] = json.loads(replay(tmp_path, "--fixtures", str(fixtures), "--run", finished.id, "--json",
                                db_url=empty).stdout)["runs"]
    assert (proof["outcome"], proof["steps"]) == ("migrates", 5)


def test_ended_runs_are_proven_only_when_asked(tmp_path, live):
    finished = park(live, "follow-up", order_id="1001", after_seconds=0)
    assert json.loads(replay(tmp_path, "--json").stdout)["runs"] == []
    [proof] = json.loads(replay(tmp_path, "--json", "--ended").stdout)["runs"]
    assert (proof["run"], proof["outcome"]) == (finished.id, "migrates")


@pytest.mark.parametrize(("args", "says"), [
    (("--run", "no-such-run"), "no run no-such-run"),
    (("--workflow", "no-such-flow"), "no workflow no-such-flow in the code, and no run of it"),
    (("--fixtures", "/no/such/folder"), "no folder /no/such/folder to read fixtures from"),
    (("--tree", "/no/such/tree"), "--tree /no/such/tree: no such folder"),
    (("--run", "a", "--workflow", "refund"), "give --run or --workflow, not both"),
    (("--run", "bad id!"), "Run id 'bad id!' is not valid"),
])
def test_bad_input_exits_2_naming_it_and_changes_nothing(tmp_path, live, args, says):
    park(live, "await-shipment", order_id="1001")
    before = (Run.objects.count(), LedgerRecord.objects.count())
    done = replay(tmp_path, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert says in done.stderr
    assert (Run.objects.count(), LedgerRecord.objects.count()) == before


def test_a_fixture_that_is_not_one_exits_2_naming_the_file(tmp_path, live):
    fixtures = tmp_path / "bad"
    fixtures.mkdir()
    (fixtures / "x.json").write_text('{"format": "something else"}')
    done = replay(tmp_path, "--fixtures", str(fixtures))
    assert done.returncode == 2
    assert f"{fixtures / 'x.json'} is not a recorded run" in done.stderr


def test_a_tree_that_does_not_resolve_exits_2_naming_why(tmp_path, live):
    broken = tmp_path / "broken" / "company"
    broken.mkdir(parents=True)
    done = replay(tmp_path, "--tree", str(broken))
    assert done.returncode == 2
    assert f"the tree {broken} does not resolve" in done.stderr and "has no sanoma_config.py" in done.stderr


def test_a_checkout_holding_the_root_in_a_subfolder_says_which_was_meant(tmp_path, live):
    """As a user gives it: `--tree` names the checkout, whose config root is its `company` folder."""
    checkout = tmp_path / "checkout"
    shutil.copytree(COMPANY, checkout / "company", ignore=shutil.ignore_patterns("__pycache__"))
    (checkout / "docs").mkdir()
    done = replay(tmp_path, "--tree", str(checkout))
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "has no sanoma_config.py" in done.stderr and f"did you mean {checkout / 'company'}?" in done.stderr
    (checkout / "other").mkdir()
    (checkout / "other" / "sanoma_config.py").write_text("")
    done = replay(tmp_path, "--tree", str(checkout))  # two roots under it: no guess
    assert done.returncode == 2 and "has no sanoma_config.py" in done.stderr and "did you mean" not in done.stderr
