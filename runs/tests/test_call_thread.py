"""Which thread carries a call: a pool thread with a deadline only when the call may outlast it.

An in-memory fake with nothing held answers at once, on the worker's thread; a held fake call, a
file-backed fake and a real driver go to a pool thread, abandoned at their deadline.
"""
from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from connectors import CallContext, define_connector, op
from connectors.drivers import define_driver
from connectors.errors import DriverTimeout
from connectors.fakes import define_fake
from runs.engine import calling


class In(BaseModel):
    n: int = 0


class Out(BaseModel):
    thread: str


vendor = define_connector("threads", {"thing": {"do": op(effect="write", input=In, output=Out)}})
DO = vendor.operations["threads.thing.do"]


def _where(state: dict, i: In, c: CallContext) -> dict:
    return {"thread": threading.current_thread().name}


def _context() -> CallContext:
    return CallContext(idempotency_key="r:1", run_id="r", op_id=DO.id, timeout=5.0)


def test_an_in_memory_fake_answers_on_the_callers_thread():
    fake = define_fake(vendor, initial=dict, ops={"thing": {"do": _where}})
    assert fake.driver.answers_inline(DO.id)
    reply = calling.invoke(fake.driver, DO, In(), _context(), 5.0)
    assert reply["thread"] == threading.current_thread().name


def test_a_held_fake_call_goes_to_a_pool_thread_and_is_abandoned_at_its_deadline():
    fake = define_fake(vendor, initial=dict, ops={"thing": {"do": _where}})
    release = fake.hold(DO.id)
    assert not fake.driver.answers_inline(DO.id)
    try:
        with pytest.raises(DriverTimeout, match="did not answer within 0.05 s"):
            calling.invoke(fake.driver, DO, In(), _context(), 0.05)
    finally:
        release()
    assert fake.driver.answers_inline(DO.id)  # the hold was taken by that call


def test_a_file_backed_fake_goes_to_a_pool_thread(tmp_path):
    fake = define_fake(vendor, initial=dict, ops={"thing": {"do": _where}}, file=tmp_path / "threads.json")
    assert not fake.driver.answers_inline(DO.id)
    reply = calling.invoke(fake.driver, DO, In(), _context(), 5.0)
    assert reply["thread"].startswith("sanoma-call")


def test_a_real_driver_goes_to_a_pool_thread():
    driver = define_driver(vendor, {"thing": {"do": lambda i, c: {"thread": threading.current_thread().name}}})
    assert not driver.answers_inline(DO.id)
    reply = calling.invoke(driver, DO, In(), _context(), 5.0)
    assert reply["thread"].startswith("sanoma-call")
