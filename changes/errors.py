"""The codes the declared state puts on an error (registered with `connectors.errors`'s list on import)."""
from __future__ import annotations

from enum import StrEnum

from connectors.errors import register_codes


@register_codes
class StateCode(StrEnum):
    """Applying the declared state."""

    APPLY_INCOMPLETE = "apply_incomplete"  # an apply ended with changes of its plan not made: data counts them
    # An apply would be decided by another policy than the one its plan was judged with (the workers
    # hold another policy version): data names both (`plan_policy`, `worker_policy`).
    PLAN_POLICY_CHANGED = "plan_policy_changed"
