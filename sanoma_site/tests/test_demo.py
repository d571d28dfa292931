"""`manage.py demo` as a real process: it stops its worker and its web server when it is stopped,
and reloads its worker on an edit when SANOMA_ROOT is your own folder (never the shipped example);
and the seed service that makes its people (`runs.seed`).

Each test starts `manage.py demo --port <free port> --no-runs` in its own session, on its own
SQLite file (SANOMA_VAR_DIR in a tmp dir shared by this module's tests, DATABASE_URL unset), waits
until the admin answers over HTTP, notes the demo's process tree from /proc (the worker, its
cluster, the web server: each child in a session of its own), signals the demo and checks that
nothing of the tree is left and that the port can be bound again. Every wait is bounded only to
turn a hang into a failure; a failure prints the demo's output.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.test import override_settings

from company.resources import staff as company_staff
from connectors.errors import InvalidInput
from runs.seed import declared_people, seed_declared, seed_group, seed_person

REPO = Path(__file__).resolve().parents[2]
User = get_user_model()
# Bounds that only stop a hang: generous, so a loaded machine is slow but not failing.
READY_WITHIN = 120.0
EXIT_WITHIN = 60.0  # the demo's own grace period is 10 s, then it SIGKILLs

needs_proc = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads the process tree from /proc")


class Proc(NamedTuple):
    pid: int
    state: str
    ppid: int
    pgrp: int
    session: int


def processes() -> dict[int, Proc]:
    """Every process's state, parent, process group and session, from /proc."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp session ...: comm may hold spaces, so split after the last ')'
        state, ppid, pgrp, session = stat[stat.rindex(")") + 2 :].split()[:4]
        found[int(entry.name)] = Proc(int(entry.name), state, int(ppid), int(pgrp), int(session))
    return found


def descendants(pid: int) -> list[Proc]:
    table = processes()
    tree, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        children = [p for p in table.values() if p.ppid == parent]
        tree += children
        frontier += [p.pid for p in children]
    return tree


def live_in_sessions(sessions: set[int]) -> list[Proc]:
    """Processes (not zombies) in any of these sessions."""
    return [p for p in processes().values() if p.session in sessions and p.state != "Z"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def can_listen_on(port: int) -> bool:
    """Whether a server could take the port now (SO_REUSEADDR, as runserver sets it)."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
            s.listen()
        except OSError:
            return False
        return True


class Demo:
    def __init__(self, var: Path, log: Path, *, root: Path | None = None) -> None:
        self.port = free_port()
        self.log = log
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PYTEST_", "DJANGO_SETTINGS", "SANOMA_")) and k not in ("DATABASE_URL",
                                                                                          "PROMETHEUS_MULTIPROC_DIR")}
        env.update(SANOMA_VAR_DIR=str(var), DJANGO_SETTINGS_MODULE="sanoma_site.settings", PYTHONUNBUFFERED="1")
        if root is not None:
            env["SANOMA_ROOT"] = str(root)
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                [sys.executable, str(REPO / "manage.py"), "demo", "--port", str(self.port), "--no-runs"],
                cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,  # its own session: its id names the demo's own processes
            )
        self.sessions = {self.proc.pid}

    def output(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def describe(self) -> str:
        return f"--- demo output ({self.log}) ---\n{self.output()[-6000:]}\n--- end of demo output ---"

    def wait_for(self, condition: Callable[[], Any], *, within: float, what: str, alive: bool = True) -> Any:
        ends = time.monotonic() + within
        while True:
            value = condition()
            if value:
                return value
            if alive and self.proc.poll() is not None:
                raise AssertionError(f"the demo exited ({self.proc.returncode}) while waiting for {what}\n"
                                     f"{self.describe()}")
            if time.monotonic() > ends:
                raise AssertionError(f"timed out after {within} s waiting for {what}\n{self.describe()}")
            time.sleep(0.1)

    def admin_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/admin/login/", timeout=5) as reply:
                return reply.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def tree(self) -> list[Proc]:
        """The demo's descendants now; their sessions are remembered for the checks after it ends."""
        tree = descendants(self.proc.pid)
        self.sessions |= {p.session for p in tree}
        return tree

    def exit_code(self, *, within: float = EXIT_WITHIN) -> int:
        try:
            return self.proc.wait(timeout=within)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the demo did not exit within {within} s\n{self.describe()}") from None

    def cleanup(self) -> None:
        """Whatever happened, leave nothing behind."""
        for sid in self.sessions:
            try:
                os.killpg(sid, signal.SIGKILL)  # a session's leader leads a group with its id
            except (ProcessLookupError, PermissionError):
                pass
        for p in live_in_sessions(self.sessions):
            try:
                os.kill(p.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


@pytest.fixture(scope="module")
def var_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo-var")  # one SQLite file for the module: migrated once


@pytest.fixture
def demo(var_dir: Path, tmp_path: Path) -> Iterator[Demo]:
    started = Demo(var_dir, tmp_path / "demo.log")
    try:
        yield started
    finally:
        started.cleanup()


def running_demo(demo: Demo) -> list[Proc]:
    """Wait for the admin to answer; the demo's tree, with the worker, the pinned versions' supervisor and the
    server each in a session of its own."""
    demo.wait_for(demo.admin_answers, within=READY_WITHIN, what="the admin to answer over HTTP")
    demo.wait_for(lambda: "worker started:" in demo.output(), within=READY_WITHIN, what="the worker to start")
    tree = demo.tree()
    children = [p for p in tree if p.ppid == demo.proc.pid]
    assert len(children) == 3, (children, demo.describe())
    for child in children:
        assert child.session == child.pid == child.pgrp != demo.proc.pid, (child, demo.describe())
    assert len(tree) > 2, f"the worker's cluster is not in the tree: {tree}"
    assert not can_listen_on(demo.port)
    return tree


def assert_all_gone(demo: Demo, tree: list[Proc]) -> None:
    """No process of the demo's sessions is left (zombies aside: they hold nothing); the port is free."""
    # A process SIGKILLed a moment ago (or, after the demo's death, a worker stopping its cluster)
    # may still be going: wait for it, boundedly.
    demo.wait_for(lambda: not live_in_sessions(demo.sessions), within=EXIT_WITHIN, alive=False,
                  what="the demo's processes to go")
    assert {p.session for p in tree} <= demo.sessions
    assert can_listen_on(demo.port), f"port {demo.port} is still taken\n{demo.describe()}"


@needs_proc
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_to_the_demo_stops_its_worker_and_server(demo: Demo, signum: signal.Signals) -> None:
    tree = running_demo(demo)
    demo.proc.send_signal(signum)  # to the demo's PID only, as a supervisor (or `kill`) sends it
    assert demo.exit_code() == 0, demo.describe()
    assert_all_gone(demo, tree)
    output = demo.output()
    assert f"sanoma demo: {signum.name}, stopping" in output, demo.describe()
    assert "worker stopping" in output, demo.describe()  # the worker was asked to stop, not just killed
    assert "sanoma demo stopped (the worker exited 0" in output, demo.describe()
    assert "Traceback" not in output, demo.describe()
    assert "worker --reload" not in output, demo.describe()  # the shipped example changes through its repo


@needs_proc
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_when_the_demo_is_killed_its_children_stop_too(demo: Demo) -> None:
    tree = running_demo(demo)
    demo.proc.kill()  # no chance to clean up: the kernel tells the children (PR_SET_PDEATHSIG)
    assert demo.exit_code() == -signal.SIGKILL
    assert_all_gone(demo, tree)
    assert "worker stopping" in demo.output(), demo.describe()  # the worker stopped itself, cleanly


@needs_proc
def test_a_worker_asking_to_start_again_after_a_deploy_is_started_again_on_the_new_code(
        demo: Demo, var_dir: Path) -> None:
    running_demo(demo)
    # What a deploy on this machine writes (runs.worker_lifecycle.request_restart), in the demo's folder.
    (var_dir / "restart-requested.json").write_text(json.dumps({"why": "a test deploy", "revision": "",
                                                                "at": time.time()}))
    demo.wait_for(lambda: "asked to start again on new code" in demo.output(), within=READY_WITHIN,
                  what="the demo to see the worker ask to start again")
    demo.wait_for(lambda: demo.output().count("worker started:") == 2, within=READY_WITHIN,
                  what="a worker to start again")
    output = demo.output()
    assert "worker stopping to start again: a test deploy" in output, demo.describe()
    assert demo.proc.poll() is None and demo.admin_answers(), demo.describe()  # the demo and its admin go on
    demo.proc.send_signal(signal.SIGTERM)
    assert demo.exit_code() == 0, demo.describe()


@needs_proc
def test_with_your_own_folder_the_demo_starts_its_worker_again_on_an_edit(var_dir: Path, tmp_path: Path) -> None:
    root = tmp_path / "company"
    shutil.copytree(REPO / "company", root, ignore=shutil.ignore_patterns("__pycache__"))
    demo = Demo(var_dir, tmp_path / "demo.log", root=root)
    try:
        tree = running_demo(demo)
        assert f"reload:  the worker starts again on every edit under {root}" in demo.output(), demo.describe()
        workflow = root / "workflows" / "refunds_report.py"
        workflow.write_text(workflow.read_text() + "\n# edited\n")
        demo.wait_for(lambda: "refunds_report.py changed" in demo.output()
                      and demo.output().count("worker started:") == 2, within=READY_WITHIN,
                      what="the worker to start again on the edit")
        tree += demo.tree()  # the new worker's session too
        demo.proc.send_signal(signal.SIGTERM)
        assert demo.exit_code() == 0, demo.describe()
        assert_all_gone(demo, tree)
        assert "worker --reload stopped" in demo.output(), demo.describe()
    finally:
        demo.cleanup()


# ---- the demo's people: runs.seed ------------------------------------------------------------------

FAST_HASHER = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # the tests' passwords need no strength


@pytest.mark.django_db
@override_settings(PASSWORD_HASHERS=FAST_HASHER)
def test_the_demo_company_is_seeded_from_its_data_files_once_however_often_it_is_seeded() -> None:
    declared = list(vars(company_staff).values())
    people = declared_people(declared)
    names = [p.username for p in people]
    seed_declared(declared)
    alice = User.objects.get(username="alice")
    alice.groups.add(Group.objects.create(name="extra"))  # a change seeding again undoes
    seed_declared(declared)
    assert sorted(User.objects.filter(username__in=names).values_list("username", flat=True)) == sorted(names)
    assert Group.objects.filter(name="staff").count() == 1
    users = {user.username: user for user in User.objects.filter(username__in=names)}
    for person in people:
        user = users[person.username]
        assert user.check_password(person.username) and user.is_staff and user.is_active, person.username
        assert user.is_superuser == (person.username == "admin"), person.username
        assert sorted(user.groups.values_list("name", flat=True)) == sorted(person.groups), person.username
    assert users["alice"].email == "alice@acme.example" and users["alice"].get_full_name() == "Alice Lind"
    assert users["alice"].has_perm("runs.start_workflow") and users["alice"].has_perm("runs.view_run")
    assert not users["alice"].has_perm("runs.change_run")
    assert users["ops"].has_perm("runs.operate_runs") and not users["vera"].has_perm("runs.start_workflow")


@pytest.mark.django_db
@override_settings(PASSWORD_HASHERS=FAST_HASHER)
def test_seed_person_updates_what_it_declares_and_never_duplicates() -> None:
    first = seed_person(username="olga", groups=("finance", "support"), perms=("runs.start_workflow",), password="pw")
    assert first.has_perm("runs.start_workflow") and first.check_password("pw") and not first.is_staff
    again = seed_person(username="olga", groups=("support", "support"), staff=True)
    assert again.pk == first.pk and User.objects.filter(username="olga").count() == 1
    assert list(again.groups.values_list("name", flat=True)) == ["support"]
    assert Group.objects.filter(name="support").count() == 1
    assert not again.has_perm("runs.start_workflow")
    assert again.is_staff and not again.is_superuser
    assert not again.has_usable_password()  # password=None: no password login
    boss = seed_person(username="olga", superuser=True)
    assert boss.is_superuser and boss.is_staff  # a superuser may always log in to the admin


@pytest.mark.django_db
def test_a_bad_permission_name_is_refused_by_name_and_nothing_is_written() -> None:
    with pytest.raises(InvalidInput, match=r"'runs\.no_such_thing'.*'start_workflow'") as refused:
        seed_person(username="nobody", groups=("newgroup",), perms=("runs.no_such_thing", "start_workflow"))
    assert "no permission 'no_such_thing' in app 'runs'" in str(refused.value)
    assert "app_label.codename" in str(refused.value)
    assert not User.objects.filter(username="nobody").exists()
    assert not Group.objects.filter(name="newgroup").exists()
    with pytest.raises(InvalidInput, match="nosuchapp.view_run"):
        seed_group(name="staff", perms=("nosuchapp.view_run",))
