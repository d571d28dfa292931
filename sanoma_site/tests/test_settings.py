"""Settings from the environment: defaults, the database URL, bad values, the production profile."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db.backends.postgresql.base import DatabaseWrapper as PostgresWrapper
from django.db.backends.sqlite3.base import DatabaseWrapper as SqliteWrapper

from sanoma_site.tests.support import PRODUCTION_KEY, REPO, manage

SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
PRODUCTION = {
    "DJANGO_ENV": "production", "DJANGO_SECRET_KEY": PRODUCTION_KEY, "DJANGO_ALLOWED_HOSTS": "sanoma.example.com",
    # the example company announces approvals in Slack, linking to the desk: its address is needed
    "SANOMA_SITE_URL": "https://sanoma.example.com",
}


def test_with_nothing_set_the_site_runs_on_the_sqlite_file_in_the_var_dir(load_settings, clean_environ):
    s = load_settings()
    db = s["DATABASES"]["default"]
    assert db["ENGINE"] == "django.db.backends.sqlite3"
    assert db["NAME"] == str(clean_environ / "sanoma.sqlite3")
    assert db["OPTIONS"] == SQLITE_OPTIONS
    assert db["TEST"] == {"NAME": str(clean_environ / "test_sanoma.sqlite3")}
    assert (db["CONN_MAX_AGE"], db["CONN_HEALTH_CHECKS"]) == (600, True)
    assert clean_environ.is_dir()  # made on start


def test_with_nothing_set_the_engine_and_the_queue_keep_their_defaults(load_settings):
    s = load_settings()
    assert s["SANOMA_ROOT"] == REPO / "company"
    assert (s["SANOMA_APP_VERSION"], s["SANOMA_FAKES"]) == (None, "")
    assert (s["SANOMA_LEASE_SECONDS"], s["SANOMA_SEGMENT_SECONDS"], s["SANOMA_SWEEP_SECONDS"]) == (30.0, 20.0, 0.25)
    assert s["Q_CLUSTER"] == {
        "name": "sanoma", "orm": "default", "workers": 2, "poll": 0.05, "bulk": 1, "queue_limit": 2,
        "save_limit": -1, "ack_failures": True, "max_attempts": 1, "timeout": 90, "retry": 360,
        "catch_up": False, "log_level": "WARNING",
    }
    assert s["DEBUG"] is False
    assert s["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "testserver"]
    assert s["SECRET_KEY"].startswith("django-insecure-")
    assert s["SECURE_SSL_REDIRECT"] is False and s["SESSION_COOKIE_SECURE"] is False


def test_an_empty_variable_counts_as_unset(load_settings, clean_environ):
    s = load_settings(DATABASE_URL="", SANOMA_LEASE_SECONDS="", DJANGO_DEBUG="", SANOMA_APP_VERSION="")
    assert s["DATABASES"]["default"]["NAME"] == str(clean_environ / "sanoma.sqlite3")
    assert (s["SANOMA_LEASE_SECONDS"], s["DEBUG"], s["SANOMA_APP_VERSION"]) == (30.0, False, None)


def test_the_engine_variables_are_read(load_settings, tmp_path):
    s = load_settings(
        SANOMA_ROOT=str(tmp_path / "acme"), SANOMA_APP_VERSION="v7", SANOMA_FAKES="instance",
        SANOMA_LEASE_SECONDS="3", SANOMA_SEGMENT_SECONDS="5", SANOMA_SWEEP_SECONDS="1.5", SANOMA_WORKERS="4",
        SANOMA_Q_LOG_LEVEL="info", SANOMA_LOG_LEVEL="debug",
    )
    assert s["SANOMA_ROOT"] == tmp_path / "acme"
    assert (s["SANOMA_APP_VERSION"], s["SANOMA_FAKES"]) == ("v7", "instance")
    assert (s["SANOMA_LEASE_SECONDS"], s["SANOMA_SEGMENT_SECONDS"], s["SANOMA_SWEEP_SECONDS"]) == (3.0, 5.0, 1.5)
    q = s["Q_CLUSTER"]
    assert (q["workers"], q["timeout"], q["retry"], q["log_level"]) == (4, 45, 180, "INFO")
    assert s["LOGGING"]["loggers"]["sanoma"]["level"] == 10


def test_the_django_variables_are_read(load_settings):
    s = load_settings(
        DJANGO_DEBUG="1", DJANGO_SECRET_KEY="a-key-of-my-own", DJANGO_ALLOWED_HOSTS="a.example.com, b.example.com",
        DJANGO_CSRF_TRUSTED_ORIGINS="https://a.example.com",
    )
    assert s["DEBUG"] is True
    assert s["SECRET_KEY"] == "a-key-of-my-own"
    assert s["ALLOWED_HOSTS"] == ["a.example.com", "b.example.com"]
    assert s["CSRF_TRUSTED_ORIGINS"] == ["https://a.example.com"]


def test_secret_key_is_accepted_and_django_secret_key_wins(load_settings):
    assert load_settings(SECRET_KEY="plain-name")["SECRET_KEY"] == "plain-name"
    assert load_settings(SECRET_KEY="plain-name", DJANGO_SECRET_KEY="prefixed")["SECRET_KEY"] == "prefixed"


@pytest.mark.parametrize("slashes", ["///", "////"])
def test_an_sqlite_url_names_an_absolute_file_and_its_test_file_beside_it(load_settings, tmp_path, slashes):
    url = f"sqlite:{slashes}{str(tmp_path).lstrip('/')}/data/acme.sqlite3"
    db = load_settings(DATABASE_URL=url)["DATABASES"]["default"]
    assert db["NAME"] == str(tmp_path / "data" / "acme.sqlite3")
    assert db["TEST"] == {"NAME": str(tmp_path / "data" / "test_acme.sqlite3")}
    assert db["OPTIONS"] == SQLITE_OPTIONS


def test_sqlite_memory_is_a_database_in_memory_and_no_file_is_made(load_settings, clean_environ, django_db_blocker):
    db = load_settings(DATABASE_URL="sqlite://:memory:")["DATABASES"]["default"]
    assert db["NAME"] == ":memory:" and "TEST" not in db
    wrapper = SqliteWrapper({**db, "TIME_ZONE": None, "AUTOCOMMIT": True, "ATOMIC_REQUESTS": False})
    try:
        with django_db_blocker.unblock():  # a connection of its own, not the test database
            wrapper.ensure_connection()
        assert isinstance(wrapper.connection, sqlite3.Connection)
        files = [row[2] for row in wrapper.connection.execute("PRAGMA database_list")]
        assert files == [""]  # SQLite names no file for an in-memory database
    finally:
        wrapper.close()
    assert not (clean_environ / "sanoma.sqlite3").exists()


def test_a_postgresql_url_gives_psycopg_its_parts(load_settings):
    db = load_settings(DATABASE_URL="postgresql://sanoma:p%40ss@db.example.com:6543/acme?sslmode=require")[
        "DATABASES"]["default"]
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["NAME"], db["USER"], db["PASSWORD"], db["HOST"], db["PORT"]) == (
        "acme", "sanoma", "p@ss", "db.example.com", "6543")
    # The URL's own options, and the session timeouts every connection opens with.
    assert db["OPTIONS"]["sslmode"] == "require"
    assert db["OPTIONS"]["options"] == "-c statement_timeout=30000 -c idle_in_transaction_session_timeout=60000"
    assert (db["CONN_MAX_AGE"], db["CONN_HEALTH_CHECKS"]) == (600, True)
    assert load_settings(DATABASE_URL="postgres://postgres@localhost")["DATABASES"]["default"]["NAME"] == "sanoma"


def test_a_percent_encoded_unix_socket_host_is_decoded(load_settings):
    db = load_settings(DATABASE_URL="postgresql://postgres@%2Fvar%2Frun%2Fpostgresql/sanoma")["DATABASES"]["default"]
    assert (db["HOST"], db["NAME"], db["USER"], db["PORT"]) == ("/var/run/postgresql", "sanoma", "postgres", "")
    # The folder's case is kept: a socket path is a file name, not a host name.
    mixed = load_settings(DATABASE_URL="postgresql://u@%2Fsrv%2FPgSocket:5433/x")["DATABASES"]["default"]
    assert (mixed["HOST"], mixed["PORT"]) == ("/srv/PgSocket", "5433")


def test_the_decoded_socket_host_connects_through_the_socket(load_settings, django_db_blocker):
    if not Path("/var/run/postgresql/.s.PGSQL.5432").exists():
        pytest.skip("no PostgreSQL socket in /var/run/postgresql on this machine")
    db = load_settings(DATABASE_URL="postgresql://postgres@%2Fvar%2Frun%2Fpostgresql/postgres")["DATABASES"]["default"]
    wrapper = PostgresWrapper({**db, "TIME_ZONE": None, "AUTOCOMMIT": True, "ATOMIC_REQUESTS": False})
    try:
        with django_db_blocker.unblock(), wrapper.cursor() as cursor:
            cursor.execute("SELECT inet_server_addr() IS NULL")  # NULL on a Unix-socket connection
            assert cursor.fetchone() == (True,)
    finally:
        wrapper.close()


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"SANOMA_LEASE_SECONDS": "abc"}, "SANOMA_LEASE_SECONDS='abc': Not a valid number"),
        ({"SANOMA_SEGMENT_SECONDS": "0"}, "SANOMA_SEGMENT_SECONDS='0': must be greater than 0"),
        ({"SANOMA_WORKERS": "two"}, "SANOMA_WORKERS='two': Not a valid integer"),
        ({"SANOMA_FAKES": "instances"}, "SANOMA_FAKES='instances': must be empty (real drivers) or instance"),
        ({"DJANGO_DEBUG": "maybe"},
         "DJANGO_DEBUG='maybe': Not a valid boolean; use true or false (also 1/0, yes/no, on/off)"),
        ({"SANOMA_LOG_LEVEL": "LOUD"}, "SANOMA_LOG_LEVEL='LOUD': Not a valid log level"),
        ({"SANOMA_LOG_FORMAT": "xml"}, "SANOMA_LOG_FORMAT='xml': must be plain or json"),
        ({"DJANGO_ENV": "prod"}, "DJANGO_ENV='prod': must be development or production"),
        ({"DATABASE_URL": "mysql://root:hunter2@db/acme"}, "DATABASE_URL: scheme 'mysql' is not supported"),
        ({"DATABASE_URL": "sqlite://"}, "DATABASE_URL: an SQLite URL is sqlite:///<absolute path of the file>"),
        ({"DATABASE_URL": "sqlite://relative.db"}, "DATABASE_URL: an SQLite URL is"),
        ({"DATABASE_URL": "postgresql://u:hunter2@db:port/x"}, "DATABASE_URL: not a database URL"),
        ({"DATABASE_URL": "postgresql:/u:hunter2@db/x"}, "DATABASE_URL: not a database URL"),
    ],
)
def test_a_bad_value_is_refused_naming_the_variable(load_settings, environ, named):
    with pytest.raises(ImproperlyConfigured) as refused:
        load_settings(**environ)
    assert named in str(refused.value)
    assert "hunter2" not in str(refused.value)  # a URL's password is never repeated


def test_every_bad_variable_is_named_in_one_line(load_settings):
    with pytest.raises(ImproperlyConfigured) as refused:
        load_settings(SANOMA_LEASE_SECONDS="abc", SANOMA_WORKERS="0", DATABASE_URL="mysql://x/y")
    message = str(refused.value)
    assert "\n" not in message
    for name in ("SANOMA_LEASE_SECONDS", "SANOMA_WORKERS", "DATABASE_URL"):
        assert name in message


def test_manage_py_prints_a_bad_value_as_one_line(tmp_path):
    done = manage("check", SANOMA_VAR_DIR=str(tmp_path), SANOMA_LEASE_SECONDS="abc")
    assert done.returncode != 0
    assert done.stderr.strip().splitlines() == [
        "ImproperlyConfigured: The environment is not valid: SANOMA_LEASE_SECONDS='abc': Not a valid number."
    ]


def test_production_turns_https_on(load_settings):
    s = load_settings(**PRODUCTION)
    assert s["SANOMA_PROFILE"] == "production"
    assert (s["DEBUG"], s["SECRET_KEY"], s["ALLOWED_HOSTS"]) == (False, PRODUCTION_KEY, ["sanoma.example.com"])
    assert s["SECURE_SSL_REDIRECT"] and s["SESSION_COOKIE_SECURE"] and s["CSRF_COOKIE_SECURE"]
    assert (s["SECURE_HSTS_SECONDS"], s["SECURE_HSTS_INCLUDE_SUBDOMAINS"], s["SECURE_HSTS_PRELOAD"]) == (
        31_536_000, True, True)
    assert s["SECURE_PROXY_SSL_HEADER"] is None
    behind_proxy = load_settings(DJANGO_SECURE_PROXY_SSL_HEADER="1", DJANGO_SECURE_HSTS_SECONDS="0")
    assert behind_proxy["SECURE_PROXY_SSL_HEADER"] == ("HTTP_X_FORWARDED_PROTO", "https")
    assert (behind_proxy["SECURE_HSTS_SECONDS"], behind_proxy["SECURE_HSTS_PRELOAD"]) == (0, False)


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"DJANGO_SECRET_KEY": ""}, "DJANGO_SECRET_KEY is not set"),
        ({"DJANGO_SECRET_KEY": "django-insecure-copied-from-somewhere"}, "a django-insecure- development key"),
        ({"DJANGO_ALLOWED_HOSTS": ""}, "DJANGO_ALLOWED_HOSTS is not set"),
        ({"DJANGO_DEBUG": "1"}, "DJANGO_DEBUG=1 is refused"),
    ],
)
def test_production_refuses_to_start_without_what_it_needs(load_settings, environ, named):
    with pytest.raises(ImproperlyConfigured, match="The environment is not valid") as refused:
        load_settings(**{**PRODUCTION, **environ})
    assert named in str(refused.value)


def test_check_deploy_is_clean_with_the_production_variables(tmp_path):
    done = manage("check", "--deploy", SANOMA_VAR_DIR=str(tmp_path), **PRODUCTION)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "System check identified no issues (0 silenced)."
    assert done.stderr == ""


def test_check_deploy_fails_on_the_development_key(tmp_path):
    done = manage("check", "--deploy", SANOMA_VAR_DIR=str(tmp_path))
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY: (sanoma.E010) the built-in development secret key is in use" in done.stderr
    assert "(sanoma.W011) the production profile is off" in done.stderr


def test_the_development_key_is_fine_without_deploy(tmp_path):
    done = manage("check", SANOMA_VAR_DIR=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert "System check identified no issues" in done.stdout
