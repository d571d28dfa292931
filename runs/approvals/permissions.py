"""Who may do what, as django-guardian object permissions.

- `runs.start_workflow` on a workflow's row: who may start it (or the global permission).
- Deciding an approval: the approver it names (its `approver` column), a user or every member of
  a group (`group:<name>`); no row is written per approval (`grant_approver`).
- Seeing a run: its starter, the approvers its approvals name, and holders of `runs.view_run` on
  it (guardian's rows: given by hand, kept for an approver a new policy took the approval from).
- `runs.view_any_run` / `runs.operate_runs` (global): operators.
- `runs.send_message` on a run (or global): who besides its starter and operators may send it messages.
Superusers hold every permission.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db.models import Exists, OuterRef, QuerySet

from connectors.errors import ErrorCode, SanomaError
from runs.approvals.approver import Approver
from runs.errors import RunCode
from runs.models import (
    Approval,
    ApprovalGroupObjectPermission,
    ApprovalUserObjectPermission,
    Run,
    RunGroupObjectPermission,
    RunUserObjectPermission,
    WorkflowEntry,
)


@dataclass(frozen=True)
class Principal:
    """Who acts: a username and their groups, with the Django user when there is one."""

    id: str
    groups: tuple[str, ...] = ()
    user: Any = field(default=None, compare=False)

    @property
    def is_superuser(self) -> bool:
        return bool(self.user is not None and self.user.is_active and self.user.is_superuser)

    def has_global(self, perm: str) -> bool:
        return self.user is not None and self.user.is_active and self.user.has_perm(perm)


@lru_cache(maxsize=1)
def start_permission_id() -> int:
    """The id of `runs.start_workflow`: fixed once migrated, so read once per process."""
    return Permission.objects.get(content_type__app_label="runs", codename="start_workflow").pk


def _groups_and_start(user: Any) -> tuple[tuple[str, ...], bool]:
    """The user's group names, and whether they hold `runs.start_workflow` directly or through one."""
    pid = start_permission_id()
    groups = list(Group.objects.filter(user=user).annotate(
        starts=Exists(Group.permissions.through.objects.filter(group_id=OuterRef("pk"), permission_id=pid))
    ).values_list("name", "starts"))
    direct = getattr(user, "may_start_direct", None)
    if direct is None:
        direct = _user_permissions(user).filter(permission_id=pid).exists()
    return tuple(sorted(name for name, _ in groups)), bool(direct or any(starts for _, starts in groups))


def _user_permissions(user: Any) -> QuerySet[Any]:
    return get_user_model().user_permissions.through.objects.filter(user_id=user.pk)


def principal_of(who: Any) -> Principal:
    """Who acts, with their groups. A username is read in two queries that also tell whether the
    user may start any workflow (directly or through a group), which every start asks."""
    if isinstance(who, Principal):
        return who
    User = get_user_model()
    # A Django user that carries `may_start_any` (read by _has_global_start), which no model declares.
    user: Any
    if isinstance(who, str) and who.strip():
        user = User.objects.filter(username=who).annotate(
            may_start_direct=Exists(User.user_permissions.through.objects.filter(
                user_id=OuterRef("pk"), permission_id=start_permission_id()))
        ).first()
        if user is None:
            return Principal(id=who)
    elif isinstance(who, User):
        user = who
    else:
        raise SanomaError("A principal is a non-blank username", code=ErrorCode.INVALID_INPUT)
    groups, user.may_start_any = _groups_and_start(user)
    return Principal(id=user.get_username(), groups=groups, user=user)


_starter_sql: str | None = None


def global_starter_sql() -> str:
    """One SELECT reading what `principal_of` and `check_can_start` read of a username, for a
    statement that starts a run in one round trip (`runs.engine.transitions.start_in_one_statement`):
    a row `(groups)` when the user named by the first parameter is active and may start any
    workflow (a superuser, or `runs.start_workflow` held directly or through a group, as
    `_has_global_start` reads it), no row otherwise; its groups a JSON array of their names in the
    order `principal_of` sorts them (code points: COLLATE "C" on a UTF-8 database). Its parameters:
    the username, then `start_permission_id()` twice. A user without a row here (none, inactive,
    or allowed only on some workflows) is for `principal_of` and `check_can_start` to answer."""
    global _starter_sql
    if _starter_sql is None:
        User = get_user_model()
        user, by_user = User._meta, User.user_permissions.through._meta
        in_group, group_perms = User.groups.through._meta, Group.permissions.through._meta
        group = Group._meta

        def col(meta: Any, name: str) -> str:
            return f'"{meta.get_field(name).column}"'

        member, member_group = col(in_group, User.groups.field.m2m_field_name()), \
            col(in_group, User.groups.field.m2m_reverse_field_name())
        _starter_sql = f"""
    SELECT COALESCE((SELECT jsonb_agg(g.{col(group, "name")} ORDER BY g.{col(group, "name")} COLLATE "C")
                     FROM "{in_group.db_table}" ug JOIN "{group.db_table}" g ON g.{col(group, "id")} = ug.{member_group}
                     WHERE ug.{member} = u.{col(user, user.pk.name)}), '[]'::jsonb) AS groups
    FROM "{user.db_table}" u
    WHERE u.{col(user, User.USERNAME_FIELD)} = %s AND u.{col(user, "is_active")} AND (
        u.{col(user, "is_superuser")}
        OR EXISTS (SELECT 1 FROM "{by_user.db_table}" up
                   WHERE up.{col(by_user, User.user_permissions.field.m2m_field_name())} = u.{col(user, user.pk.name)}
                   AND up.{col(by_user, User.user_permissions.field.m2m_reverse_field_name())} = %s)
        OR EXISTS (SELECT 1 FROM "{in_group.db_table}" ug JOIN "{group_perms.db_table}" gp
                       ON gp.{col(group_perms, Group.permissions.field.m2m_field_name())} = ug.{member_group}
                   WHERE ug.{member} = u.{col(user, user.pk.name)}
                   AND gp.{col(group_perms, Group.permissions.field.m2m_reverse_field_name())} = %s))
"""
    return _starter_sql


def may_start_any(principal: Principal) -> bool:
    """Whether `principal` may start every workflow (`check_can_start` passes whatever the
    workflow): a user holding the global permission, read with the principal when it was."""
    return principal.user is not None and _has_global_start(principal.user)


def request_principal(request: Any) -> Principal:
    """The request's user as a principal (username and groups), read once per request."""
    principal = getattr(request, "_sanoma_principal", None)
    if principal is None:
        principal = principal_of(request.user)
        request._sanoma_principal = principal
    return principal


def permission_denied(message: str, **data: Any) -> SanomaError:
    return SanomaError(message, code=ErrorCode.PERMISSION_DENIED, data=data)


def workflow_entry(name: str) -> WorkflowEntry:
    """The row start permissions on the workflow are granted on, made if need be (a write)."""
    entry, _ = WorkflowEntry.objects.get_or_create(name=name)
    return entry


def _has_global_start(user: Any) -> bool:
    """The global start permission, through the user or a group (read with the user when it can be)."""
    if not user.is_active:
        return False
    if user.is_superuser:
        return True
    known = getattr(user, "may_start_any", None)
    return known if known is not None else _groups_and_start(user)[1]


def check_can_start(principal: Principal, workflow: str) -> None:
    if principal.user is None:
        raise permission_denied(f"No user {principal.id}: only users of this site may start runs", user=principal.id)
    if not principal.user.is_active:
        raise permission_denied(f"{principal.id} may not start {workflow}: their account is inactive",
                                user=principal.id, workflow=workflow)
    if _has_global_start(principal.user):
        return
    entry = WorkflowEntry.objects.filter(name=workflow).first()  # no row yet: nothing granted on it
    if entry is not None and principal.user.has_perm("runs.start_workflow", entry):
        return
    raise permission_denied(f"{principal.id} may not start {workflow}", user=principal.id, workflow=workflow)


def is_operator(principal: Principal) -> bool:
    return principal.has_global("runs.view_any_run")


def run_not_found(run_id: Any) -> SanomaError:
    """The one answer for a run that does not exist and for one the caller may not see: the two
    read alike, so a refusal never tells whether a run exists."""
    return SanomaError(f"No run {run_id}, or you may not see it", code=RunCode.RUN_NOT_FOUND,
                       data={"run_id": run_id})


def check_can_view(principal: Principal, run: Run, *, raise_error: bool = True) -> bool:
    """Who may see a run: its starter, its approvers (`runs.view_run` on it), operators. Surfaces
    go through `runs.selectors.visible_run`, which asks this before anything else."""
    allowed = (
        is_operator(principal)
        or run.started_by == principal.id
        or (principal.user is not None and principal.user.is_active
            and Approval.objects.filter(run_id=run.pk, approver__in=approver_names(principal)).exists())
        or (principal.user is not None and principal.user.has_perm("runs.view_run", run))
    )
    if not allowed and raise_error:
        raise run_not_found(run.id)
    return allowed


def can_operate(principal: Principal, run: Run) -> bool:
    """May cancel the run and withdraw its approvals: its starter, or an operator."""
    return principal.has_global("runs.operate_runs") or run.started_by == principal.id


def check_can_operate(principal: Principal, run: Run) -> None:
    if can_operate(principal, run):
        return
    raise permission_denied(f"{principal.id} may not cancel run {run.id}: only its starter or an operator may",
                            user=principal.id)


def can_send_message(principal: Principal, run: Run) -> bool:
    """May send messages to the run: its starter, an operator (`runs.operate_runs`), or a holder of
    `runs.send_message` on the run (or globally), directly or through a group."""
    return (
        run.started_by == principal.id
        or principal.has_global("runs.operate_runs")
        or principal.has_global("runs.send_message")
        or (principal.user is not None and principal.user.is_active
            and principal.user.has_perm("runs.send_message", run))
    )


def check_can_send_message(principal: Principal, run: Run) -> None:
    if can_send_message(principal, run):
        return
    raise permission_denied(
        f"{principal.id} may not send messages to run {run.id}: only its starter, an operator, or a holder of "
        "runs.send_message on it may", user=principal.id)


def granted(user_model: Any, group_model: Any, user: Any, codename: str) -> QuerySet[Any]:
    """The keys of the objects `codename` is granted on to `user`, directly or through one of their
    groups: two reads of guardian's rows by (holder, permission), each on its unique index, as one
    UNION ALL. A filter `pk__in=` it costs what the user holds, never what everyone holds (an OR of
    joins with DISTINCT reads every row the permission tables join to)."""
    mine = user_model.objects.filter(user=user, permission__codename=codename).order_by().values("content_object_id")
    by_group = (group_model.objects.filter(group__in=user.groups.all(), permission__codename=codename)
                .order_by().values("content_object_id"))
    return mine.union(by_group, all=True)


def approver_names(principal: Principal) -> list[str]:
    """How approvals name `principal` as their approver: their username and `group:<name>` for each
    of their groups."""
    return [principal.id, *(str(Approver.group_named(group)) for group in principal.groups)]


def visible_runs(principal: Principal) -> QuerySet[Run]:
    """The runs `principal` may see: every run for an operator; else those they started, those an
    approval names them (or a group of theirs) on, and those `runs.view_run` is granted on to them
    or their groups, by key (each a read of an index by holder)."""
    if is_operator(principal):
        return Run.objects.all()
    if principal.user is None:
        return Run.objects.filter(started_by=principal.id)
    started = Run.objects.filter(started_by=principal.id).order_by().values("pk")
    keys = started.union(granted(RunUserObjectPermission, RunGroupObjectPermission, principal.user, "view_run"),
                         all=True)
    if principal.user.is_active:
        approving = Approval.objects.filter(approver__in=approver_names(principal)).order_by().values("run_id")
        keys = keys.union(approving, all=True)
    return Run.objects.filter(pk__in=keys)


def decidable_approvals(principal: Principal) -> QuerySet[Approval]:
    """The approvals this principal may decide: those naming them or one of their groups as
    approver, an active user (a read of the approver index per name)."""
    if principal.user is None or not principal.user.is_active:
        return Approval.objects.none()
    return Approval.objects.filter(approver__in=approver_names(principal))


def can_decide(principal: Principal, approval: Approval) -> bool:
    """The approver the approval names, or a member of the group it names; an active user."""
    if principal.user is None or not principal.user.is_active:
        return False
    named = Approver.parse(approval.approver)
    if named.group is None:
        return named.name == principal.id
    return named.group in principal.groups


def grant_approver(approval: Approval) -> None:
    """The approver may decide the approval and see its run: the approval names them, which is the
    grant (`can_decide`, `decidable_approvals`, `visible_runs`), so no permission row is written.
    A named group or person that has no row yet gets one (a person without a password, who cannot
    log in until given one): one read when it has."""
    approver_holder(approval.approver)


def revoke_approver(approval: Approval) -> None:
    """The approval's approver (`approval` as it was) may no longer decide it: a new policy holds it
    for someone else, and the approval now names them. The former approver keeps seeing its run:
    `runs.view_run` on it is granted to them (one row; granted again, nothing changes)."""
    holder = approver_holder(approval.approver)
    view_run = Permission.objects.get(content_type__app_label="runs", codename="view_run").pk
    if isinstance(holder, Group):
        RunGroupObjectPermission.objects.bulk_create([RunGroupObjectPermission(
            group=holder, permission_id=view_run, content_object_id=approval.run_id)], ignore_conflicts=True)
    else:
        RunUserObjectPermission.objects.bulk_create([RunUserObjectPermission(
            user=holder, permission_id=view_run, content_object_id=approval.run_id)], ignore_conflicts=True)


def approver_holder(approver: str) -> Any:
    named = Approver.parse(approver).group
    if named is not None:
        group, _ = Group.objects.get_or_create(name=named)
        return group
    User = get_user_model()
    user = User.objects.filter(username=approver).first()
    if user is None:
        user = User(username=approver)
        user.set_unusable_password()
        user.save()
    return user


__all__ = [
    "ApprovalGroupObjectPermission",
    "ApprovalUserObjectPermission",
    "Principal",
    "RunGroupObjectPermission",
    "RunUserObjectPermission",
]


def can_rerun(principal: Principal) -> bool:
    """May rerun and fork runs (and in bulk): operators with `runs.rerun_runs`."""
    return principal.has_global("runs.rerun_runs")


def check_can_rerun(principal: Principal) -> None:
    if can_rerun(principal):
        return
    raise permission_denied(f"{principal.id} may not rerun or fork runs: that takes runs.rerun_runs (operators)",
                            user=principal.id)
