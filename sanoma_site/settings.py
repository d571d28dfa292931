"""Settings, read from the environment.

DATABASE_URL        sqlite:///path or postgresql://user@host:port/db (default: var/sanoma.sqlite3)
SANOMA_ROOT         the company's config root (default: company/)
SANOMA_APP_VERSION  names the app version instead of the hash of the workflows
SANOMA_FAKES        "instance" runs every connector on its fake (the demo does)
SANOMA_LEASE_SECONDS  how long a worker holds a run without renewing (default 30)
"""
from __future__ import annotations

import os
from pathlib import Path

from sanoma_site.database_url import database_entry

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("SANOMA_VAR_DIR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)

SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "sanoma-local-development-key-change-me-in-production")
# Off unless asked: with DEBUG on, Django keeps every query of a long-running worker in memory.
DEBUG = os.environ.get("DJANGO_DEBUG", "0") == "1"
ALLOWED_HOSTS = os.environ.get("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,testserver").split(",")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "guardian",
    "django_q",
    "behave_django",
    "connectors",
    "runs",
    "changes",
    "wakeups",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "sanoma_site.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
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

DATABASES = {"default": database_entry(os.environ.get("DATABASE_URL"), VAR_DIR / "sanoma.sqlite3")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
ANONYMOUS_USER_NAME = None  # guardian: no anonymous user row

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {"TITLE": "sanoma", "VERSION": "0.1.0"}

SANOMA_ROOT = Path(os.environ.get("SANOMA_ROOT", BASE_DIR / "company")).resolve()
SANOMA_APP_VERSION = os.environ.get("SANOMA_APP_VERSION") or None
SANOMA_FAKES = os.environ.get("SANOMA_FAKES", "")
SANOMA_LEASE_SECONDS = float(os.environ.get("SANOMA_LEASE_SECONDS", "30"))
# A run segment hands its run back to the queue after this long, so no task outlives its lease.
SANOMA_SEGMENT_SECONDS = float(os.environ.get("SANOMA_SEGMENT_SECONDS", "20"))
SANOMA_SWEEP_SECONDS = float(os.environ.get("SANOMA_SWEEP_SECONDS", "0.25"))

# django-q2 is the dispatch vehicle, never the source of truth (ENGINE-NOTES 7-8): store no
# successes, ack failures (the engine owns retries), poll often, prefetch little, and keep
# `retry` above the worst dequeue-to-finish time so the broker rarely redelivers.
_TIMEOUT = int(SANOMA_SEGMENT_SECONDS * 3 + 30)
Q_CLUSTER = {
    "name": "sanoma",
    "orm": "default",
    "workers": int(os.environ.get("SANOMA_WORKERS", "2")),
    "poll": 0.05,
    "bulk": 1,
    "queue_limit": 2,
    "save_limit": -1,
    "ack_failures": True,
    "max_attempts": 1,
    "timeout": _TIMEOUT,
    "retry": _TIMEOUT * 4,
    "catch_up": False,
    "log_level": os.environ.get("SANOMA_Q_LOG_LEVEL", "WARNING"),
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "sanoma": {"handlers": ["console"], "level": os.environ.get("SANOMA_LOG_LEVEL", "INFO")},
        "django_q": {"handlers": ["console"], "level": os.environ.get("SANOMA_Q_LOG_LEVEL", "WARNING"), "propagate": False},
    },
}
