"""Logging: every record to stderr, as a plain line or (SANOMA_LOG_FORMAT=json) one JSON object a line.

A record about a run carries its id as an attribute: `log.info("run %s failed", run_id,
extra={"run_id": run_id})`; the JSON line then has a `run_id` field to filter on.
"""
from __future__ import annotations

import json
import logging
from datetime import UTC, datetime
from typing import Any

PLAIN_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# What every LogRecord has; any other attribute came from `extra=` (Django's django.request adds
# status_code and request, for instance).
_RECORD_ATTRIBUTES = frozenset(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """A record as one JSON object: time (UTC, ISO 8601), level, logger, message, and when present
    run_id, other plain `extra=` values, and the exception's traceback as one string."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, tz=UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        run_id = getattr(record, "run_id", None)
        if run_id is not None:
            entry["run_id"] = run_id if isinstance(run_id, (str, int)) else str(run_id)
        for key, value in vars(record).items():
            # Objects (a request, a connection) are left out: their text is not a value to query.
            if key not in _RECORD_ATTRIBUTES and key not in entry and isinstance(value, (str, int, float, bool)):
                entry[key] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            entry["stack"] = self.formatStack(record.stack_info)
        return json.dumps(entry, ensure_ascii=False, default=str)


def logging_config(*, log_format: str, sanoma_level: int, q_level: int, django_level: int) -> dict[str, Any]:
    """The LOGGING setting: one stderr handler on the root logger, levels per logger family.

    Loggers propagate to the root rather than holding handlers of their own, so nothing is written
    twice and pytest's caplog sees every record.
    """
    formatter: dict[str, Any] = {"()": JsonFormatter} if log_format == "json" else {"format": PLAIN_FORMAT}
    loggers: dict[str, dict[str, Any]] = {
        "sanoma": {"level": sanoma_level},
        # Replaces Django's defaults (a console only when DEBUG is on, mail to ADMINS otherwise), so
        # django.request's errors (every 500, with its traceback) reach stderr in production.
        "django": {"handlers": [], "level": django_level, "propagate": True},
        # django-q2 logs as "django-q"; with a handler above it, it adds no handler of its own.
        "django-q": {"level": q_level},
        # The vendors' HTTP client logs each request at INFO; behave's log capture lowers the root
        # level, so without this its output (and a scenario's, on a fake's local transport) fills
        # with request lines.
        "httpx": {"level": "WARNING"},
        "httpcore": {"level": "WARNING"},
    }
    if log_format == "json":
        # runserver's request lines have their own handler by default; in JSON they come here too.
        loggers["django.server"] = {"handlers": ["stderr"], "level": "INFO", "propagate": False}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"main": formatter},
        "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "main", "stream": "ext://sys.stderr"}},
        "root": {"handlers": ["stderr"], "level": "WARNING"},
        "loggers": loggers,
    }
