"""Cedar policies read from `policies/*.cedar`.

The request for a call:
- principal `User::"<actor>"`, member of `Group::"<g>"` for each of the actor's groups;
- action `Action::"<op id>"`, member of `Action::"<effect>"` (so `action in Action::"money"` works);
- resource `Target::"<target>"` (member of `Operation::"<op id>"`) when the op declares a target,
  else `Operation::"<op id>"`; `resource in Operation::"<op id>"` matches both;
- context `{effect, input, workflow, run_id}` (+ `target` when there is one); `input` is the parsed
  input as a Cedar record (nulls and values Cedar cannot hold are left out, floats are decimals).

Cedar's rule stands: a permit grants, a forbid overrides, nothing permitted is denied. On top, a
`forbid` annotated `@approve("alice")` / `@approve("group:security")` holds the call for that
approver instead of denying it (`@title("...")`, `@covers("op.a, op.b")` shape the approval); it is
lifted once that approver approved an approval covering the op, and the call is evaluated again
without it, so a broad permit can never skip an approval. The run's starter may not decide the
approval unless the forbid also says `@self_approval("allowed")`.

Every policy gets a stable id: its `@id("...")`, else `<file>:<line>` (the line where the policy,
including its annotations, starts). The set is parsed once at load with those ids; the sets with
lifted forbids left out are parsed once each and cached.
"""
from __future__ import annotations

from runs.policies.cedar.loading import load_cedar_policy
from runs.policies.cedar.policy import CedarPolicy, Evaluation
from runs.policies.cedar.request import cedar_request, to_cedar_value
from runs.policies.cedar.rules import SELF_APPROVAL_ALLOWED, CedarRule

__all__ = [
    "CedarPolicy",
    "CedarRule",
    "Evaluation",
    "SELF_APPROVAL_ALLOWED",
    "cedar_request",
    "load_cedar_policy",
    "to_cedar_value",
]
