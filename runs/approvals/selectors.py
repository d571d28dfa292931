"""Reads of approvals: the inbox, a run's approvals, what a principal may see, and what a held call
does in its operation's own words."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from connectors.errors import ConfigError
from connectors.operations import Operation, summarize
from runs.approvals.approver import Approver
from runs.approvals.permissions import Principal, decidable_approvals, principal_of, visible_runs
from runs.approvals.rules import POLICY_ACTOR, SELF_APPROVAL_ALLOWED, SELF_APPROVAL_KEY, self_approval_allowed
from runs.config.registry import get_config
from runs.engine.transitions import RUNTIME_ACTOR
from runs.models import (
    Approval,
    ApprovalRequester,
    ApprovalStatus,
    DecisionMessage,
    LedgerKind,
    LedgerRecord,
    Run,
    WorkflowEntry,
)
from runs.selectors import bounded_count, visible_run


def approval_state(approval: Approval) -> dict[str, Any]:
    """The approval as the run publishes it."""
    state: dict[str, Any] = {
        "id": approval.approval_id,
        "run_id": approval.run_id,
        "title": approval.title,
        "approver": approval.approver,
        "requested_by": approval.requested_by,
        "covers": list(approval.covers),
        "rules": list(approval.rules or []),
        "links": list(approval.links),
        "status": approval.status,
        "requested_at": approval.requested_at.isoformat(),
        "refused": list(approval.refused),
    }
    if approval.details is not None:
        state["details"] = approval.details
    if approval.op:
        state.update(op=approval.op, input=approval.op_input, op_seq=approval.op_seq)
    if approval.status != ApprovalStatus.PENDING:
        decided_at = approval.decided_at.isoformat() if approval.decided_at else None
        state.update(decided_by=approval.decided_by, decided_at=decided_at)
        if approval.note:
            state["note"] = approval.note
        if approval.decided_with:
            state["decided_with"] = approval.decided_with
    return state


def covered_ops(approval: Approval) -> list[str]:
    """The operations the approval lets through, in words: `<op>`, or `<op> on <target>` when each
    target of the operation is approved on its own."""
    said = []
    for cover in approval.covers:
        op, _, target = str(cover).partition("@")
        said.append(f"{op} on {target}" if target else op)
    return said


def covers_said(approval: Approval) -> str:
    """What else deciding this approval decides, for its approver: an approved hold lets through
    every later call of the operations it covers in the same run that the same rules hold for the
    same approver, without asking again (another rule's hold asks again, see the policies guide's
    "What an approval lifts"). An approval recording no rules lifts every hold for its approver.
    Empty when it covers nothing."""
    ops = covered_ops(approval)
    if not ops:
        return ""
    joined = ", ".join(ops)
    held = f"held for {approval.approver}"
    rules = [str(rule) for rule in approval.rules or []]
    if rules:
        held += f" by rule {' or '.join(rules)}"
    if approval.op:
        return f"Also lets through every later {joined} of this run {held}, without asking again"
    return f"Lets through every {joined} of this run {held}, without asking again"


def inbox(*, principal: str | Principal, status: str | None = ApprovalStatus.PENDING) -> QuerySet[Approval]:
    """The inbox, the one answer every surface gives (the desk's inbox and its badge, `/api/approvals`):
    the approvals this principal may decide, newest first, in a fixed number of queries; `status`
    None keeps those decided too.

    Who may decide (see the README's rules): the approver the approval names, or a member of the
    group it names. Being a superuser or an operator adds nothing (an approval is personal), and
    the run's starter is left out unless self-approval is allowed (the site's setting, or the
    policy for that hold), since they would be refused."""
    who = principal_of(principal)
    found = decidable_approvals(who)
    if status is not None:
        found = found.filter(status=status)
    if not getattr(settings, "SANOMA_ALLOW_SELF_APPROVAL", False):
        allowed = Q(requested_by=ApprovalRequester.POLICY, **{f"details__{SELF_APPROVAL_KEY}": SELF_APPROVAL_ALLOWED})
        # Not "the run's starter is not me" through a join (a run row read per approval): whether I
        # started it is one read of the runs I started (indexed by starter) the planner can hash.
        mine = Run.objects.filter(pk=OuterRef("run_id"), started_by=who.id)
        found = found.filter(~Exists(mine) | allowed)
    # The runs of a page are read after it (one query by key), not joined before the sort: a join
    # makes the planner read every run of an approver holding thousands before it keeps a page.
    return found.prefetch_related("run").order_by("-requested_at", "-id")


def nobody_decides(approver: str, *, starter: str, self_approval: bool = False,
                   starter_does: str = "started this run") -> str | None:
    """Why nobody could decide an approval for `approver` in a run `starter` starts, said as a
    clause that follows the approver's name (`whose only member (sam) started this run`); None
    when someone could. Separation of duties keeps the starter out unless self-approval is allowed
    (the site's setting, or `self_approval`: the policy's permission for this hold), so a group
    whose only active member is the starter, or the starter named as approver, deadlocks the run.
    `starter_does` is what the starter does, in the caller's words ("is the one applying")."""
    from django.contrib.auth import get_user_model

    self_ok = self_approval or getattr(settings, "SANOMA_ALLOW_SELF_APPROVAL", False)
    users = get_user_model().objects
    group = Approver.parse(approver).group
    if group is not None:
        members = list(users.filter(groups__name=group, is_active=True)
                       .order_by("username").values_list("username", flat=True))
        if not members:
            return "which has no active member"
        if members == [starter] and not self_ok:
            return f"whose only member ({starter}) {starter_does}"
        return None
    if approver == starter and not self_ok:
        return f"who {starter_does}"
    if users.filter(username=approver, is_active=False).exists():
        return "who is not an active user"
    return None


def nobody_decides_approval(approval: Approval) -> str | None:
    """`nobody_decides` for a pending approval of a run: its approver, starter and self-approval."""
    return nobody_decides(approval.approver, starter=approval.run.started_by,
                          self_approval=self_approval_allowed(approval))


def decided_said(approval: Approval) -> str:
    """Who ended a decided approval and why, in words: `approved by bob`, `withdrawn by alice`, and
    for one the runtime withdrew as its run ended, why and by whom: `withdrawn: its run was
    cancelled by admin ("wrong order")`; for one a new policy closed, `released by the policy (the
    policy now allows it)` or `withdrawn by the policy (<why it denies the call>)`. "" while pending."""
    if approval.status == ApprovalStatus.PENDING:
        return ""
    if approval.decided_by == POLICY_ACTOR:  # a new policy closed it: released, or denied the call
        return f"{approval.status} by the policy ({approval.note})" if approval.note else \
            f"{approval.status} by the policy"
    if approval.status != ApprovalStatus.WITHDRAWN or approval.decided_by != RUNTIME_ACTOR:
        return f"{approval.status} by {approval.decided_by}"
    said = f"withdrawn: {approval.note or 'its run ended'}"
    cancelled = (LedgerRecord.objects.filter(run_id=approval.run_id, kind=LedgerKind.RUN_CANCELLED)
                 .order_by("-seq", "-id").values("actor", "body").first())
    if cancelled is not None:
        body = cancelled["body"] or {}
        said += f" by {body.get('by') or cancelled['actor']}"
        if body.get("reason"):
            said += f" (“{body['reason']}”)"
    return said


def pending_for(*, principal: str | Principal) -> QuerySet[Approval]:
    """The inbox's pending approvals (see `inbox`)."""
    return inbox(principal=principal)


def pending_count(*, principal: str | Principal) -> int:
    """How many approvals wait for `principal`: the one count the header's badge, the desk's inbox
    and `/api/approvals` give (the pending rows of `inbox`)."""
    return pending_for(principal=principal).count()


# The badge counts at most this many of the approvals waiting: past it, it says "99+".
BADGE_BOUND = 99


def pending_badge(*, principal: str | Principal) -> str:
    """The header's badge: how many approvals wait for `principal` ("" when none), "99+" past
    `BADGE_BOUND`. It reads at most `BADGE_BOUND + 1` of them (a `LIMIT` under the count), so an
    approver holding thousands pays for a hundred on every page of the desk; the inbox counts on."""
    counted = bounded_count(pending_for(principal=principal), bound=BADGE_BOUND)
    if not counted.n:
        return ""
    return str(counted) if counted.exact else f"{BADGE_BOUND}+"


def _pending_of_run() -> QuerySet[Any, Any]:
    return (Approval.objects.filter(run=OuterRef("pk"), status=ApprovalStatus.PENDING)
            .order_by().values("run").annotate(n=Count("id")).values("n"))


def with_pending_count(runs: QuerySet[Run]) -> QuerySet[Run]:
    """`runs`, each annotated with `pending_count`: how many of its approvals are pending."""
    return runs.annotate(pending_count=Coalesce(Subquery(_pending_of_run(), output_field=IntegerField()), Value(0)))


def pending_counts(run_ids: list[str]) -> dict[str, int]:
    """How many approvals are pending, by run id (a run with none is left out)."""
    rows = (Approval.objects.filter(run_id__in=run_ids, status=ApprovalStatus.PENDING)
            .values("run_id").annotate(n=Count("id")))
    return {row["run_id"]: row["n"] for row in rows}


def pending_of(run: Run) -> list[Approval]:
    """The run's pending approvals, in the order it asked."""
    return list(Approval.objects.filter(run=run, status=ApprovalStatus.PENDING).select_related("run").order_by("seq"))


def states_of(run: Run) -> list[dict[str, Any]]:
    """Every approval of the run as the run publishes it, in the order it asked."""
    return [approval_state(a) for a in Approval.objects.filter(run=run).order_by("seq")]


def visible_approval(*, principal: Principal, approval_pk: Any) -> Approval | None:
    """The approval (by its row's key) if `principal` may see its run, else None."""
    runs = visible_runs(principal).values("pk")
    try:
        return Approval.objects.select_related("run").filter(run__in=runs).get(pk=int(approval_pk))
    except (Approval.DoesNotExist, ValueError, TypeError):
        return None


def queued_decisions(approval: Approval) -> list[DecisionMessage]:
    """The decisions sent for the approval that its run has not applied yet, oldest first."""
    return list(DecisionMessage.objects.filter(approval=approval, applied=False).order_by("id"))


def entry_named(name: str) -> WorkflowEntry | None:
    """The row start permissions on the workflow are granted on, if it has one yet."""
    return WorkflowEntry.objects.filter(name=name).first()


def starters(workflow: str) -> dict[str, list[str]]:
    """Who may start the workflow: holders of the global permission, and of the permission on it;
    and the superusers."""
    from django.contrib.auth import get_user_model
    from django.contrib.auth.models import Group, Permission

    users_of = get_user_model().objects
    entry = entry_named(workflow)
    perm = Permission.objects.filter(codename="start_workflow", content_type__app_label="runs").first()
    users = set(users_of.filter(user_permissions=perm).values_list("username", flat=True)) if perm else set()
    groups = set(Group.objects.filter(permissions=perm).values_list("name", flat=True)) if perm else set()
    if entry is not None:
        users |= {p.user.get_username() for p in entry.workflowentryuserobjectpermission_set.select_related("user")}
        groups |= {p.group.name for p in entry.workflowentrygroupobjectpermission_set.select_related("group")}
    superusers = set(users_of.filter(is_superuser=True).values_list("username", flat=True))
    return {"users": sorted(users), "groups": sorted(groups), "superusers": sorted(superusers)}


def operations() -> Mapping[str, Operation]:
    """The config's operations by id (none when the config cannot be read: a held call is then shown
    without its summary, never not at all)."""
    try:
        return get_config().ops
    except ConfigError:
        return {}


def held_call(approval: Approval, ops: Mapping[str, Operation] | None = None) -> dict[str, Any]:
    """What an approval lets through in the words of the operation it holds: `summary` ("Refund
    1,234.56 EUR on order 1001", "" when the operation has none) and `amount` (`{cents, currency,
    shown}` when the operation declares which input field holds its money, else None)."""
    if not approval.op:
        return {"summary": "", "amount": None}
    operation = (operations() if ops is None else ops).get(approval.op)
    if operation is None:
        return {"summary": "", "amount": None}
    money = operation.money_of(approval.op_input)
    return {"summary": summarize(operation, approval.op_input), "amount": money.as_dict() if money else None}


def inbox_item(approval: Approval, ops: Mapping[str, Operation] | None = None) -> dict[str, Any]:
    """An inbox row as the API answers it: the approval as the run publishes it, what it lets
    through, and its run (id, workflow, status, starter)."""
    run = approval.run
    return {**approval_state(approval), **held_call(approval, ops), "started_by": run.started_by,
            "workflow": run.workflow, "run": run}


def approvals_of(*, run_id: str, viewer: str | Principal | None = None) -> list[dict[str, Any]]:
    return states_of(visible_run(run_id=run_id, viewer=viewer))
