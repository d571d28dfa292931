"""Direct calls with one key sent at once from several threads (each its own database connection,
as several web processes would be): one run, one vendor call, every caller the same answer.
On SQLite (a file) and on PostgreSQL."""
from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from django.db import connection

from runs.direct_calls import call
from runs.models import Run

pytestmark = pytest.mark.django_db(transaction=True)

MAIL = {"to": "bob", "text": "your order shipped"}


def in_threads(count: int, start: threading.Barrier | None = None) -> tuple[list[threading.Thread], list[Any]]:
    answers: list[Any] = []

    def one() -> None:
        try:
            if start is not None:
                start.wait(timeout=30)
            answers.append(call(op="acme.mail.send", input=MAIL, by="alice", key="mail-once"))
        except BaseException as err:  # judged by the test
            answers.append(err)
        finally:
            connection.close()

    threads = [threading.Thread(target=one, daemon=True) for _ in range(count)]
    return threads, answers


def test_callers_racing_with_one_key_make_one_vendor_call(engine_for):
    engine = engine_for()
    threads, answers = in_threads(4, threading.Barrier(4))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(answers) == 4 and all(not isinstance(a, BaseException) for a in answers), answers
    assert {a.outcome for a in answers} == {"made"}
    assert {a.run_id for a in answers} == {"call-mail-once"}
    assert sorted(a.repeated for a in answers) == [False, True, True, True]
    assert {str(a.output) for a in answers} == {str({"id": "m1"})}
    assert len(engine.fake.calls) == 1 and engine.fake.state["mail"] == [MAIL]
    assert Run.objects.filter(workflow="call").count() == 1


def test_a_repeat_while_the_first_call_is_at_the_vendor_waits_for_its_answer(engine_for):
    engine = engine_for()
    release = engine.fake.hold("acme.mail.send")
    first, first_answer = in_threads(1)
    first[0].start()
    deadline = time.monotonic() + 30
    while not Run.objects.filter(pk="call-mail-once", status="running").exists():
        assert time.monotonic() < deadline, "the first call never reached the vendor"
        time.sleep(0.02)
    repeats, repeat_answers = in_threads(2)
    for thread in repeats:
        thread.start()
    time.sleep(0.3)  # the repeats find the run held by the first caller, and wait for it
    assert repeat_answers == [] and engine.fake.state["mail"] == []
    release()
    for thread in (*first, *repeats):
        thread.join(timeout=60)
    answers = first_answer + repeat_answers
    assert all(not isinstance(a, BaseException) for a in answers), answers
    assert [a.outcome for a in answers] == ["made"] * 3
    assert [a.repeated for a in answers] == [False, True, True]
    assert len(engine.fake.calls) == 1
