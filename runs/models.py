"""The engine's tables: runs, their checkpointed steps, approvals, decision messages, the ledger."""
from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, router, transaction

from runs import ledger_chain
from runs.approvals.approver import Approver


class RunStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    WAITING = "waiting"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


ENDED_STATUSES = (RunStatus.FINISHED, RunStatus.FAILED, RunStatus.CANCELLED)


class Run(models.Model):
    """One durable execution of a workflow. The row is the truth; django-q2 only wakes it."""

    id = models.CharField(primary_key=True, max_length=200)
    workflow = models.CharField(max_length=200, db_index=True)
    app_version = models.CharField(max_length=200, db_index=True)
    input = models.JSONField()
    started_by = models.CharField(max_length=150, db_index=True)
    groups = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED)
    # What a waiting run waits for: sleep, approval, message, run, or "paused <target>".
    waiting_for = models.CharField(max_length=250, blank=True, default="")
    wake_at = models.DateTimeField(null=True, blank=True)
    result = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    lease_owner = models.CharField(max_length=200, blank=True, default="")
    lease_until = models.DateTimeField(null=True, blank=True)
    # Bumped by anything that should make a suspending advance look again (a decision, a cancel).
    signal_gen = models.IntegerField(default=0)
    # Set when the run asks its first approval: a run that never did skips loading approvals.
    has_approvals = models.BooleanField(default=False)
    # Set when a call's attempt failed and was recorded (op.attempt_failed): later advances load them.
    has_retries = models.BooleanField(default=False)
    # The run that started this one with `ctx.start_run` (None: started by a person or a schedule).
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    # The run this one reruns or forks (an operator's rerun or fork), "" for a fresh start.
    source_run = models.CharField(max_length=200, blank=True, default="", db_index=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField()
    updated_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "wake_at"], name="run_status_wake"),
            models.Index(fields=["status", "lease_until"], name="run_status_lease"),
            models.Index(fields=["workflow", "-created_at"], name="run_workflow_created"),
            models.Index(fields=["-created_at"], name="run_created"),
            # A list by status, newest first, from its first row however many wait (and status' lookups).
            models.Index(fields=["status", "-created_at", "-id"], name="run_status_created"),
            # The waiting runs by what they wait for (the list's filter, its count), and the runs a
            # pause holds: small indexes of the rows they name, never every parked run.
            models.Index(fields=["waiting_for", "-created_at"], condition=models.Q(status="waiting"),
                         name="run_waiting_for_created"),
            models.Index(fields=["waiting_for"], condition=models.Q(waiting_for__startswith="paused "),
                         name="run_paused"),
            # Retention's oldest ended runs first (runs.retention).
            models.Index(fields=["ended_at", "id"], name="run_ended", condition=models.Q(ended_at__isnull=False)),
        ]
        permissions = [
            ("view_any_run", "Can view every run (operator)"),
            ("operate_runs", "Can cancel runs and withdraw approvals (operator)"),
            ("send_message", "Can send messages to a run"),
            ("rerun_runs", "Can rerun and fork runs (operator)"),
            ("pause", "Can pause and unpause connectors, operations and workflows (operator)"),
        ]

    def __str__(self) -> str:
        return f"{self.workflow} {self.id} ({self.status})"

    @property
    def ended(self) -> bool:
        return self.status in ENDED_STATUSES


class StepKind(models.TextChoices):
    CALL = "call"
    SLEEP = "sleep"
    NOW = "now"
    WAIT = "wait"  # a wait for a message began: its topic and deadline
    MESSAGE = "message"  # the message a wait read (or its `wait_timed_out`)
    RUN_WAIT = "run_wait"  # a wait for a child run began: the child and the deadline
    RUN_END = "run_end"  # how the child ended, as the wait read it (or its `wait_timed_out`)
    TAG = "tag"  # ctx.tag: the business keys the run was tagged with
    PATCH = "patch"  # ctx.patched: whether the run took a patch's new path (True) or the old one
    CONTINUE = "continue"  # ctx.continue_as_new: the run starts afresh with this input; replay starts here


class Step(models.Model):
    """A checkpoint: the settled result of the call numbered `seq` in the run."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="steps")
    seq = models.IntegerField()
    kind = models.CharField(max_length=16, choices=StepKind.choices)
    name = models.CharField(max_length=200, blank=True, default="")
    output = models.JSONField(null=True, blank=True)
    error = models.JSONField(null=True, blank=True)
    decision = models.JSONField(null=True, blank=True)
    attempt = models.IntegerField(default=1)
    # The seq the next call takes: a held call's approvals take numbers of their own.
    next_seq = models.IntegerField()
    created_at = models.DateTimeField()

    class Meta:
        ordering = ["run", "seq"]
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="step_run_seq")]

    def __str__(self) -> str:
        return f"{self.run_id} #{self.seq} {self.kind} {self.name}"


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    # A held call that a newer policy allows: the approval is no longer needed (kept as evidence).
    RELEASED = "released"


class ApprovalRequester(models.TextChoices):
    WORKFLOW = "workflow"  # ctx.approval(...)
    POLICY = "policy"  # a policy held a call for this approver


class Decision(models.TextChoices):
    """What a person sends to an approval."""

    APPROVE = "approve"
    REJECT = "reject"


class MessageOutcome(models.TextChoices):
    """What the run made of a decision message when it applied it."""

    DECIDED = "decided"  # it decided the approval
    REFUSED = "refused"  # its sender may not decide it (recorded as approval.refused)
    IGNORED = "ignored"  # the approval was already decided or withdrawn


class Approval(models.Model):
    """A request for a person's or a group's decision, from the workflow or a policy hold."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="approvals")
    approval_id = models.CharField(max_length=40)
    seq = models.IntegerField()
    title = models.CharField(max_length=500)
    approver = models.CharField(max_length=200)
    requested_by = models.CharField(max_length=16, choices=ApprovalRequester.choices)
    covers = models.JSONField(default=list)
    links = models.JSONField(default=list)
    details = models.JSONField(null=True, blank=True)
    op = models.CharField(max_length=200, blank=True, default="")
    op_input = models.JSONField(null=True, blank=True)
    op_seq = models.IntegerField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING,
                              db_index=True)
    requested_at = models.DateTimeField()
    decided_by = models.CharField(max_length=150, blank=True, default="")
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True, default="")
    decided_with = models.CharField(max_length=200, blank=True, default="")
    refused = models.JSONField(default=list)
    # The policy's hold rules this approval was asked for (a Cedar `@approve` forbid's `@id`): it
    # lifts those only. Empty (`ctx.approval`, an approval asked before rules were kept): every hold
    # naming its approver.
    rules = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["-requested_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["run", "approval_id"], name="approval_run_id"),
            models.UniqueConstraint(fields=["run", "seq"], name="approval_run_seq"),
        ]
        # Who may decide an approval is the approver it names (runs.approvals.permissions): an
        # approver's inbox and badge read their names' entries, newest first, and stop at a page.
        indexes = [
            models.Index(fields=["approver", "-requested_at", "-id"], name="approval_approver_pending",
                         condition=models.Q(status="pending")),
            # ... and every approval naming them, with its run (the runs an approver may see: read
            # from the index alone on PostgreSQL).
            models.Index(fields=["approver", "-requested_at", "-id"], name="approval_approver", include=["run"]),
        ]
        permissions = [("decide_approval", "Can decide this approval")]

    def __str__(self) -> str:
        return f"{self.title} ({self.approval_id} of {self.run_id}, {self.status})"

    @property
    def approver_group(self) -> str | None:
        return Approver.parse(self.approver).group


class DecisionMessage(models.Model):
    """A decision sent to a run, applied by the run in arrival order. The message id dedupes."""

    approval = models.ForeignKey(Approval, on_delete=models.PROTECT, related_name="messages")
    message_id = models.CharField(max_length=200)
    # Kept as sent: a message that is not a decision is refused when the run applies it, and recorded.
    decision = models.CharField(max_length=16)
    by = models.CharField(max_length=150)
    groups = models.JSONField(default=list)
    note = models.TextField(blank=True, default="")
    sent_at = models.DateTimeField()
    applied = models.BooleanField(default=False)
    outcome = models.CharField(max_length=16, blank=True, default="", choices=MessageOutcome.choices)

    class Meta:
        ordering = ["id"]
        constraints = [models.UniqueConstraint(fields=["approval", "message_id"], name="message_approval_id")]

    def __str__(self) -> str:
        return f"{self.decision} by {self.by} ({self.message_id})"


class RunMessage(models.Model):
    """A message sent to a run on a topic; the run reads each topic's messages in arrival order.

    `read_seq` is the seq of the `ctx.wait_message` step that read it (None: not read yet). The
    message id dedupes: the same id sent twice is kept once.
    """

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="run_messages")
    topic = models.CharField(max_length=200)
    payload = models.JSONField()
    message_id = models.CharField(max_length=200)
    sent_by = models.CharField(max_length=150)
    sent_at = models.DateTimeField()
    read_seq = models.IntegerField(null=True, blank=True)
    read_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["run", "topic", "read_seq"], name="run_message_unread")]
        constraints = [models.UniqueConstraint(fields=["run", "message_id"], name="run_message_id")]

    def __str__(self) -> str:
        return f"{self.topic} to {self.run_id} by {self.sent_by} ({self.message_id})"


class AppendOnlyQuerySet(models.QuerySet):
    def update(self, **kwargs: Any) -> int:
        raise PermissionError("The ledger is append-only: records are never updated")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise PermissionError("The ledger is append-only: records are never deleted")


class LedgerKind(models.TextChoices):
    """Every kind of ledger record; a record's `type` on the wire."""

    RUN_STARTED = "run.started"
    RUN_FINISHED = "run.finished"
    RUN_FAILED = "run.failed"
    RUN_CANCELLED = "run.cancelled"
    OP_CALLED = "op.called"  # a call: its decision, input, output or error
    SLEEP_STARTED = "sleep.started"
    APPROVAL_REQUESTED = "approval.requested"
    APPROVAL_DECIDED = "approval.decided"
    APPROVAL_REFUSED = "approval.refused"  # a decision from someone who may not decide it
    APPROVAL_WITHDRAWN = "approval.withdrawn"
    MESSAGE_RECEIVED = "message.received"  # the run read a message (topic, payload, by, message id)
    CHILD_STARTED = "run.child_started"  # ctx.start_run started a child run (its id, workflow, input, decision)
    CHILD_ENDED = "run.child_ended"  # ctx.wait_run read how a child ended (its output or error)
    RUN_TAGGED = "run.tagged"  # ctx.tag: business keys to find the run by
    OP_ATTEMPT_FAILED = "op.attempt_failed"  # an attempt of a call failed; it is tried again at next_at
    OP_INTENT = "op.intent"  # a call whose vendor ignores idempotency keys is about to be sent
    OP_RESOLVED = "op.resolved"  # an in-doubt call was settled: it happened (with its output) or not, and by whom
    RUN_FORKED = "run.forked"  # an operator forked a run: the source, the step it forks from, the steps reused
    RUN_MIGRATED = "run.migrated"  # a deploy proved the run on new code and moved it: from, to, steps replayed
    RUN_PINNED = "run.pinned"  # a deploy could not prove the run on new code: it stays on its version, and why
    APPROVAL_RELEASED = "approval.released"  # a new policy allows a held call: its approval is no longer needed
    APPROVAL_REASSIGNED = "approval.reassigned"  # a new policy holds a call for another approver
    RUN_CONTINUED = "run.continued"  # ctx.continue_as_new: the run starts afresh (its new input, generation)


class LedgerRecord(models.Model):
    """One audit record. Ids are deterministic (`<run>:<kind>:<seq>`), so the first write wins."""

    record_id = models.CharField(max_length=300, unique=True)
    run_id = models.CharField(max_length=200)  # indexed by (run_id, seq) and (run_id, chain_index)
    seq = models.IntegerField()
    v = models.IntegerField(default=1)
    app = models.CharField(max_length=200)
    at = models.BigIntegerField()
    actor = models.CharField(max_length=150)
    workflow = models.CharField(max_length=200)
    kind = models.CharField(max_length=40, choices=LedgerKind.choices)
    body = models.JSONField(default=dict)
    group = models.JSONField(null=True, blank=True)
    # The run's hash chain (see runs.ledger): position, the previous record's hash, this record's.
    chain_index = models.IntegerField(default=0)
    prev_hash = models.CharField(max_length=64, default="", blank=True)
    hash = models.CharField(max_length=64, default="")

    objects = AppendOnlyQuerySet.as_manager()

    class Meta:
        ordering = ["run_id", "seq", "id"]
        indexes = [models.Index(fields=["run_id", "seq"], name="ledger_run_seq")]
        constraints = [models.UniqueConstraint(fields=["run_id", "chain_index"], name="ledger_run_chain")]

    def __str__(self) -> str:
        return self.record_id

    def save(self, *args: Any, **kwargs: Any) -> None:
        if not self._state.adding:
            raise PermissionError("The ledger is append-only: records are never updated")
        using = kwargs.get("using") or router.db_for_write(type(self), instance=self)
        with transaction.atomic(using=using, savepoint=False):  # the link and its insert together
            ledger_chain.prepare(self, using)
            super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> Any:
        raise PermissionError("The ledger is append-only: records are never deleted")

    def as_dict(self) -> dict[str, Any]:
        record = {
            "v": self.v,
            "app": self.app,
            "id": self.record_id,
            "run_id": self.run_id,
            "seq": self.seq,
            "at": self.at,
            "actor": self.actor,
            "workflow": self.workflow,
            "type": self.kind,
            **self.body,
        }
        if self.group is not None:
            record["group"] = self.group
        return record


class RunTag(models.Model):
    """A business key a run tagged itself with (`ctx.tag(order="1001")`): what operators search by."""

    run = models.ForeignKey(Run, on_delete=models.PROTECT, related_name="tags")
    key = models.CharField(max_length=100)
    value = models.CharField(max_length=200)

    class Meta:
        ordering = ["run", "key"]
        constraints = [models.UniqueConstraint(fields=["run", "key"], name="run_tag_key")]
        indexes = [models.Index(fields=["key", "value"], name="run_tag_lookup")]

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


class PauseKind(models.TextChoices):
    CONNECTOR = "connector"  # every operation of a vendor
    OPERATION = "operation"  # one operation
    WORKFLOW = "workflow"  # new starts of a workflow


class Pause(models.Model):
    """An operator's pause of a connector, an operation or a workflow, kept after it is lifted:
    who paused and why, who unpaused and when. At most one active pause per target."""

    kind = models.CharField(max_length=16, choices=PauseKind.choices)
    target = models.CharField(max_length=200)
    reason = models.TextField()
    paused_by = models.CharField(max_length=150)
    paused_at = models.DateTimeField()
    unpaused_by = models.CharField(max_length=150, blank=True, default="")
    unpaused_at = models.DateTimeField(null=True, blank=True)
    unpause_reason = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-paused_at", "-id"]
        constraints = [models.UniqueConstraint(fields=["kind", "target"], condition=models.Q(unpaused_at__isnull=True),
                                               name="pause_one_active")]

    def __str__(self) -> str:
        state = "active" if self.unpaused_at is None else "lifted"
        return f"{self.kind} {self.target} paused by {self.paused_by} ({state})"

    @property
    def active(self) -> bool:
        return self.unpaused_at is None


class OperatorPreference(models.Model):
    """How one person wants the desk: the time zone its pages show moments in ("" = the site's)."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sanoma_preference")
    time_zone = models.CharField(max_length=64, blank=True, default="")

    def __str__(self) -> str:
        return f"{self.user} ({self.time_zone or 'the site time zone'})"


class PresenceRole(models.TextChoices):
    WORKER = "worker"  # `manage.py worker`: advances the runs of its version
    SUPERVISOR = "supervisor"  # `manage.py supervise`: starts a worker when a run becomes runnable


class WorkerPresence(models.Model):
    """A worker (or a supervisor) saying it is up: one row a process, its `seen_at` renewed every
    few seconds on the database's clock (hosts' clocks may differ), removed when it stops. A row
    not renewed for a while belongs to a process that died. See `runs.presence`."""

    name = models.CharField(primary_key=True, max_length=200, help_text="host:pid")
    role = models.CharField(max_length=16, choices=PresenceRole.choices)
    host = models.CharField(max_length=200)
    pid = models.IntegerField()
    version = models.CharField(max_length=200, blank=True, default="", help_text="the app version it runs")
    started_at = models.DateTimeField()
    seen_at = models.DateTimeField()

    class Meta:
        db_table = "sanoma_worker_presence"
        ordering = ["role", "name"]
        verbose_name = "worker presence"

    def __str__(self) -> str:
        return f"{self.role} {self.name} ({self.version or '-'})"


class CollectionRecord(models.Model):
    """One record of a company's collection (`ctx.data.<name>`), by key. `version` counts its
    puts: a put with `if_version` replaces it only while it is still that version."""

    collection = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    record = models.JSONField()
    version = models.IntegerField()
    updated_at = models.DateTimeField()
    updated_by_run = models.CharField(max_length=200, blank=True, default="")

    class Meta:
        ordering = ["collection", "key"]
        constraints = [models.UniqueConstraint(fields=["collection", "key"], name="collection_record_key")]

    def __str__(self) -> str:
        return f"{self.collection}/{self.key} (v{self.version})"


class CollectionWrite(models.Model):
    """The reply of each collection write, by its idempotency key: a write retried with the same
    key returns the first reply and changes nothing."""

    idempotency_key = models.CharField(max_length=300, unique=True)
    collection = models.CharField(max_length=200)
    key = models.CharField(max_length=200)
    reply = models.JSONField()
    written_at = models.DateTimeField()

    def __str__(self) -> str:
        return self.idempotency_key


class AppVersion(models.Model):
    """The versions workers have run; the latest one takes runs started without a version."""

    version = models.CharField(max_length=200, unique=True)
    first_started_at = models.DateTimeField()
    promoted_at = models.DateTimeField()
    # Where this version's code came from: the config root's git commit ("" outside git) and path.
    commit = models.CharField(max_length=64, blank=True, default="")
    root = models.CharField(max_length=1000, blank=True, default="")
    # Each workflow's own version at this deploy ({workflow: "<workflow>@<hash>"}).
    workflows = models.JSONField(default=dict, blank=True)
    policy_version = models.CharField(max_length=200, blank=True, default="")
    # Set when no unfinished run needs this version any more and its on-demand code was removed.
    retired_at = models.DateTimeField(null=True, blank=True)
    # Why an on-demand worker for this version could not be started ("" when it could).
    worker_error = models.TextField(blank=True, default="")

    class Meta:
        ordering = ["-promoted_at"]

    def __str__(self) -> str:
        return self.version


class WorkflowEntry(models.Model):
    """A workflow of the config, as a row: what start permissions are granted on."""

    name = models.CharField(max_length=200, unique=True)
    title = models.CharField(max_length=300, blank=True, default="")
    app = models.CharField(max_length=100, blank=True, default="")

    class Meta:
        ordering = ["name"]
        # Its list and guardian's page are where starting a workflow is granted; the catalog's
        # "Workflows" is the list of workflows.
        verbose_name = "who may start a workflow"
        verbose_name_plural = "who may start workflows"
        permissions = [("start_workflow", "Can start this workflow")]

    def __str__(self) -> str:
        return self.name


# The last ledger verify, kept (runs.health): its table is this app's.
# The outbox of approval announcements (runs.approvals.announce).
from runs.approvals.announce_models import ApprovalAnnouncement  # noqa: E402,F401
from runs.health.models import LedgerVerification  # noqa: E402,F401

# Rate and concurrency limits across workers (runs.limits).
from runs.limits.models import LimitCursor, LimitHold, LimitOverride, LimitSlot  # noqa: E402,F401

# The guardian tables live in a module of their own; importing them here registers them with the app.
from runs.object_permissions import (  # noqa: E402,F401
    ApprovalGroupObjectPermission,
    ApprovalUserObjectPermission,
    RunGroupObjectPermission,
    RunUserObjectPermission,
    WorkflowEntryGroupObjectPermission,
    WorkflowEntryUserObjectPermission,
)

# Retention's record of the runs it exported and removed (runs.retention).
from runs.retention.models import PrunedRun  # noqa: E402,F401

# A sandbox run's scenario, fakes' books and checks (runs.sandbox).
from runs.sandbox.models import SandboxRun  # noqa: E402,F401

# The money calls counted toward spend limits (runs.spend).
from runs.spend.models import SpendEntry, SpendLock  # noqa: E402,F401
