"""Fakes: in-memory (or file-backed) stand-ins for vendors, with fault injection.

A fake behaves like a vendor that honours idempotency keys: a call repeating an earlier call's key
gets the first reply back and changes nothing. Faults (`fail_next`, `lose_reply`, `rate_limit`,
`hold`) apply to the next call of an operation, one fault per call, queued per operation.
"""
from __future__ import annotations

from connectors.fakes.books import CallLog
from connectors.fakes.fake import Fake, OpFn, define_fake

__all__ = [
    "CallLog",
    "Fake",
    "OpFn",
    "define_fake",
]
