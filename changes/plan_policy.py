"""A plan and the policy that judged it: every plan says which policy version it was judged with,
and an apply refuses to start when the workers up hold another policy than the plan's.

The policy is part of what a deploy ships (`config.policy_version`, `runs.policies.versions`). A
plan is judged where it is made (the command's, or the web process's, config), while the apply run
is decided by a worker's: after a policy edit the two differ until the workers are restarted on
the new code, and the plan would promise holds (or refusals) the apply does not make. So before an
apply run is started, the plan's policy version is compared with the one each live worker's deploy
registered (`AppVersion.policy_version`, beside its `workflows`); another version refuses the apply
with `plan_policy_changed`, naming both. `plan` and `apply` make this check before asking for a
worker of their own deploy version, so a policy-only edit says what changed rather than only that
no worker runs this version.

A worker whose deploy registered no workflow versions (one started before deploys named their
policy) holds a policy nobody recorded: it is not compared.
"""
from __future__ import annotations

from changes.errors import StateCode
from connectors.errors import SanomaError
from runs import presence
from runs.config.resolution import ResolvedConfig
from runs.models import AppVersion, PresenceRole
from runs.policies.versions import policy_version_of, shown


def plan_policy_version(config: ResolvedConfig) -> str:
    """The policy version a plan made with `config` is judged with."""
    return policy_version_of(config.policy)


def worker_policies() -> dict[str, str]:
    """The policy version each live worker holds, by the worker's name, as its deploy registered it."""
    alive = [s for s in presence.seen() if s.alive and s.role == PresenceRole.WORKER]
    rows = AppVersion.objects.filter(version__in={s.version for s in alive}).values_list(
        "version", "workflows", "policy_version")
    registered = {version: policy for version, workflows, policy in rows if workflows}
    return {s.name: registered[s.version] for s in alive if s.version in registered}


def policy_changed(plan_version: str) -> SanomaError | None:
    """`plan_policy_changed` when the live workers hold another policy than `plan_version` (none of
    them holds it); None when one does, or when no worker's policy is known."""
    held = sorted(set(worker_policies().values()))
    if not held or plan_version in held:
        return None
    holds = " and ".join(shown(v) for v in held)
    return SanomaError(
        f"The plan was judged with policy {shown(plan_version)}, but the worker holds policy {holds}: an apply "
        "would be decided by other rules than the plan shows. Restart the worker on this code (a deploy: it then "
        f"holds {shown(plan_version)}) and plan again",
        code=StateCode.PLAN_POLICY_CHANGED, data={"plan_policy": plan_version, "worker_policy": held})


def check_plan_policy(plan_version: str) -> None:
    """Raise `plan_policy_changed` when the live workers hold another policy than the plan's."""
    error = policy_changed(plan_version)
    if error is not None:
        raise error


__all__ = ["check_plan_policy", "plan_policy_version", "policy_changed", "worker_policies"]
