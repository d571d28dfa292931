"""PostgreSQL's statement and idle-in-transaction timeouts: set on every connection of the site and
the workers, lifted for migrations and `ledger verify`; a bad setting is refused naming it."""
from __future__ import annotations

import subprocess
import sys

import pytest
from django.apps import apps
from django.db import connection
from django.db.models.signals import post_migrate, pre_migrate

from runs.health.timeouts import lifted
from runs.tests.processes import REPO, database_url, worker_env

COMPANY = REPO / "company"
postgresql_only = pytest.mark.skipif(connection.vendor != "postgresql", reason="PostgreSQL's timeouts")


def _show(name: str) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"SHOW {name}")
        return str(cursor.fetchone()[0])


def _shell(tmp_path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    environ = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                         root=COMPANY, **env)
    return subprocess.run([sys.executable, str(REPO / "manage.py"), "shell", "-c", code], cwd=REPO, env=environ,
                          capture_output=True, text=True, timeout=120)


@postgresql_only
@pytest.mark.django_db
def test_every_connection_opens_with_both_timeouts_and_lifts_the_statements_for_long_work():
    assert _show("statement_timeout") == "30s"
    # This process's own connection waits longer inside a transaction (conftest.py: a test's
    # transaction spans its waits); a site's or a worker's: test_a_site_process_opens_with_both_defaults.
    assert _show("idle_in_transaction_session_timeout") == "10min"
    with lifted():
        assert _show("statement_timeout") == "0"
    assert _show("statement_timeout") == "30s"

    runs = apps.get_app_config("runs")
    pre_migrate.send(sender=runs, app_config=runs, verbosity=0, interactive=False, using="default", plan=[],
                     apps=apps)
    assert _show("statement_timeout") == "0"  # migrate's own connection: a long index build is not cut
    post_migrate.send(sender=runs, app_config=runs, verbosity=0, interactive=False, using="default", plan=[],
                      apps=apps)
    assert _show("statement_timeout") == "30s"


@postgresql_only
@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_site_process_opens_with_both_defaults(tmp_path):
    code = ("from django.db import connection\ncursor = connection.cursor()\n"
            "for name in ('statement_timeout', 'idle_in_transaction_session_timeout'):\n"
            "    cursor.execute(f'SHOW {name}')\n    print(name, cursor.fetchone()[0])")
    done = _shell(tmp_path, code)
    assert done.returncode == 0, done.stderr
    assert "statement_timeout 30s" in done.stdout
    assert "idle_in_transaction_session_timeout 1min" in done.stdout


@postgresql_only
@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_statement_past_the_timeout_is_cancelled(tmp_path):
    code = "from django.db import connection\nconnection.cursor().execute('SELECT pg_sleep(3)')"
    done = _shell(tmp_path, code, SANOMA_DB_STATEMENT_TIMEOUT_SECONDS="0.5")
    assert done.returncode == 1
    assert "canceling statement due to statement timeout" in done.stderr

    lifted_code = ("from django.db import connection\nfrom runs.health.timeouts import lifted\n"
                   "with lifted():\n    connection.cursor().execute('SELECT pg_sleep(1)')\nprint('slept')")
    done = _shell(tmp_path, lifted_code, SANOMA_DB_STATEMENT_TIMEOUT_SECONDS="0.5")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("slept")


@postgresql_only
@pytest.mark.process
@pytest.mark.django_db(transaction=True)
def test_a_session_idle_inside_a_transaction_is_ended(tmp_path):
    code = ("import time\nfrom django.db import connection, transaction\n"
            "with transaction.atomic():\n"
            "    connection.cursor().execute('SELECT 1')\n"
            "    time.sleep(2)\n"
            "    connection.cursor().execute('SELECT 1')\n")
    done = _shell(tmp_path, code, SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS="0.5")
    assert done.returncode == 1
    assert "idle-in-transaction timeout" in done.stderr


@pytest.mark.process
def test_a_bad_timeout_is_refused_naming_the_variable(tmp_path):
    env = worker_env(db_url="", var_dir=tmp_path / "var", version="", root=COMPANY,
                     SANOMA_DB_STATEMENT_TIMEOUT_SECONDS="-1", SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS="soon")
    done = subprocess.run([sys.executable, str(REPO / "manage.py"), "check"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1
    assert "SANOMA_DB_STATEMENT_TIMEOUT_SECONDS" in done.stderr and "must be 0 (off) or more" in done.stderr
    assert "SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS" in done.stderr
