"""The probes: /healthz, /readyz and `manage.py health [--worker|--supervisor]`."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from django.db.migrations.recorder import MigrationRecorder
from django.db.models.functions import Now
from django.test import override_settings

from runs import presence
from runs.config.registry import set_config
from runs.health import probes
from runs.models import PresenceRole, WorkerPresence
from runs.tests import db_roles_setup
from runs.tests.processes import REPO, Worker, database_url, wait_until, worker_env

COMPANY = REPO / "company"


@pytest.fixture(autouse=True)
def _migrations_read_again():
    probes._migrated.clear()
    yield
    probes._migrated.clear()


def test_healthz_answers_without_the_database(client):
    answer = client.get("/healthz")  # no django_db mark: a query would raise here
    assert answer.status_code == 200 and answer.json() == {"ok": True}
    assert answer["Cache-Control"].startswith("max-age=0")



@pytest.mark.parametrize("path", ["/healthz", "/readyz"])
def test_a_post_to_a_probe_is_405_naming_get_and_head_not_the_csrf_page(path):
    from django.test import Client

    answer = Client(enforce_csrf_checks=True).post(path, data="{}", content_type="application/json")
    assert answer.status_code == 405
    assert answer["Content-Type"] == "application/json"
    assert answer["Allow"] == "GET, HEAD"
    assert answer.json() == {"ok": False, "error": "POST is not allowed here: use GET or HEAD",
                             "allowed": ["GET", "HEAD"]}


@pytest.mark.django_db
def test_the_probes_are_answered_over_http_where_everything_else_is_sent_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/admin/").status_code == 301
    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200


@pytest.mark.django_db
def test_readyz_answers_ready_when_everything_holds(client):
    answer = client.get("/readyz")
    assert answer.status_code == 200, answer.content
    assert answer.json() == {"ok": True, "failed": [], "checks": {
        "database": {"ok": True}, "migrations": {"ok": True}, "config": {"ok": True}}}


@contextmanager
def _unrecorded(app: str, name: str) -> Iterator[None]:
    """The migration's row gone from django_migrations within the block (on PostgreSQL as the
    tables' owner, when the tests run as the runtime role that may not write it)."""
    if not db_roles_setup.runtime_role_active():
        with transaction.atomic():
            MigrationRecorder.Migration.objects.filter(app=app, name=name).delete()
            yield
            transaction.set_rollback(True)
        return
    with db_roles_setup.owner_connect(autocommit=True) as owner:
        applied = owner.execute("DELETE FROM django_migrations WHERE app = %s AND name = %s RETURNING applied",
                                [app, name]).fetchone()
        try:
            yield
        finally:
            owner.execute("INSERT INTO django_migrations (app, name, applied) VALUES (%s, %s, %s)",
                          [app, name, applied[0]])


@pytest.mark.django_db
def test_readyz_names_a_migration_not_applied(client):
    with _unrecorded("runs", "0017_ledger_verification"):
        answer = client.get("/readyz")
    assert answer.status_code == 503
    body = answer.json()
    assert body["failed"] == ["migrations"]
    assert body["checks"]["migrations"] == {"ok": False, "problem": (
        "1 migration(s) not applied: runs.0017_ledger_verification (run `manage.py migrate`)")}


def _broken_root(tmp_path: Path) -> Path:
    root = tmp_path / "broken"
    root.mkdir()
    (root / "sanoma_config.py").write_text("connectors = []\n")  # no `config = SanomaConfig(...)`
    return root


@pytest.mark.django_db
def test_readyz_and_the_command_say_the_config_does_not_resolve(client, tmp_path, capsys):
    set_config(None)
    try:
        with override_settings(SANOMA_ROOT=_broken_root(tmp_path)):
            answer = client.get("/readyz")
            assert answer.status_code == 503
            assert answer.json()["checks"]["config"] == {"ok": False, "problem": (
                "the config does not resolve (see the site's log, or run `manage.py check`)")}
            with pytest.raises(CommandError) as failed:
                call_command("health")
            assert failed.value.returncode == 1
            # The command, run by the operator, says why (the page, open to anyone, does not).
            assert str(failed.value).startswith("unhealthy: config: the config does not resolve: ")
            assert "sanoma_config.py must define `config = SanomaConfig(...)`" in str(failed.value)
            assert "config: FAILED" in capsys.readouterr().out
    finally:
        set_config(None)


@pytest.mark.django_db
def test_the_command_checks_this_hosts_worker_within_its_lease(capsys, settings):
    settings.SANOMA_LEASE_SECONDS = 30
    call_command("health")
    assert capsys.readouterr().out == "database: ok\nmigrations: ok\nconfig: ok\n"

    with pytest.raises(CommandError) as failed:
        call_command("health", "--worker")
    host = presence.own_name().rpartition(":")[0]
    assert str(failed.value) == f"unhealthy: worker: no worker on {host} has said it is up"

    capsys.readouterr()
    presence.beat(role=PresenceRole.WORKER, version="v1")
    call_command("health", "--worker", "--json")
    assert json.loads(capsys.readouterr().out)["checks"]["worker"] == {"ok": True}

    WorkerPresence.objects.update(seen_at=Now() - timedelta(seconds=45))
    with pytest.raises(CommandError) as failed:
        call_command("health", "--worker")
    assert failed.value.returncode == 1
    assert "last beat 45 s ago, longer than its limit (30 s)" in str(failed.value)

    with pytest.raises(CommandError, match="no supervisor on"):
        call_command("health", "--supervisor")  # a worker's row is not a supervisor
    presence.beat(role=PresenceRole.SUPERVISOR)
    call_command("health", "--supervisor")


def _health(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(REPO / "manage.py"), "health", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


@pytest.mark.process
def test_the_command_says_a_missing_sqlite_file_is_missing_and_makes_nothing(tmp_path):
    var = tmp_path / "var"
    # On instance fakes, with the metrics folder left to its default (<var>/metrics).
    env = {k: v for k, v in worker_env(db_url="", var_dir=var, version="", root=COMPANY).items()
           if k != "PROMETHEUS_MULTIPROC_DIR"}
    done = _health(env, "--worker")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == "database: FAILED"
    assert f"database: the database file {var / 'sanoma.sqlite3'} does not exist" in done.stderr
    assert "worker: the database does not exist" in done.stderr
    # A probe makes nothing: not the database, nor the var folder, its fakes' or its metrics' folder.
    assert not var.exists()
    # /readyz, open to anyone, says the file is missing without naming where the host keeps it.
    ask = ("from django.test import Client; answer = Client().get('/readyz'); "
           "print(answer.status_code, answer.content.decode())")
    shown = subprocess.run([sys.executable, str(REPO / "manage.py"), "shell", "-v", "0", "-c", ask], cwd=REPO,
                           env=env, capture_output=True, text=True, timeout=120)
    status, _, body = shown.stdout.strip().partition(" ")
    assert status == "503", shown.stdout + shown.stderr
    assert json.loads(body)["checks"]["database"] == {"ok": False, "problem": (
        "the database file does not exist (check SANOMA_VAR_DIR or DATABASE_URL; `manage.py migrate` makes it)")}
    assert str(tmp_path) not in body and not (var / "sanoma.sqlite3").exists()


@pytest.mark.process
def test_a_malformed_environment_is_one_failed_check_exit_1(tmp_path):
    env = worker_env(db_url="notaurl", var_dir=tmp_path / "var", version="", root=COMPANY)
    done = _health(env)
    assert done.returncode == 1, done.stdout + done.stderr
    said = "DATABASE_URL: not a database URL: write sqlite:///<path> or postgresql://user@host:port/name"
    assert done.stdout == "environment: FAILED\n"
    assert done.stderr == f"CommandError: unhealthy: environment: {said}\n"
    as_json = _health(env, "--json")
    assert as_json.returncode == 1
    assert json.loads(as_json.stdout) == {"ok": False, "checks": {"environment": {"ok": False, "problem": said}}}
    assert not (tmp_path / "var").exists()


@pytest.mark.process
def test_the_command_exits_1_naming_a_database_that_does_not_answer(tmp_path):
    env = worker_env(db_url="postgresql://nobody@127.0.0.1:9/nowhere", var_dir=tmp_path / "var", version="",
                     root=COMPANY)
    done = _health(env)
    assert done.returncode == 1, done.stderr
    assert "database: FAILED" in done.stdout
    assert "unhealthy: database: the database does not answer (OperationalError)" in done.stderr
    usage = _health(env, "--worker", "--supervisor")
    assert usage.returncode == 2 and "not allowed with argument" in usage.stderr


def _worker_beat_age() -> float:
    """Seconds since the freshest worker of this host beat, as `manage.py health --worker` reads it."""
    host = socket.gethostname()
    ages = [seen.age.total_seconds() for seen in presence.seen()
            if seen.role == PresenceRole.WORKER and seen.name.rpartition(":")[0] == host]
    return min(ages, default=float("inf"))


@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_frozen_worker_is_unhealthy_once_its_lease_has_passed(tmp_path):
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                     root=COMPANY, SANOMA_LEASE_SECONDS="3")
    worker = Worker(env, tmp_path / "worker.log")
    try:
        worker.start()
        done = _health(env, "--worker")
        assert done.returncode == 0, done.stdout + done.stderr + worker.describe()
        assert done.stdout.splitlines()[-1] == "worker: ok"

        assert worker.pgid is not None
        os.killpg(worker.pgid, signal.SIGSTOP)  # frozen: alive, but it beats no more
        try:
            # Its last beat read here first (a query, not a `manage.py` process of 1 to 2 s of CPU a
            # poll), then the command asked until it says so.
            wait_until(lambda: _worker_beat_age() > 3, within=60, what="the frozen worker's lease to pass",
                       describe=worker.describe)
            unhealthy = wait_until(lambda: (done := _health(env, "--worker")).returncode == 1 and done, within=60,
                                   what="the frozen worker to be unhealthy", describe=worker.describe)
            assert "longer than its limit (3 s)" in unhealthy.stderr
        finally:
            os.killpg(worker.pgid, signal.SIGCONT)
        wait_until(lambda: _worker_beat_age() < 3, within=60, what="the worker to beat again",
                   describe=worker.describe)
        wait_until(lambda: _health(env, "--worker").returncode == 0, within=60,
                   what="the worker to be healthy again", describe=worker.describe)
    finally:
        worker.cleanup()
