"""Policies: before every vendor operation call, a policy allows it, denies it, or holds it for a
named approver (SPEC 7). Plain Python; the engine calls `Policy.decide(PolicyCall) -> Decision`.

- Function policies: `define_policy(fn, version=...)` with `allow`, `deny`, `approve`; `allow_all`.
- Cedar policies: `load_cedar_policy(Path("policies"))` reads `*.cedar` files.
- `approved_for(approvals, op_id, approver)`; `explain(policy, call)` for operators.
"""
from .cedar import CedarPolicy, CedarRule, cedar_request, load_cedar_policy, to_cedar_value
from .decisions import (
    ALLOW,
    APPROVE,
    DENY,
    ApprovalView,
    Decision,
    Policy,
    PolicyCall,
    RunInfo,
    approval_for,
    approved_for,
    describe_approver,
    normalise_approver,
)
from .explain import explain
from .python_policies import (
    FunctionPolicy,
    allow,
    allow_all,
    approve,
    define_policy,
    deny,
    validate_decision,
)

__all__ = [
    "ALLOW",
    "APPROVE",
    "DENY",
    "ApprovalView",
    "CedarPolicy",
    "CedarRule",
    "Decision",
    "FunctionPolicy",
    "Policy",
    "PolicyCall",
    "RunInfo",
    "allow",
    "allow_all",
    "approval_for",
    "approve",
    "approved_for",
    "cedar_request",
    "define_policy",
    "deny",
    "describe_approver",
    "explain",
    "load_cedar_policy",
    "normalise_approver",
    "to_cedar_value",
    "validate_decision",
]
