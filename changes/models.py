"""The declared state's tables (defined in `changes.resources.models`, registered by importing them
here): what sanoma created at vendors and the latest drift verdicts."""
from __future__ import annotations

from changes.resources.models import DriftVerdict, ManagedResource

__all__ = ["DriftVerdict", "ManagedResource"]
