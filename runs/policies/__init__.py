"""What a policy author uses: a policy allows a call, denies it, or holds it for a named approver.

Cedar files under the config root's `policies/` need nothing from here. A policy written in
Python instead is `SanomaConfig(policy=define_policy(fn, version="v1"))`, where `fn(call)` reads
the `PolicyCall` (the operation, its effect, target and input, who asks, the run and its
approvals) and answers `allow()`, `deny(reason)` or `approve(approver, title=..., covers=...)`;
`approved_for(call.run.approvals, op_id, approver)` says whether that approver already approved.
`load_cedar_policy(path)` reads Cedar files from another folder.

The engine's own parts (Cedar evaluation, explaining, the call data) are in the submodules.
"""
from runs.policies.cedar import load_cedar_policy
from runs.policies.decisions import ApprovalView, Decision, DecisionKind, Policy, PolicyCall, RunInfo, approved_for
from runs.policies.python_policies import allow, allow_all, approve, define_policy, deny

__all__ = [
    "ApprovalView",
    "Decision",
    "DecisionKind",
    "Policy",
    "PolicyCall",
    "RunInfo",
    "allow",
    "allow_all",
    "approve",
    "approved_for",
    "define_policy",
    "deny",
    "load_cedar_policy",
]
