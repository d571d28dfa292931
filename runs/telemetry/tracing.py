"""Traces with OpenTelemetry: a span per run segment (one advance), per step it writes and per
attempt of a vendor call, exported over OTLP when an endpoint is configured.

Off by default, and then free: the engine reads the module flag `ON` before calling anything here,
so an advance with tracing off does no more than one attribute read per step.

    segment <workflow>          sanoma.workflow, sanoma.run_id, sanoma.app_version, sanoma.outcome
      step <kind> <name>        sanoma.workflow, sanoma.step.kind, sanoma.step.seq, sanoma.operation,
                                sanoma.effect, sanoma.decision, sanoma.attempt, sanoma.outcome
        call <operation>        sanoma.operation, sanoma.connector, sanoma.effect, sanoma.attempt,
                                sanoma.outcome

Every segment of a run is in one trace, whose id comes from the run id (`run_trace_id`), so the
run page links to it (`SANOMA_TRACE_URL_TEMPLATE`) with nothing stored; the segments' parent is that
trace's root, which no process sends. The run id is on the segment span only. Django's requests,
psycopg's queries and urllib's requests (an HTTP driver's) are instrumented too: theirs nest under
the segment's (a driver's request inside its call's, with the trace context sent to the vendor in
a `traceparent` header), or start their own trace on the site.
"""
from __future__ import annotations

import contextvars
import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from django.conf import settings

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.trace import Span, Tracer

    from runs.models import Run, Step

log = logging.getLogger("sanoma.telemetry")

ON = False  # read by the engine before anything here is called
_T = TypeVar("_T")

_tracer: Tracer | None = None
_provider: TracerProvider | None = None
_instrumented: list[Any] = []


@dataclass
class _SegmentTrace:
    """The spans of the advance under way: its own, the steps' start times, and the steps still open."""

    span: Span
    workflow: str
    taken: dict[int, int] = field(default_factory=dict)
    open: dict[int, Span] = field(default_factory=dict)


_current: contextvars.ContextVar[_SegmentTrace | None] = contextvars.ContextVar("sanoma_segment_trace", default=None)


# ---- switching it on and off -----------------------------------------------------------------------

def configure(*, exporter: SpanExporter | None = None, batch: bool = True, instrument: bool = True) -> None:
    """Turn tracing on: spans go to `exporter` (by default OTLP over HTTP to `SANOMA_OTLP_ENDPOINT`,
    or OpenTelemetry's own `OTEL_EXPORTER_OTLP_*` variables), in batches unless `batch` is False.
    With `instrument`, Django's requests and psycopg's queries get spans too."""
    global ON, _tracer, _provider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor

    shutdown()
    if exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=settings.SANOMA_OTLP_ENDPOINT or None)
    provider = TracerProvider(resource=Resource.create({"service.name": settings.SANOMA_TRACE_SERVICE}))
    provider.add_span_processor(BatchSpanProcessor(exporter) if batch else SimpleSpanProcessor(exporter))
    _provider, _tracer = provider, provider.get_tracer("sanoma")
    if instrument:
        _instrument(provider)
    ON = True


def configure_from_settings() -> None:
    """At start (the site's app is ready): on when an OTLP endpoint is configured."""
    if settings.SANOMA_TRACING and not ON:
        configure()
        log.info("tracing on: spans go over OTLP (%s)", settings.SANOMA_OTLP_ENDPOINT or "OTEL_EXPORTER_OTLP_*")


def shutdown() -> None:
    """Turn tracing off, sending what is left; the instrumentation is taken off too."""
    global ON, _tracer, _provider
    ON = False
    for instrumentor in _instrumented:
        instrumentor.uninstrument()
    _instrumented.clear()
    if _provider is not None:
        _provider.shutdown()
    _tracer = _provider = None


def _instrument(provider: TracerProvider) -> None:
    from opentelemetry.instrumentation.django import DjangoInstrumentor
    from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
    from opentelemetry.instrumentation.urllib import URLLibInstrumentor

    # urllib: the HTTP drivers' requests (the example shop's) as client spans carrying `traceparent`.
    for instrumentor in (DjangoInstrumentor(), PsycopgInstrumentor(), URLLibInstrumentor()):
        if not instrumentor.is_instrumented_by_opentelemetry:
            instrumentor.instrument(tracer_provider=provider)
            _instrumented.append(instrumentor)


def flush() -> None:
    if _provider is not None:
        _provider.force_flush()


def run_trace_id(run_id: str) -> str:
    """The trace id of every segment of a run (32 hex): one trace per run, whatever worker advances it."""
    return hashlib.sha256(f"sanoma-run:{run_id}".encode()).hexdigest()[:32]


def _run_parent(run_id: str) -> Any:
    """The context every segment of a run starts from: a remote parent in the run's own trace."""
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags, set_span_in_context

    root = int(hashlib.sha256(f"sanoma-run-root:{run_id}".encode()).hexdigest()[:16], 16) or 1
    return set_span_in_context(NonRecordingSpan(SpanContext(
        trace_id=int(run_trace_id(run_id), 16), span_id=root, is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED))))


def trace_url(trace_id: str) -> str | None:
    """The link to a trace (`SANOMA_TRACE_URL_TEMPLATE` with `{trace_id}`), or None when no template is set."""
    template = settings.SANOMA_TRACE_URL_TEMPLATE
    return template.replace("{trace_id}", trace_id) if template and trace_id else None


# ---- what the engine calls when ON -----------------------------------------------------------------

def segment(run: Run, body: Callable[[], _T]) -> _T:
    """Run one advance's `body` under its segment span; its answer becomes `sanoma.outcome`."""
    assert _tracer is not None
    from opentelemetry.trace import SpanKind

    with _tracer.start_as_current_span(f"segment {run.workflow}", context=_run_parent(run.pk), kind=SpanKind.INTERNAL,
                                       attributes={
        "sanoma.workflow": run.workflow, "sanoma.run_id": run.pk, "sanoma.app_version": run.app_version,
    }) as span:
        state = _SegmentTrace(span=span, workflow=run.workflow)
        token = _current.set(state)
        try:
            outcome = body()
            span.set_attribute("sanoma.outcome", str(outcome))
            return outcome
        finally:
            for seq, open_span in state.open.items():  # a step that did not end in this advance: it waits
                open_span.set_attribute("sanoma.outcome", "waiting")
                open_span.set_attribute("sanoma.step.seq", seq)
                open_span.end()
            _current.reset(token)


def step_taken(seq: int) -> None:
    """The body reached step `seq`: its span, if it is written, starts now."""
    state = _current.get()
    if state is not None:
        state.taken[seq] = time.time_ns()


def call_step(seq: int, op: Any) -> None:
    """A call step begins (not replayed): its span opens now, so its attempts nest in it."""
    state = _current.get()
    if state is None or _tracer is None:
        return
    from opentelemetry.trace import set_span_in_context

    state.open[seq] = _tracer.start_span(f"step call {op.id}", context=set_span_in_context(state.span),
                                         start_time=state.taken.pop(seq, None), attributes={
        "sanoma.workflow": state.workflow, "sanoma.step.kind": "call", "sanoma.operation": op.id,
        "sanoma.effect": str(op.effect),
    })


def step_written(step: Step) -> None:
    """A step's checkpoint committed: its span ends (or is made, from when the body reached it)."""
    state = _current.get()
    if state is None or _tracer is None:
        return
    from opentelemetry.trace import StatusCode, set_span_in_context

    span = state.open.pop(step.seq, None)
    if span is None:
        span = _tracer.start_span(f"step {step.kind} {step.name}".rstrip(), context=set_span_in_context(state.span),
                                  start_time=state.taken.pop(step.seq, None),
                                  attributes={"sanoma.workflow": state.workflow, "sanoma.step.kind": step.kind})
    span.set_attribute("sanoma.step.seq", step.seq)
    if step.name:
        span.set_attribute("sanoma.step.name", step.name)
    if step.kind == "call":
        span.set_attribute("sanoma.attempt", step.attempt)
        if isinstance(step.decision, dict) and step.decision.get("kind"):
            span.set_attribute("sanoma.decision", str(step.decision["kind"]))
    if step.error is not None:
        code = step.error.get("code") if isinstance(step.error, dict) else None
        span.set_attribute("sanoma.outcome", str(code or "error"))
        span.set_status(StatusCode.ERROR)
    else:
        span.set_attribute("sanoma.outcome", "ok")
    span.end()


def call(seq: int, op: Any, attempt: int, body: Callable[[], _T]) -> _T:
    """One attempt of a vendor call, as a client span inside its step's."""
    assert _tracer is not None
    from opentelemetry.trace import SpanKind, StatusCode, set_span_in_context

    state = _current.get()
    parent = state.open.get(seq) if state is not None else None
    context = set_span_in_context(parent) if parent is not None else None
    with _tracer.start_as_current_span(f"call {op.id}", context=context, kind=SpanKind.CLIENT,
                                       record_exception=False, set_status_on_exception=False, attributes={
        "sanoma.operation": op.id, "sanoma.connector": op.vendor, "sanoma.effect": str(op.effect),
        "sanoma.attempt": attempt,
    }) as span:
        try:
            reply = body()
        except BaseException as err:
            span.set_attribute("sanoma.outcome", str(getattr(err, "code", None) or type(err).__name__))
            span.set_status(StatusCode.ERROR)  # no message: it may quote the input
            raise
        span.set_attribute("sanoma.outcome", "ok")
        return reply

