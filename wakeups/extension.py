"""What the wakeup layer adds to a resolved config (`runs.config.extensions`): `sanoma.wakeup.register`
(effect `write`), the runtime's own wakeup as an operation, whenever some resource type is a host
(a host with no clock of its own falls back to it). Asked after the declared state's provider, so
it sees sanoma's own host type (`sanoma.local`) too. The extension also names the wakeup types the
runtime has (`sanoma.wakeup`: its register hands the deadline to the supervisor)."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from connectors.drivers import define_driver
from connectors.operations import Connector, define_connector, op, resource_types, with_setup
from runs.config import extensions
from runs.extensions import AppExtension
from runs.extensions import install as install_extension
from wakeups.declare import REGISTER_OP, SANOMA_WAKEUP, RegisterInput, hand_to_supervisor

NAME = "wakeup"


class Registered(BaseModel):
    at: str
    key: str


def wakeup_connector() -> Connector:
    vendor, resource, verb = REGISTER_OP.split(".")
    connector = define_connector(vendor, {resource: {verb: op(
        effect="write", input=RegisterInput, output=Registered, idempotent=True,
        description="Register the deadline the stopped worker must be started again by")}})

    def make_driver() -> Any:
        return define_driver(connector, {resource: {verb: hand_to_supervisor}})

    return with_setup(connector, driver=make_driver)


def provide(request: extensions.Request) -> extensions.Extension | None:
    connectors = [c for c in request.connectors if isinstance(c, Connector)]
    if not any(rt.host for rt in resource_types(connectors).values()):
        return None
    return extensions.Extension(connectors=[wakeup_connector()])


def install() -> None:
    """The wakeups' extension of the engine (`runs.extensions`)."""
    install_extension(AppExtension(name=NAME, config=provide, wakeup_types={SANOMA_WAKEUP: hand_to_supervisor}))


__all__ = ["NAME", "install", "provide", "wakeup_connector"]
