"""`with_setup` attaches a connector's halves to the connector itself, and refuses each misuse with
the fix in its message; `DriverError` reads `retryable` from the HTTP status when it is not given."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from pydantic import BaseModel

from runs.authoring import (
    CallContext,
    DriverError,
    SanomaConfig,
    define_connector,
    define_driver,
    define_fake,
    op,
    with_setup,
)
from runs.config.resolution import resolve_config


class Ping(BaseModel):
    n: int = 0


def pinger():
    return define_connector("pinger", {"ping": {"send": op(effect="send", input=Ping, output=Ping)}})


def test_the_halves_attach_to_the_connector_itself_so_a_bare_call_is_enough():
    vendor = pinger()

    def make_driver():
        return define_driver(vendor, {"ping": {"send": lambda i, c: {"n": i.n}}})

    def make_fake(file: Path | None = None):
        return define_fake(vendor, ops={"ping": {"send": lambda state, i, c: {"n": i.n + 1}}}, file=file)

    with_setup(vendor, driver=make_driver, fake=make_fake)  # the result need not be kept
    assert vendor.driver is make_driver and vendor.fake is make_fake
    assert with_setup(vendor, driver=make_driver) is vendor  # the same half again changes nothing
    on_fakes = resolve_config(SanomaConfig(connectors=[vendor]), fakes="instance")
    real = resolve_config(SanomaConfig(connectors=[vendor]))
    context = CallContext(idempotency_key="r:1", run_id="r", op_id="pinger.ping.send")
    assert on_fakes.drivers["pinger.ping.send"].call("pinger.ping.send", Ping(n=1), context) == {"n": 2}
    assert real.drivers["pinger.ping.send"].call("pinger.ping.send", Ping(n=1), context) == {"n": 1}


def test_a_second_different_half_is_refused_naming_the_fix():
    vendor = with_setup(pinger(), fake=lambda file: define_fake(vendor, ops={"ping": {"send": lambda s, i, c: {}}}))
    with pytest.raises(ValueError) as refused:
        with_setup(vendor, fake=lambda file: None)
    assert str(refused.value) == (
        "connector pinger already has a fake (test_a_second_different_half_is_refused_naming_the_fix.<locals>."
        "<lambda>): with_setup attaches halves to the connector itself, once each, so call it once with every "
        "half; for another connector with another fake (in a test), copy it first: "
        "dataclasses.replace(pinger, fake=...)")
    other = dataclasses.replace(vendor, fake=None)
    assert with_setup(other, fake=lambda file: None) is other and vendor.fake is not other.fake


def test_the_half_itself_given_instead_of_its_maker_is_refused_naming_the_fix():
    vendor = pinger()
    driver = define_driver(vendor, {"ping": {"send": lambda i, c: {"n": 0}}})
    with pytest.raises(TypeError) as refused:
        with_setup(vendor, driver=driver)  # type: ignore[arg-type]
    assert str(refused.value) == (
        "with_setup(pinger, driver=...) takes the function that makes the driver, not a Driver: the runtime makes "
        "it when it needs it (write `def make_driver(): return define_driver(pinger, {...})` and pass "
        "driver=make_driver)")
    fake = define_fake(vendor, ops={"ping": {"send": lambda s, i, c: {"n": 0}}})
    with pytest.raises(TypeError, match=r"takes the function that makes the fake, not a Fake: .*write `def "
                                        r"make_fake\(file=None\): return define_fake\(pinger, initial=\.\.\., "
                                        r"file=file\)` and pass fake=make_fake"):
        with_setup(vendor, fake=fake)  # type: ignore[arg-type]
    assert vendor.driver is None and vendor.fake is None  # nothing attached


def test_a_maker_of_the_wrong_shape_is_refused_naming_what_the_runtime_calls_it_with():
    vendor = pinger()

    def make_fake():
        return None

    with pytest.raises(TypeError, match=r"make_fake must take the fake's state file \(a Path, or None in memory\), "
                                        r"as the runtime calls it"):
        with_setup(vendor, fake=make_fake)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="must take no arguments"):
        with_setup(vendor, driver=lambda needed: None)  # type: ignore[arg-type,misc]
    with pytest.raises(TypeError, match="with_setup takes the connector first"):
        with_setup("pinger", driver=lambda: None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"takes a function; got str"):
        with_setup(vendor, driver="make_driver")  # type: ignore[arg-type]
    assert vendor.driver is None and vendor.fake is None


@pytest.mark.parametrize(("status", "retryable"), [(503, True), (429, True), (408, True), (404, False), (422, False),
                                                    (None, False)])
def test_a_driver_error_is_retryable_as_its_http_status_says_unless_told(status, retryable):
    assert DriverError("no", status=status).retryable is retryable
    assert DriverError("no", status=status, retryable=not retryable).retryable is (not retryable)
