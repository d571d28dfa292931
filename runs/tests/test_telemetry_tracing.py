"""Traces: a span per advance (segment), per step it writes and per attempt of a vendor call, with
the attributes, sent to an in-memory exporter; none when tracing is off."""
from __future__ import annotations

import http.server
import threading
import urllib.request

import pytest
from django.db import connection
from django.test import Client, override_settings
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from pydantic import BaseModel

from connectors import define_connector, op, with_setup
from connectors.drivers import CallContext, define_driver
from runs.authoring import define_workflow
from runs.models import RunStatus, Step
from runs.policies import define_policy
from runs.telemetry import tracing
from runs.testing import make_user
from runs.tests.test_telemetry_metrics import METERED, PUBLISHING, decide, hold_money


@pytest.fixture
def spans():
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter, batch=False, instrument=False)
    try:
        yield exporter
    finally:
        tracing.shutdown()


def by_name(finished, prefix: str) -> list:
    return [s for s in finished if s.name.startswith(prefix)]


def test_one_span_per_step_and_per_call_with_the_attributes(engine_for, spans):
    engine = engine_for(METERED, policy=define_policy(hold_money, version="v1"))
    make_user("finance-lead")
    run = engine.run("metered")
    decide(run, "approve")
    engine.drain()
    run.refresh_from_db()
    assert run.status == RunStatus.FINISHED, run.error
    finished = spans.get_finished_spans()

    segments = by_name(finished, "segment ")
    assert len(segments) == 2  # held for the approval, then on to the end
    assert {s.attributes["sanoma.run_id"] for s in segments} == {run.id}
    assert [s.attributes["sanoma.outcome"] for s in segments] == ["waiting", "finished"]
    assert {s.attributes["sanoma.workflow"] for s in segments} == {"metered"}
    # One trace per run, across its segments: the run page's link needs nothing stored.
    assert {format(s.context.trace_id, "032x") for s in segments} == {tracing.run_trace_id(run.id)}

    steps = [s for s in by_name(finished, "step ") if s.attributes.get("sanoma.outcome") != "waiting"]
    written = list(Step.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "name"))
    assert sorted((s.attributes["sanoma.step.seq"], s.attributes["sanoma.step.kind"], s.attributes["sanoma.step.name"])
                  for s in steps) == written
    for span in finished:
        if span not in segments:
            assert "sanoma.run_id" not in span.attributes  # the run id is on the segment only
    calls = {s.attributes["sanoma.step.name"]: s for s in steps if s.attributes["sanoma.step.kind"] == "call"}
    refund = calls["acme.order.refund"]
    assert [refund.attributes[f"sanoma.{key}"] for key in ("effect", "decision", "attempt", "outcome", "operation")] \
        == ["money", "allow", 1, "ok", "acme.order.refund"]
    # The refund's step began in the first advance and waited there for the approval.
    [waited] = [s for s in by_name(finished, "step call acme.order.refund")
                if s.attributes.get("sanoma.outcome") == "waiting"]
    assert waited.parent.span_id == segments[0].context.span_id

    vendor = by_name(finished, "call ")
    assert sorted(s.attributes["sanoma.operation"] for s in vendor) == sorted(calls)  # one per vendor call
    for span in vendor:
        step = calls[span.attributes["sanoma.operation"]]
        assert span.parent.span_id == step.context.span_id  # nested in its step
        assert step.parent.span_id in {seg.context.span_id for seg in segments}
        assert span.context.trace_id == step.context.trace_id
        assert (span.attributes["sanoma.attempt"], span.attributes["sanoma.outcome"],
                span.attributes["sanoma.connector"]) == (1, "ok", "acme")


def test_a_failed_attempt_is_its_own_span_with_its_error_code(engine_for, spans):
    engine = engine_for(PUBLISHING)
    engine.fake.fail_next("acme.post.publish")
    assert engine.run("publishing").status == RunStatus.FINISHED
    attempts = by_name(spans.get_finished_spans(), "call acme.post.publish")
    assert [(s.attributes["sanoma.attempt"], s.attributes["sanoma.outcome"]) for s in attempts] == [
        (1, "driver_failed"), (2, "ok")]


def test_no_span_when_tracing_is_off(engine_for):
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter, batch=False, instrument=False)
    tracing.shutdown()
    assert not tracing.ON
    engine = engine_for(PUBLISHING)
    assert engine.run("publishing").status == RunStatus.FINISHED
    assert exporter.get_finished_spans() == ()


@pytest.mark.django_db
def test_django_requests_are_traced_when_on():
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter, batch=False, instrument=True)
    try:
        client = Client()
        client.force_login(make_user("root", superuser=True))
        assert client.get("/metrics").status_code == 200
    finally:
        tracing.shutdown()
    [request] = [s for s in exporter.get_finished_spans() if s.name.startswith("GET")]
    said = dict(request.attributes or {})
    assert said.get("http.status_code", said.get("http.response.status_code")) == 200


@pytest.mark.django_db(transaction=True)
def test_psycopg_queries_are_traced_when_on():
    if connection.vendor != "postgresql":
        pytest.skip("psycopg is PostgreSQL's driver")
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter, batch=False, instrument=True)
    try:
        connection.close()  # a connection opened while tracing is on is traced
        assert Step.objects.count() == 0
    finally:
        tracing.shutdown()
        connection.close()
    said = [dict(s.attributes or {}) for s in exporter.get_finished_spans()]
    queries = [a for a in said if "postgresql" in (a.get("db.system"), a.get("db.system.name"))]
    assert any("runs_step" in str(a.get("db.statement", a.get("db.query.text", ""))) for a in queries), said


def test_the_run_page_links_to_its_trace_when_a_template_is_set(engine_for, admin_client):
    engine = engine_for(PUBLISHING)
    run = engine.run("publishing")
    page = f"/admin/runs/run/{run.id}/change/"
    assert 'id="trace-link"' not in admin_client.get(page).content.decode()
    with override_settings(SANOMA_TRACE_URL_TEMPLATE="https://traces.example/trace/{trace_id}"):
        html = admin_client.get(page).content.decode()
    assert f'href="https://traces.example/trace/{tracing.run_trace_id(run.id)}" id="trace-link"' in html


# ---- an HTTP driver's request: a child span of its call, its context sent to the vendor --------------


class _Page(BaseModel):
    path: str = "/"


class _Fetched(BaseModel):
    status: int


web = define_connector("web", {"page": {"fetch": op(effect="read", input=_Page, output=_Fetched, idempotent=True)}})


@pytest.fixture
def vendor_server():
    """A vendor over real HTTP on a free port, keeping each request's headers."""
    seen: list[dict[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append({name.lower(): value for name, value in self.headers.items()})
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", seen
    server.shutdown()
    server.server_close()


def test_an_http_drivers_request_is_a_span_of_its_call_and_carries_the_trace(engine_for, vendor_server):
    base, seen = vendor_server

    def fetch(i: _Page, c: CallContext) -> dict:
        with urllib.request.urlopen(base + i.path, timeout=c.time_left() or 5) as reply:
            return {"status": reply.status}

    connector = with_setup(web, driver=lambda: define_driver(web, {"page": {"fetch": fetch}}))
    fetching = define_workflow(name="fetching", uses=[connector.op("web.page.fetch")],
                               run=lambda ctx, input: {"status": ctx.web.page.fetch({"path": "/orders"}).status})
    engine = engine_for(fetching, connectors=[connector])
    exporter = InMemorySpanExporter()
    tracing.configure(exporter=exporter, batch=False, instrument=True)
    try:
        run = engine.run("fetching")
    finally:
        tracing.shutdown()
    assert (run.status, run.result) == (RunStatus.FINISHED, {"status": 200}), run.error
    finished = exporter.get_finished_spans()
    [call] = by_name(finished, "call web.page.fetch")
    [request] = [s for s in finished if s.name.startswith("GET") and s.parent is not None
                 and s.parent.span_id == call.context.span_id]
    [headers] = seen
    assert headers["traceparent"].split("-")[1] == tracing.run_trace_id(run.id)  # the vendor sees the run's trace
    assert headers["traceparent"].split("-")[2] == format(request.context.span_id, "016x")
