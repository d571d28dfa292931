"""The authoring API for vendors: what a company's connector files import."""
from typing import TYPE_CHECKING

from connectors.drivers import CallContext, Driver, DriverFn, define_driver
from connectors.errors import DriverError, ErrorCode, SanomaError, error_code, retryable_status
from connectors.operations import (
    EFFECTS,
    Connector,
    Operation,
    VendorInfo,
    define_connector,
    op,
    with_setup,
)

if TYPE_CHECKING:  # loaded lazily at run time: see __getattr__
    from connectors.fakes import Fake, OpFn, define_fake

__all__ = [
    "EFFECTS",
    "CallContext",
    "Connector",
    "Driver",
    "DriverError",
    "DriverFn",
    "ErrorCode",
    "Fake",
    "OpFn",
    "Operation",
    "SanomaError",
    "VendorInfo",
    "define_connector",
    "define_driver",
    "define_fake",
    "error_code",
    "op",
    "retryable_status",
    "with_setup",
]


def __getattr__(name: str) -> object:
    # Fakes load lazily so a driver-only import does not pull in the fake machinery.
    if name in ("define_fake", "Fake", "OpFn"):
        from connectors import fakes

        return getattr(fakes, name)
    raise AttributeError(name)
