"""The site under real HTTP servers, reached with a real HTTP client: `manage.py runserver` (for
development) and gunicorn as the deployment guide runs it (docs/guides/deploying/web.md).

Both servers run as processes on the test database (so they see the user and token made here)
on a free port; every request goes over a socket through `http.client`.
"""
from __future__ import annotations

import http.client
import json
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from runs.testing import make_user
from runs.tests.processes import REPO, database_url, worker_env

pytestmark = pytest.mark.process

LIMIT = 2000  # SANOMA_MAX_BODY_BYTES of the servers started here
GUNICORN = Path(sys.executable).parent / "gunicorn"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """A server process on a port; its output is kept in a file to show when something fails."""

    def __init__(self, argv: list[str], env: dict[str, str], port: int, log: Path) -> None:
        self.port, self.log = port, log
        self._out = log.open("wb")
        self.process = subprocess.Popen(argv, cwd=REPO, env=env, stdout=self._out, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        ends = time.monotonic() + 30  # only turns a hang into a failure
        while time.monotonic() < ends:
            if self.process.poll() is not None:
                raise AssertionError(f"the server stopped ({self.process.returncode}):\n{self.output()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        self.stop()
        raise AssertionError(f"the server did not listen on {port} within 30 s:\n{self.output()}")

    def output(self) -> str:
        self._out.flush()
        return self.log.read_text(errors="replace")[-4000:]

    def connect(self) -> http.client.HTTPConnection:
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._out.close()
        return int(self.process.returncode)


def ask(conn: http.client.HTTPConnection, method: str, path: str, body: bytes | None = None,
        headers: dict[str, str] | None = None) -> tuple[int, http.client.HTTPResponse, bytes]:
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    return response.status, response, response.read()


@pytest.fixture
def token(transactional_db: Any) -> str:
    return str(Token.objects.create(user=make_user("alice")).key)


@pytest.fixture
def server_env(transactional_db: Any, tmp_path: Path) -> dict[str, str]:
    return worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="",
                      root=settings.SANOMA_ROOT, SANOMA_MAX_BODY_BYTES=LIMIT)


@pytest.fixture
def runserver(server_env: dict[str, str], tmp_path: Path) -> Iterator[Server]:
    port = _free_port()
    server = Server([sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"], server_env,
                    port, tmp_path / "runserver.log")
    yield server
    server.stop()


@pytest.fixture
def gunicorn(server_env: dict[str, str], tmp_path: Path) -> Iterator[Server]:
    """As the deployment guide starts it: the production profile, behind a proxy that ends TLS
    (here: the client sends the proxy's X-Forwarded-Proto), one worker process to spare the machine."""
    env = dict(server_env, DJANGO_ENV="production", DJANGO_SECRET_KEY=secrets.token_urlsafe(50),
               DJANGO_ALLOWED_HOSTS="127.0.0.1", SANOMA_SITE_URL="https://127.0.0.1",
               DJANGO_SECURE_PROXY_SSL_HEADER="1", WEB_CONCURRENCY="1")
    port = _free_port()
    server = Server([str(GUNICORN), "-c", "sanoma_site/gunicorn.conf.py", "--bind", f"127.0.0.1:{port}"], env, port,
                    tmp_path / "gunicorn.log")
    yield server
    server.stop()


def _refuses_the_oversized_body(server: Server, headers: dict[str, str]) -> None:
    conn = server.connect()
    status, response, body = ask(conn, "POST", "/api/runs", b'{"workflow": "' + b"x" * LIMIT + b'"}',
                                 {"Content-Type": "application/json", **headers})
    assert status == 413, (status, body[:500], server.output())
    assert response.getheader("Content-Type") == "application/json"
    assert json.loads(body) == {"error": f"The body is {LIMIT + 16} bytes; the limit is {LIMIT} bytes "
                                         "(SANOMA_MAX_BODY_BYTES)", "code": "too_large"}
    # The server read past the body it refused: the same connection carries the next request.
    status, response, body = ask(conn, "GET", "/api/runs", headers=headers)
    assert status in (401, 403), (status, body[:500])
    assert "error" in json.loads(body)
    conn.close()


def test_runserver_refuses_an_oversized_body_with_413(runserver: Server):
    _refuses_the_oversized_body(runserver, {})
    # A body within the limit still goes through to the API.
    status, _, body = ask(runserver.connect(), "POST", "/api/runs", b'{"workflow": "x"}',
                          {"Content-Type": "application/json"})
    assert status in (401, 403), (status, body[:500])


def test_gunicorn_serves_the_desk_and_the_api_and_refuses_an_oversized_body(gunicorn: Server, token: str):
    proxy = {"X-Forwarded-Proto": "https"}
    conn = gunicorn.connect()
    status, response, body = ask(conn, "GET", "/admin/login/", headers=proxy)
    assert status == 200, (status, body[:500], gunicorn.output())
    assert b'name="csrfmiddlewaretoken"' in body and b'name="password"' in body
    assert response.getheader("Strict-Transport-Security", "").startswith("max-age=")

    status, _, body = ask(conn, "GET", "/api/runs", headers={**proxy, "Authorization": f"Token {token}"})
    assert status == 200, (status, body[:500], gunicorn.output())
    assert json.loads(body)["results"] == []
    # Without the proxy's word the production profile sends plain http to https.
    status, response, _ = ask(conn, "GET", "/api/runs")
    assert status == 301 and response.getheader("Location", "").startswith("https://")
    conn.close()

    _refuses_the_oversized_body(gunicorn, proxy)
    # SIGTERM: the graceful stop, with nothing in flight, is quick and clean.
    started = time.monotonic()
    assert gunicorn.stop() == 0, gunicorn.output()
    assert time.monotonic() - started < 10
