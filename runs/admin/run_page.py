"""A run's page as one snapshot: the run read once, and everything the page says derived from it.

A page that read the run twice could say two things at once: right after Start, a run that failed
fast showed "Failed" in its status beside "Running on ..." and a Cancel button. So the run is read
once per request (`RunAdmin.get_object` keeps what it read for the rest of the request), and the
page's other reads (its ledger, its approvals) happen inside `one_snapshot`, which makes every
read see the database at one moment: a REPEATABLE READ transaction on PostgreSQL, a read
transaction on SQLite (WAL readers see the database as of their first read). The status line,
the buttons, the breadcrumb, the title and the picture are all derived from those reads.
"""
from __future__ import annotations

import difflib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.contrib.admin.utils import quote
from django.db import connection, transaction
from django.urls import reverse
from django.utils.http import urlencode

from runs import ledger
from runs.admin.graph import graph_of
from runs.admin.now import cancellation, sentence
from runs.admin.timeline import timeline_rows
from runs.admin.waterfall import open_message_wait, waterfall
from runs.approvals.permissions import Principal, can_operate, can_rerun, can_send_message
from runs.approvals.selectors import states_of
from runs.direct_calls.workflow import CALL_WORKFLOW
from runs.engine import clock
from runs.expected_messages import expected_messages, payload_skeleton
from runs.models import Run, RunStatus
from runs.sandbox.selectors import sandbox_data, sandbox_of
from runs.telemetry import tracing
from runs.timing import run_time


@contextmanager
def one_snapshot() -> Iterator[None]:
    """Every read inside sees the database at one moment, and nothing inside writes. Inside a
    transaction already begun (a test's), the reads see that transaction, as they would anyway."""
    if connection.in_atomic_block:
        yield
        return
    if connection.vendor == "sqlite":
        # The site's SQLite transactions begin IMMEDIATE, taking the write lock: a page read that
        # way would hold every worker off while it renders. A DEFERRED one only reads: in WAL mode
        # it sees the database as of its first read, and writers go on meanwhile.
        connection.ensure_connection()
        mode = connection.transaction_mode  # type: ignore[attr-defined]
        connection.transaction_mode = "DEFERRED"  # type: ignore[attr-defined]
        try:
            with transaction.atomic():
                connection.transaction_mode = mode  # type: ignore[attr-defined]  # only its BEGIN needed it
                yield
        finally:
            connection.transaction_mode = mode  # type: ignore[attr-defined]
        return
    with transaction.atomic():
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:  # the first statement of the transaction, as it must be
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


def run_urls(run: Run) -> dict[str, str]:
    key = quote(run.pk)
    return {
        "rerun_url": reverse("admin:runs_run_rerun", args=[key]),
        "message_url": reverse("admin:runs_run_message", args=[key]),
        "in_doubt_url": reverse("admin:runs_run_in_doubt", args=[key]),
        "fork_url": reverse("admin:runs_run_fork", args=[key]),
        "cancel_url": reverse("admin:runs_run_cancel", args=[key]),
        "compare_url": reverse("admin:runs_run_compare", args=[key]),
        "ledger_list_url": reverse("admin:runs_ledgerrecord_changelist") + "?" + urlencode({"run_id": run.id}),
    }


def message_form(run: Run, topic: str = "") -> dict[str, Any]:
    """The *Send a message* form's help: the topics the run waits on (`expected`), the one to
    prefill (the one it waits on now, else the only one known), and a payload to start from."""
    expected = expected_messages(run)
    first = next((e for e in expected if e["waiting"]), expected[0] if len(expected) == 1 else None)
    chosen = next((e for e in expected if e["topic"] == topic), None) if topic else first
    return {"expected": expected, "topic_prefill": first["topic"] if first else "",
            "payload_prefill": json.dumps(payload_skeleton(chosen["fields"])) if chosen else "{}"}


def unread_topic(run: Run, topic: str) -> str:
    """Said after a message is sent on a topic the run does not wait for now (the message is kept:
    a later wait on that topic reads it): which topic it waits for, and the one meant when the typed
    one is close to it (`shiped`: did you mean `shipped`?). Empty when it waits for this topic, or
    for no message."""
    waiting = [e["topic"] for e in expected_messages(run) if e["waiting"]]
    if not waiting or topic in waiting:
        return ""
    close = difflib.get_close_matches(topic, [e["topic"] for e in expected_messages(run)], n=1, cutoff=0.6)
    meant = f" Did you mean “{close[0]}”?" if close else ""
    return (f"The run waits for a message on “{waiting[0]}”: it will not read “{topic}” now (the message is "
            f"kept, for a later wait on “{topic}”).{meant}")


def page_context(*, run: Run, viewer: Principal, live_seconds: int) -> dict[str, Any]:
    """What the run page shows besides the run's fields, all from `run` (read once, by the caller,
    who has checked that `viewer` may see it) and reads made in the same snapshot."""
    records = ledger.records_of(run.id)
    approvals = states_of(run)
    direct = run.workflow == CALL_WORKFLOW
    may_message = not run.ended and not direct and can_send_message(viewer, run)
    return {
        **run_urls(run),
        "live": None if run.ended else live_seconds,
        "ledger_rows": timeline_rows(records),
        "graph": graph_of(records, ended=run.ended),
        "waterfall": waterfall(run_time(records, waiting=open_message_wait(run)), now_ms=clock.now_ms()),
        "now": sentence(run, approvals, cancelled=cancellation(records)),
        "run_ended": run.ended,
        "may_cancel": not run.ended and can_operate(viewer, run),
        "may_rerun": run.status == RunStatus.FAILED and can_rerun(viewer),
        # A direct call is one operation: it reads no messages, and forking it from its one step is a rerun.
        "may_fork": run.ended and can_rerun(viewer) and not direct,
        "may_message": may_message,
        **(message_form(run) if may_message else {}),
        "direct_call": direct,
        "in_doubt": run.status == RunStatus.WAITING and run.waiting_for == "in_doubt",
        "trace_url": tracing.trace_url(tracing.run_trace_id(run.pk)),
        # A sandbox run: its scenario, and its checks once it has ended (see `RunAdmin.change_view`).
        "sandbox": sandbox_data(sandbox_of(run)),
    }
