"""The authoring API for vendors: what a company's connector files import."""
from connectors.drivers import CallContext, Driver, define_driver
from connectors.errors import DriverError, SanomaError, error_code, retryable_status
from connectors.operations import (
    EFFECTS,
    Connector,
    Operation,
    VendorInfo,
    define_connector,
    op,
    with_setup,
)

__all__ = [
    "EFFECTS",
    "CallContext",
    "Connector",
    "Driver",
    "DriverError",
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


def __getattr__(name: str):
    # Fakes load lazily so a driver-only import does not pull in the fake machinery.
    if name in ("define_fake", "Fake"):
        from connectors import fakes

        return getattr(fakes, name)
    raise AttributeError(name)
