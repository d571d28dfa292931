"""Declaring what a vendor can do: connectors, their operations and vendor info.

Plain Python: importable without Django, so a company's files can be read without a database.
"""
from __future__ import annotations

from connectors.operations.connector import (
    RESERVED_VENDOR_NAMES,
    Connector,
    VendorInfo,
    define_connector,
    resource_types,
)
from connectors.operations.operation import (
    EFFECTS,
    IDEMPOTENCY_KEY_KINDS,
    MAX_TIMEOUT_SECONDS,
    Effect,
    InputModel,
    Operation,
    OperationSpec,
    OutputModel,
    Phrases,
    Retry,
    check_timeout,
    op,
)
from connectors.operations.setup import with_setup
from connectors.operations.summaries import SUMMARY_FORMATS, check_summary, phrase_fields, summarize

__all__ = [
    "Connector",
    "EFFECTS",
    "Effect",
    "IDEMPOTENCY_KEY_KINDS",
    "InputModel",
    "MAX_TIMEOUT_SECONDS",
    "Operation",
    "OperationSpec",
    "OutputModel",
    "Phrases",
    "RESERVED_VENDOR_NAMES",
    "Retry",
    "SUMMARY_FORMATS",
    "VendorInfo",
    "check_summary",
    "check_timeout",
    "define_connector",
    "op",
    "phrase_fields",
    "resource_types",
    "summarize",
    "with_setup",
]
