"""The vendor half of sanoma: connectors, drivers, fakes, resource types and errors.

A company's files import these names from the front door, `runs.authoring`, with everything else
they need; this package's names stay importable for the engine and for older files."""
from typing import TYPE_CHECKING

from connectors.drivers import CallContext, Driver, DriverFn, define_driver
from connectors.errors import DriverError, ErrorCode, SanomaError, error_code, retryable_status
from connectors.operations import (
    EFFECTS,
    Connector,
    Operation,
    Retry,
    VendorInfo,
    define_connector,
    op,
    resource_types,
    with_setup,
)
from connectors.resources import (
    Observed,
    Ref,
    ResourceType,
    Secret,
    define_resource,
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
    "Observed",
    "OpFn",
    "Operation",
    "Retry",
    "Ref",
    "ResourceType",
    "SanomaError",
    "Secret",
    "VendorInfo",
    "define_connector",
    "define_driver",
    "define_fake",
    "define_resource",
    "error_code",
    "op",
    "resource_types",
    "retryable_status",
    "with_setup",
]


def __getattr__(name: str) -> object:
    # Fakes load lazily so a driver-only import does not pull in the fake machinery.
    if name in ("define_fake", "Fake", "OpFn"):
        from connectors import fakes

        return getattr(fakes, name)
    raise AttributeError(name)
