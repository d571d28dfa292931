"""Settings, read from the environment (with environs); the README's settings table lists them all.

Two profiles. Development, the default, is what ./demo, ./test and CI use without setting anything:
it runs on a built-in development secret key (which `manage.py check --deploy` reports as an
error). Production (`DJANGO_ENV=production`) refuses to start without a real secret key and the
site's host names, and turns the HTTPS settings on.

Every variable is read before anything is refused, so one bad start names every bad variable, on
one line (an ImproperlyConfigured).
"""
from __future__ import annotations

import logging
import os
import re
import sys
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import dj_database_url
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured
from environs import Env, EnvError
from marshmallow.validate import OneOf, Range

from sanoma_site.logging import logging_config

_T = TypeVar("_T")

env = Env()
_problems: list[str] = []
# Values never repeated in an error message.
_SECRET_VARIABLES = {"DATABASE_URL", "DATABASE_OWNER_URL", "DJANGO_SECRET_KEY", "SECRET_KEY", "SANOMA_SECRETS_KEY",
                     "SANOMA_METRICS_TOKEN"}
# Django's own marker of a key nobody chose; `check --deploy` and the production profile refuse it.
_DEVELOPMENT_SECRET_KEY = "django-insecure-sanoma-local-development-key-change-me-in-production"
_POSITIVE = Range(min=0, min_inclusive=False, error="must be greater than 0")
_TIME_ZONE = OneOf(sorted(zoneinfo.available_timezones()), error="must be an IANA time zone such as Europe/Helsinki")


def _read(parse: Callable[..., _T | None], name: str, default: _T, **kwargs: Any) -> _T:
    """`parse(name, default)`; a bad value is noted, to be reported with the others, and the default used meanwhile.

    An empty variable counts as unset (`DATABASE_URL= ./test` means the default database).
    """
    if env.str(name, "") == "":
        return default
    try:
        value = parse(name, default, **kwargs)
    except EnvError as err:
        reasons = [str(r).rstrip(".") for r in getattr(err, "error_messages", None) or [str(err)]]
        if parse == env.bool:
            reasons.append("use true or false (also 1/0, yes/no, on/off)")
        shown = "" if name in _SECRET_VARIABLES else f"={env.str(name, '')!r}"
        _problems.append(f"{name}{shown}: {'; '.join(reasons)}")
        return default
    return default if value is None else value


def _read_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; spaces around the commas and empty items are dropped."""
    return [str(item).strip() for item in _read(env.list, name, default) if str(item).strip()]


def _refuse(problems: list[str]) -> None:
    """Raise ImproperlyConfigured naming every bad variable.

    Left uncaught (manage.py, a plain `python -c`), it is printed as its one line rather than a
    traceback through Django's import machinery, which says nothing about the environment.
    """
    message = "The environment is not valid: " + "; ".join(p.replace("\n", " ") for p in problems) + "."
    previous = sys.excepthook

    def print_one_line(kind: type[BaseException], value: BaseException, trace: TracebackType | None) -> None:
        if isinstance(value, ImproperlyConfigured) and str(value) == message and _PROBE_ONLY:
            # `manage.py health` answers as a probe: the environment is one more failed check, said as
            # the command says any other (exit status 1, the interpreter's for an uncaught error).
            said = "; ".join(p.replace("\n", " ") for p in problems)
            if "--json" in sys.argv[2:]:
                import json
                sys.stdout.write(json.dumps({"ok": False, "checks": {"environment": {"ok": False, "problem": said}}})
                                 + "\n")
            else:
                sys.stdout.write("environment: FAILED\n")
            sys.stderr.write(f"CommandError: unhealthy: environment: {said}\n")
        elif isinstance(value, ImproperlyConfigured) and str(value) == message:
            sys.stderr.write(f"ImproperlyConfigured: {message}\n")
        else:
            previous(kind, value, trace)

    sys.excepthook = print_one_line
    raise ImproperlyConfigured(message)


def _sqlite(name: str, options: dict[str, Any]) -> dict[str, Any]:
    # WAL with IMMEDIATE transactions: writers queue on the lock instead of failing mid-transaction.
    entry: dict[str, Any] = {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": name,
        "OPTIONS": {
            "transaction_mode": "IMMEDIATE",
            "timeout": 20,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            **options,
        },
    }
    if name != ":memory:":  # an in-memory database is tested in memory too
        entry["TEST"] = {"NAME": str(Path(name).with_name("test_" + Path(name).name))}
    return entry


def _database(url: str, default_file: Path) -> dict[str, Any]:
    """The DATABASES entry of a DATABASE_URL (empty: the default SQLite file); ValueError says what is wrong."""
    if not url:
        entry = _sqlite(str(default_file), {})
    else:
        scheme, separator, _ = url.partition("://")
        expected = "sqlite:///<path> or postgresql://user@host:port/name"
        if not separator or not scheme.isalnum():  # the text is not echoed: it may hold a password
            raise ValueError(f"not a database URL: write {expected}")
        if scheme not in ("sqlite", "postgres", "postgresql"):
            raise ValueError(f"scheme {scheme!r} is not supported: use {expected}")
        try:
            parsed: dict[str, Any] = dict(dj_database_url.parse(url))
            parts = urlsplit(url)
        except ValueError as err:
            raise ValueError(f"not a database URL ({err})") from None
        options = dict(parsed.get("OPTIONS") or {})
        if scheme == "sqlite":
            if url == "sqlite://:memory:":
                entry = _sqlite(":memory:", options)
            elif parts.netloc or not parts.path.strip("/"):
                raise ValueError("an SQLite URL is sqlite:///<absolute path of the file> or sqlite://:memory:")
            else:
                # The path after sqlite:// is absolute (sqlite:///srv/x.sqlite3, as this project always
                # read it; dj-database-url would read three slashes as a relative path).
                entry = _sqlite("/" + unquote(parts.path).lstrip("/"), options)
        else:
            host = parts.netloc.rpartition("@")[2]
            entry = {
                "ENGINE": "django.db.backends.postgresql",  # psycopg 3
                "NAME": parsed.get("NAME") or "sanoma",
                "USER": parsed.get("USER", ""),
                "PASSWORD": parsed.get("PASSWORD", ""),
                # A Unix-socket directory is given percent-encoded (%2Fvar%2Frun%2Fpostgresql); decoded
                # here from the URL as written, since the parsed host name is lower-cased.
                "HOST": unquote(host.partition(":")[0]) if host[:3].lower() == "%2f" else parsed.get("HOST", ""),
                "PORT": str(parsed.get("PORT") or ""),
                "OPTIONS": options,
            }
    # Measured: CONN_MAX_AGE=0 makes django-q2's ORM broker about 7x slower.
    entry["CONN_MAX_AGE"] = 600
    entry["CONN_HEALTH_CHECKS"] = True
    return entry


BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = _read(env.path, "SANOMA_VAR_DIR", BASE_DIR / "var").resolve()
# `manage.py health` is a probe: it makes nothing, whatever SANOMA_VAR_DIR names (a folder made
# there would hide the mistake it reports). Every other process makes the folders it writes in.
_PROBE_ONLY = Path(sys.argv[0]).name == "manage.py" and sys.argv[1:2] == ["health"]
if not _PROBE_ONLY:
    try:
        VAR_DIR.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        _problems.append(f"SANOMA_VAR_DIR={str(VAR_DIR)!r}: the folder cannot be made ({err.strerror})")

SANOMA_PROFILE = _read(
    env.str, "DJANGO_ENV", "development",
    validate=OneOf(["development", "production"], error="must be development or production"),
)
_production = SANOMA_PROFILE == "production"

SECRET_KEY = _read(env.str, "DJANGO_SECRET_KEY", "") or _read(env.str, "SECRET_KEY", "")
if not SECRET_KEY:
    if _production:
        _problems.append(
            "DJANGO_SECRET_KEY is not set: DJANGO_ENV=production needs a long random key "
            "(python -c 'import secrets; print(secrets.token_urlsafe(50))')"
        )
    SECRET_KEY = _DEVELOPMENT_SECRET_KEY
elif _production and SECRET_KEY.startswith("django-insecure-"):
    _problems.append("DJANGO_SECRET_KEY: a django-insecure- development key is refused with DJANGO_ENV=production")

# Off unless asked: with DEBUG on, Django keeps every query of a long-running worker in memory.
DEBUG = _read(env.bool, "DJANGO_DEBUG", False)
if DEBUG and _production:
    _problems.append("DJANGO_DEBUG=1 is refused with DJANGO_ENV=production: debug pages show settings and code")

ALLOWED_HOSTS = _read_list("DJANGO_ALLOWED_HOSTS", [] if _production else ["127.0.0.1", "localhost", "testserver"])
if _production and not ALLOWED_HOSTS:
    _problems.append("DJANGO_ALLOWED_HOSTS is not set: DJANGO_ENV=production needs the site's host names")
CSRF_TRUSTED_ORIGINS = _read_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])

# HTTPS, on in production: the site is served over TLS only and browsers are told to remember that.
SECURE_SSL_REDIRECT = _read(env.bool, "DJANGO_SECURE_SSL_REDIRECT", _production)
SECURE_HSTS_SECONDS = _read(
    env.int, "DJANGO_SECURE_HSTS_SECONDS", 31_536_000 if _production else 0, validate=Range(min=0)
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = _production and SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = _production and SECURE_HSTS_SECONDS > 0
# Probes ask over plain HTTP inside the platform: they get their answer, not a redirect to HTTPS.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$"]
SESSION_COOKIE_SECURE = _production
CSRF_COOKIE_SECURE = _production
# Behind a proxy that ends TLS, the request reaches Django as http: trust its X-Forwarded-Proto.
SECURE_PROXY_SSL_HEADER = (
    ("HTTP_X_FORWARDED_PROTO", "https") if _read(env.bool, "DJANGO_SECURE_PROXY_SSL_HEADER", False) else None
)

INSTALLED_APPS = [
    "sanoma_site.apps.DeskAdminConfig",  # the admin, as the operator's desk
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served by the site itself (no CDN)
    "guardian",
    "django_q",
    "connectors",
    "runs",  # before behave_django: its `behave` command is runs' (a config feature file by path)
    "changes",  # the declared state
    "changes.credentials",
    "changes.lifecycle",  # after the declared state: its extension is asked after the declared state's
    "wakeups",
    "sanoma_site.apps.SiteConfig",  # the site itself: composes the apps before it (the demo command)
    "behave_django",
]

MIDDLEWARE = [
    "sanoma_site.middleware.BodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "sanoma_site.middleware.OperatorTimeZoneMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "sanoma_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "sanoma_site" / "templates"],  # the desk's own base page
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = "sanoma_site.wsgi.application"

try:
    _default_database = _database(_read(env.str, "DATABASE_URL", ""), VAR_DIR / "sanoma.sqlite3")
except ValueError as err:
    _problems.append(f"DATABASE_URL: {err}")
    _default_database = _database("", VAR_DIR / "sanoma.sqlite3")
DATABASES = {"default": _default_database}
# PostgreSQL: no statement runs longer than this, and no session sits idle inside a transaction
# longer than that (either holds locks others wait on); 0 turns one off. Set when each connection
# opens (no query of its own); migrations and `ledger verify` lift the statement timeout for
# themselves (runs.health.timeouts).
SANOMA_DB_STATEMENT_TIMEOUT_SECONDS = _read(
    env.float, "SANOMA_DB_STATEMENT_TIMEOUT_SECONDS", 30.0, validate=Range(min=0, error="must be 0 (off) or more"))
SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS = _read(
    env.float, "SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS", 60.0, validate=Range(min=0, error="must be 0 (off) or more"))


def _pg_timeouts(entry: dict[str, Any]) -> None:
    """These settings win over the same options in the URL's `?options=` (a URL another process
    wrote from this one's settings carries them too); the URL's other options are kept."""
    if entry["ENGINE"] != "django.db.backends.postgresql":
        return
    options = entry["OPTIONS"]
    given = re.sub(r"-c\s*(statement_timeout|idle_in_transaction_session_timeout)=\S+", "",
                   str(options.get("options", ""))).split()
    options["options"] = " ".join([*given, f"-c statement_timeout={int(SANOMA_DB_STATEMENT_TIMEOUT_SECONDS * 1000)}",
                                   "-c idle_in_transaction_session_timeout="
                                   f"{int(SANOMA_DB_IDLE_IN_TRANSACTION_SECONDS * 1000)}"])


_pg_timeouts(DATABASES["default"])

# The tables' owner, for `migrate --database owner` and `db_roles` (PostgreSQL): the runtime then
# connects through DATABASE_URL as a role that may only read and append the ledger.
try:
    _owner_url = _read(env.str, "DATABASE_OWNER_URL", "")
    if _owner_url:
        DATABASES["owner"] = _database(_owner_url, VAR_DIR / "sanoma.sqlite3")
except ValueError as err:
    _problems.append(f"DATABASE_OWNER_URL: {err}")
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row

LANGUAGE_CODE = "en-us"
# The site's time zone: the desk shows moments in it to anyone who has not chosen their own.
TIME_ZONE = _read(env.str, "SANOMA_TIME_ZONE", "UTC", validate=_TIME_ZONE)
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
# The largest request body accepted (bytes): a larger one is answered 413 before it is read.
SANOMA_MAX_BODY_BYTES = _read(
    env.int, "SANOMA_MAX_BODY_BYTES", 1024 * 1024, validate=Range(min=1, error="must be at least 1")
)
DATA_UPLOAD_MAX_MEMORY_SIZE = SANOMA_MAX_BODY_BYTES

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # drf-spectacular's, plus the run-id rule and the 400/404 a path parameter can bring (runs/api/schema.py).
    "DEFAULT_SCHEMA_CLASS": "runs.api.schema.SanomaAutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "sanoma", "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR", "SWAGGER_UI_FAVICON_HREF": "SIDECAR", "REDOC_DIST": "SIDECAR",
}

SANOMA_ROOT = _read(env.path, "SANOMA_ROOT", BASE_DIR / "company").resolve()
SANOMA_APP_VERSION = _read(env.str, "SANOMA_APP_VERSION", "") or None
SANOMA_FAKES = _read(
    env.str, "SANOMA_FAKES", "",
    validate=OneOf(["", "instance"], error="must be empty (real drivers) or instance (every connector on its fake)"),
)
SANOMA_LEASE_SECONDS = _read(env.float, "SANOMA_LEASE_SECONDS", 30.0, validate=_POSITIVE)
# A run segment hands its run back to the queue after this long, so no task outlives its lease.
SANOMA_SEGMENT_SECONDS = _read(env.float, "SANOMA_SEGMENT_SECONDS", 20.0, validate=_POSITIVE)
SANOMA_SWEEP_SECONDS = _read(env.float, "SANOMA_SWEEP_SECONDS", 0.25, validate=_POSITIVE)
# A vendor call not answered within this many seconds is abandoned (driver_timeout), unless its
# operation or the call says otherwise.
SANOMA_CALL_TIMEOUT_SECONDS = _read(env.float, "SANOMA_CALL_TIMEOUT_SECONDS", 60.0, validate=_POSITIVE)
# Scale to zero (wakeups/): how often a --stop-when-idle worker checks, how far ahead a deadline
# keeps it up, and `off` to ignore the wakeup the config root declares.
SANOMA_IDLE_CHECK_SECONDS = _read(env.float, "SANOMA_IDLE_CHECK_SECONDS", 5.0, validate=_POSITIVE)
SANOMA_IDLE_HORIZON_SECONDS = _read(env.float, "SANOMA_IDLE_HORIZON_SECONDS", 60.0, validate=_POSITIVE)
SANOMA_WAKEUP = _read(env.str, "SANOMA_WAKEUP", "", validate=OneOf(["", "off"], error="must be empty or off"))
# Connectors' stored credentials are encrypted at rest (changes/credentials) with this Fernet key; several,
# separated by commas, rotate keys: the first encrypts, every one decrypts. Unset: storing or reading a
# credential is refused, unless DEBUG is on (then a development key derived from SECRET_KEY is used).
SANOMA_SECRETS_KEY = _read_list("SANOMA_SECRETS_KEY", [])
for _index, _key in enumerate(SANOMA_SECRETS_KEY, start=1):
    try:
        Fernet(_key)
    except ValueError:  # the key itself is never repeated
        _problems.append(
            f"SANOMA_SECRETS_KEY: key {_index} is not a Fernet key (32 url-safe base64-encoded bytes: "
            "python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')"
        )
# The engine's hot-path statements (a step's checkpoint) are prepared once per database connection
# and planned once (`runs.engine.bound`); off for a connection pooler that does not keep prepared
# statements (PgBouncer before 1.21, or without max_prepared_statements, in transaction mode).
SANOMA_PREPARED_STATEMENTS = _read(env.bool, "SANOMA_PREPARED_STATEMENTS", True)
# Separation of duties: a run's starter may not decide its approvals unless this is on (site-wide).
SANOMA_ALLOW_SELF_APPROVAL = _read(env.bool, "SANOMA_ALLOW_SELF_APPROVAL", False)
# The life of a change (changes/lifecycle): the repository changes are merged into (unset: the live
# root's git remote `origin`), GitHub's addresses (GitHub Enterprise has its own), and how long a
# change's checks may take in their own process.
SANOMA_REPO_URL = _read(env.str, "SANOMA_REPO_URL", "")
# The site's own address, for links read outside it (an approval announced in Slack links to its
# page in the desk): `./demo` and runserver's in development, none in production (a config that
# announces approvals without `desk=` is refused there until it is set: sanoma.E013).
SANOMA_SITE_URL = _read(env.str, "SANOMA_SITE_URL", "" if _production else "http://127.0.0.1:8000").rstrip("/")
if SANOMA_SITE_URL and not re.match(r"^https?://[^/\s]+(/\S*)?$", SANOMA_SITE_URL):
    _problems.append(f"SANOMA_SITE_URL={SANOMA_SITE_URL!r}: must be the site's address with its scheme, "
                     "such as https://sanoma.example.com")
SANOMA_GITHUB_URL = _read(env.str, "SANOMA_GITHUB_URL", "https://github.com")
SANOMA_GITHUB_API_URL = _read(env.str, "SANOMA_GITHUB_API_URL", "https://api.github.com")
SANOMA_CHECKS_TIMEOUT_SECONDS = _read(env.float, "SANOMA_CHECKS_TIMEOUT_SECONDS", 900.0, validate=_POSITIVE)
# How long each of the in-flight check's processes (`replay --tree`, `rejudge --tree`) may take.
SANOMA_IN_FLIGHT_TIMEOUT_SECONDS = _read(env.float, "SANOMA_IN_FLIGHT_TIMEOUT_SECONDS", 300.0, validate=_POSITIVE)
# Retention (`manage.py retention`): ended runs older than this many days are exported to
# SANOMA_RETENTION_DIR and removed, unless their workflow declares its own `keep`; unset: kept forever.
SANOMA_KEEP_ENDED_RUNS_DAYS: float | None = _read(env.float, "SANOMA_KEEP_ENDED_RUNS_DAYS", None, validate=_POSITIVE)
SANOMA_RETENTION_DIR = _read(env.path, "SANOMA_RETENTION_DIR", VAR_DIR / "retention").resolve()

# django-q2 is the dispatch vehicle, never the source of truth: store no
# successes, ack failures (the engine owns retries), poll often, prefetch little, and keep
# `retry` above the worst dequeue-to-finish time so the broker rarely redelivers.
_TIMEOUT = int(SANOMA_SEGMENT_SECONDS * 3 + 30)
# A stopping worker waits this long for its cluster to end the segments in flight, then kills what
# is left (their runs are taken over once their leases expire, as after a crash).
SANOMA_WORKER_STOP_SECONDS = _read(env.float, "SANOMA_WORKER_STOP_SECONDS", 45.0, validate=_POSITIVE)
_q_log_level = _read(env.log_level, "SANOMA_Q_LOG_LEVEL", logging.WARNING)
Q_CLUSTER = {
    "name": "sanoma",
    "orm": "default",
    "workers": _read(env.int, "SANOMA_WORKERS", 2, validate=Range(min=1, error="must be at least 1")),
    "poll": 0.05,
    "bulk": 1,
    "queue_limit": 2,
    "save_limit": -1,
    "ack_failures": True,
    "max_attempts": 1,
    "timeout": _TIMEOUT,
    "retry": _TIMEOUT * 4,
    "catch_up": False,
    "log_level": logging.getLevelName(_q_log_level),
}

# What monitoring reads (docs/guides/operating/metrics.md, traces.md). Metrics: on unless
# SANOMA_METRICS=false; every process writes its values to files in PROMETHEUS_MULTIPROC_DIR
# (default <SANOMA_VAR_DIR>/metrics), which /metrics adds up. prometheus_client reads that variable
# once, when first imported, so it is set here, before anything imports it.
SANOMA_METRICS = _read(env.bool, "SANOMA_METRICS", True)
SANOMA_METRICS_TOKEN = _read(env.str, "SANOMA_METRICS_TOKEN", "")
# Collectors added to /metrics, by dotted path to a class made with no arguments: the health
# conditions' gauges the apps read from the database at scrape time, then any the site names.
SANOMA_METRICS_COLLECTORS: list[str] = [
    "runs.health.metrics.HealthCollector", "wakeups.health.WakeupCollector",
    *_read_list("SANOMA_METRICS_COLLECTORS", []),
]
if SANOMA_METRICS and _PROBE_ONLY:
    # The probe serves no /metrics: it writes values to the folder only when it is there already
    # (else prometheus_client keeps them in the process).
    _metrics_dir = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or VAR_DIR / "metrics")
    if _metrics_dir.is_dir():
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(_metrics_dir)
    else:
        os.environ.pop("PROMETHEUS_MULTIPROC_DIR", None)
elif SANOMA_METRICS:
    _metrics_dir = Path(os.environ.get("PROMETHEUS_MULTIPROC_DIR") or VAR_DIR / "metrics")
    try:
        _metrics_dir.mkdir(parents=True, exist_ok=True)
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(_metrics_dir)
    except OSError as err:
        _problems.append(f"PROMETHEUS_MULTIPROC_DIR={str(_metrics_dir)!r}: the folder cannot be made ({err.strerror})")
# Traces: off unless an OTLP endpoint is named (OpenTelemetry's own OTEL_EXPORTER_OTLP_ENDPOINT, or
# SANOMA_OTLP_ENDPOINT: the traces URL itself, e.g. http://collector:4318/v1/traces).
SANOMA_OTLP_ENDPOINT = _read(env.str, "SANOMA_OTLP_ENDPOINT", "")
SANOMA_TRACING = bool(SANOMA_OTLP_ENDPOINT or os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
                      or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
SANOMA_TRACE_SERVICE = _read(env.str, "SANOMA_TRACE_SERVICE", "sanoma")
# The run page links to its trace: "{trace_id}" is replaced, e.g. https://tempo.example/trace/{trace_id}
SANOMA_TRACE_URL_TEMPLATE = _read(env.str, "SANOMA_TRACE_URL_TEMPLATE", "")
if SANOMA_TRACE_URL_TEMPLATE and "{trace_id}" not in SANOMA_TRACE_URL_TEMPLATE:
    _problems.append(f"SANOMA_TRACE_URL_TEMPLATE={SANOMA_TRACE_URL_TEMPLATE!r}: must contain {{trace_id}}")

LOGGING = logging_config(
    log_format=_read(
        env.str, "SANOMA_LOG_FORMAT", "plain", validate=OneOf(["plain", "json"], error="must be plain or json")
    ),
    sanoma_level=_read(env.log_level, "SANOMA_LOG_LEVEL", logging.INFO),
    q_level=_q_log_level,
    django_level=_read(env.log_level, "DJANGO_LOG_LEVEL", logging.WARNING),
)

if _problems:
    _refuse(_problems)
