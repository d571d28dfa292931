"""`with_setup`: a connector given the makers of its driver and fake (each checked when given)."""
from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any

from connectors.operations.connector import Connector


def with_setup(
    connector: Connector,
    *,
    driver: Callable[[], Any] | None = None,
    fake: Callable[[Path | None], Any] | None = None,
    steps: Any = None,
    remote: Callable[[], Any] | None = None,
) -> Connector:
    """Attach a connector's halves to the connector itself, and return it: the makers of its driver
    (`driver()`), its fake (`fake(state_file_or_None)`) and its remote, and its scenario steps.

        with_setup(shop, driver=make_driver, fake=make_fake)

    The halves attach in place, so every module that imported `shop` sees them (`shop =
    with_setup(shop, ...)` is the same thing). Each half attaches once: a second, different one is
    refused, as are the halves themselves given instead of their makers (`driver=define_driver(...)`),
    each with the fix in the message."""
    if not isinstance(connector, Connector):
        raise TypeError(f"with_setup takes the connector first, as define_connector returned it; got "
                        f"{type(connector).__name__}: with_setup(shop, driver=make_driver, fake=make_fake)")
    vendor = connector.vendor
    halves = {"driver": driver, "fake": fake, "remote": remote}
    for kind, maker in halves.items():
        if maker is not None:
            _check_maker(vendor, kind, maker)
    for kind, given in (*halves.items(), ("steps", steps)):
        current = getattr(connector, kind)
        if given is not None and current is not None and current is not given:
            raise ValueError(
                f"connector {vendor} already has a {kind} ({_named(current)}): with_setup attaches halves to the "
                f"connector itself, once each, so call it once with every half; for another connector with "
                f"another {kind} (in a test), copy it first: dataclasses.replace({vendor}, {kind}=...)")
    for kind, given in (*halves.items(), ("steps", steps)):
        if given is not None:
            object.__setattr__(connector, kind, given)  # the connector is frozen for everyone else
    return connector


# How each half is made: what its maker is called with, and how to write one.
_MAKERS = {
    "driver": (0, "def make_driver(): return define_driver({vendor}, {{...}})", "a Driver"),
    "fake": (1, "def make_fake(file=None): return define_fake({vendor}, initial=..., file=file)", "a Fake"),
    "remote": (0, "def make_remote(): return MyRemote(...)", "a Remote"),
}


def _check_maker(vendor: str, kind: str, maker: Any) -> None:
    """A half's maker is a function taking what the runtime calls it with; the half itself, or a
    maker of the wrong shape, is refused naming how to write it."""
    arguments, example, made = _MAKERS[kind]
    example = example.format(vendor=vendor)
    fix = f"write `{example}` and pass {kind}=make_{kind}"
    if type(maker).__name__ in ("Driver", "Fake") or (kind == "remote" and hasattr(maker, "handles")):
        raise TypeError(f"with_setup({vendor}, {kind}=...) takes the function that makes the {kind}, not "
                        f"{made}: the runtime makes it when it needs it ({fix})")
    if not callable(maker):
        raise TypeError(f"with_setup({vendor}, {kind}=...) takes a function; got {type(maker).__name__} ({fix})")
    try:
        signature = inspect.signature(maker)
    except (TypeError, ValueError):
        return  # a builtin or C function: it is called as it is
    try:
        signature.bind(*([None] * arguments))
    except TypeError:
        takes = "the fake's state file (a Path, or None in memory)" if arguments else "no arguments"
        raise TypeError(f"with_setup({vendor}, {kind}=...): {_named(maker)} must take {takes}, as the runtime "
                        f"calls it ({fix})") from None


def _named(value: Any) -> str:
    return getattr(value, "__qualname__", None) or type(value).__name__
