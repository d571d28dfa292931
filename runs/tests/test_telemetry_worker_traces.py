"""A real worker process with tracing on sends its spans over OTLP/HTTP to a local receiver (a
real HTTP server in this test, decoding what arrives as OpenTelemetry's protobuf): the run's
segment, its steps and its vendor calls, in the run's trace."""
from __future__ import annotations

import http.server
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.db import connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from runs.models import Run, Step
from runs.telemetry import tracing
from runs.testing import make_user
from runs.tests.processes import REPO, Worker, database_url, worker_env

pytestmark = [pytest.mark.process, pytest.mark.django_db(transaction=True)]

HANG = 120.0  # only turns a hang into a failure


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """An OTLP/HTTP traces endpoint: every span it is sent, as a dict of its name, ids and attributes."""
    spans: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            request = ExportTraceServiceRequest()
            request.ParseFromString(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            for resource in request.resource_spans:
                service = {a.key: a.value.string_value for a in resource.resource.attributes}.get("service.name")
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        attributes = {a.key: (a.value.string_value or a.value.int_value) for a in span.attributes}
                        spans.append({"name": span.name, "trace_id": span.trace_id.hex(), "span_id": span.span_id.hex(),
                                      "parent": span.parent_span_id.hex(), "service": service, **attributes})
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/traces", spans
    server.shutdown()
    server.server_close()


def test_a_worker_sends_the_runs_spans_to_the_otlp_endpoint(receiver, tmp_path: Path):
    endpoint, spans = receiver
    make_user("alice", groups=["staff"], perms=["runs.start_workflow"])
    make_user("finance-lead", groups=["staff", "finance"])
    env = worker_env(db_url=database_url(connection.settings_dict), var_dir=tmp_path / "var", version="traced",
                     root=REPO / "company", SANOMA_WORKERS=1, SANOMA_OTLP_ENDPOINT=endpoint,
                     SANOMA_TRACE_SERVICE="sanoma-worker", OTEL_BSP_SCHEDULE_DELAY="200")
    worker = Worker(env, tmp_path / "worker.log").start(ready_within=HANG)
    try:
        assert "tracing on: spans go over OTLP" in worker.output()
        start = subprocess.run(
            [sys.executable, "manage.py", "start", "refund", "--as", "alice", "--set", "order_id=1001",
             "--set", "amount_cents=1500"], cwd=REPO, env={**env, "SANOMA_OTLP_ENDPOINT": ""},
            capture_output=True, text=True, timeout=HANG)
        assert start.returncode == 0, start.stdout + start.stderr
        run = worker.wait_for(lambda: Run.objects.filter(workflow="refund", status="waiting").first(), within=HANG,
                              what="the refund to wait for its approval")
        worker.wait_for(lambda: any(s.get("sanoma.run_id") == run.id for s in spans), within=HANG,
                        what="the segment's span at the receiver")
    finally:
        worker.terminate()
    [segment] = [s for s in spans if s.get("sanoma.run_id") == run.id]
    assert (segment["name"], segment["sanoma.outcome"], segment["service"]) == ("segment refund", "waiting",
                                                                                 "sanoma-worker")
    assert segment["trace_id"] == tracing.run_trace_id(run.id)
    steps = {s["sanoma.step.seq"]: s for s in spans if s["name"].startswith("step ")
             and s["trace_id"] == segment["trace_id"] and s.get("sanoma.outcome") != "waiting"}
    written = list(Step.objects.filter(run=run).order_by("seq").values_list("seq", "kind"))
    assert written and [(seq, steps[seq]["sanoma.step.kind"]) for seq, _ in written] == written
    calls = [s for s in spans if s["name"].startswith("call ") and s["trace_id"] == segment["trace_id"]]
    call_steps = {s["span_id"] for s in steps.values() if s["sanoma.step.kind"] == "call"}
    assert len(calls) == len(call_steps) and {c["parent"] for c in calls} == call_steps
