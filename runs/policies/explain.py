"""`explain(policy, call)`: what an operator sees when asking why a call was decided as it was."""
from __future__ import annotations

from typing import Any

from connectors.errors import SanomaError, error_to_dict

from .cedar import CedarPolicy, cedar_request
from .decisions import Policy, PolicyCall
from .versions import policy_version_of


def explain(policy: Policy, call: PolicyCall) -> dict[str, Any]:
    """The decision for `call` with what made it.

    For a Cedar policy: every policy of the set with its id, file, line, effect, annotations,
    whether it applied to this call (`satisfied`), the error Cedar met evaluating it if any, and
    for `@approve` forbids the approver and the approval that lifted it (`lifted_by`); plus the
    Cedar request. For any other policy: its kind and version (`policy@...`, the one form). A policy that fails gives
    `decision: None` and the `error` as the ledger would record it.
    """
    out: dict[str, Any] = {
        "op": call.op_id,
        "kind": getattr(policy, "kind", type(policy).__name__),
        "defined": bool(getattr(policy, "defined", True)),
        "version": policy_version_of(policy),  # `policy@<version>`, as a deploy, a plan and the ledger say it
        "policies": [],
    }
    if isinstance(policy, CedarPolicy):
        request, entities = cedar_request(call)
        out["request"] = {**request, "entities": entities}
        out["policies"] = policy.rule_results(call)
    try:
        decision = policy.decide(call)
    except SanomaError as err:
        out["decision"] = None
        out["error"] = error_to_dict(err)
    else:
        out["decision"] = decision.to_dict()
    return out
