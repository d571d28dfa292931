"""What a process writes to stderr: request errors always, as JSON lines when asked."""
from __future__ import annotations

import json
import logging
import sys

from sanoma_site.logging import JsonFormatter
from sanoma_site.tests.support import manage

# Run by `manage.py shell -c`: a run's log line, a plain one, a 404 and a view that raises (a 500).
SCRIPT = """
import logging, sys, types
from django.http import HttpResponse
from django.test import Client, override_settings
from django.urls import path

def boom(request):
    raise RuntimeError("the view broke")

urls = types.ModuleType("boom_urls")
urls.urlpatterns = [path("boom/", boom)]
sys.modules["boom_urls"] = urls
logging.getLogger("sanoma.engine").info("run %s failed: %s", "r-42", "no stock", extra={"run_id": "r-42"})
logging.getLogger("sanoma.sweep").info("swept")
logging.getLogger("sanoma.engine").debug("not shown at INFO")
logging.getLogger().setLevel(logging.DEBUG)  # as behave's log capture does
logging.getLogger("httpx").info("HTTP Request: GET https://api.github.com/orgs/acme")
with override_settings(ROOT_URLCONF="boom_urls"):
    client = Client(raise_request_exception=False)
    assert client.get("/nowhere/").status_code == 404
    assert client.get("/boom/").status_code == 500
"""


def test_json_format_writes_one_object_per_line_with_the_run_id(tmp_path):
    done = manage("shell", "-c", SCRIPT, SANOMA_VAR_DIR=str(tmp_path), SANOMA_LOG_FORMAT="json")
    assert done.returncode == 0, done.stderr
    entries = [json.loads(line) for line in done.stderr.splitlines()]  # every line is one JSON object
    by_message = {entry["message"]: entry for entry in entries}

    run = by_message["run r-42 failed: no stock"]
    assert (run["level"], run["logger"], run["run_id"]) == ("INFO", "sanoma.engine", "r-42")
    assert run["time"].endswith("+00:00") and "T" in run["time"]
    assert "run_id" not in by_message["swept"]
    assert "not shown at INFO" not in by_message

    missing = by_message["Not Found: /nowhere/"]
    assert (missing["level"], missing["logger"], missing["status_code"]) == ("WARNING", "django.request", 404)
    error = by_message["Internal Server Error: /boom/"]
    assert (error["level"], error["logger"], error["status_code"]) == ("ERROR", "django.request", 500)
    assert "RuntimeError: the view broke" in error["exception"]
    assert "request" not in error  # an object, not a value


def test_plain_format_logs_a_server_error_with_its_traceback(tmp_path):
    done = manage("shell", "-c", SCRIPT, SANOMA_VAR_DIR=str(tmp_path))
    assert done.returncode == 0, done.stderr
    assert " ERROR django.request: Internal Server Error: /boom/" in done.stderr
    assert "RuntimeError: the view broke" in done.stderr
    assert " INFO sanoma.engine: run r-42 failed: no stock" in done.stderr
    assert "HTTP Request" not in done.stderr  # the vendors' client logs each request at INFO: kept out


def test_a_record_with_an_exception_and_an_object_stays_one_json_line():
    try:
        raise ValueError("bad\nvalue")
    except ValueError:
        record = logging.LogRecord("sanoma.api", logging.ERROR, __file__, 1, "failed %s", ("x",), sys.exc_info())
    record.run_id = 7
    record.connection = object()
    line = JsonFormatter().format(record)
    assert "\n" not in line
    entry = json.loads(line)
    assert (entry["message"], entry["run_id"]) == ("failed x", 7)
    assert "ValueError: bad\nvalue" in entry["exception"]
    assert "connection" not in entry
