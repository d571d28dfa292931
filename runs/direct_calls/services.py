"""A direct call: one operation called outside any workflow, on every surface through `call` below.

The call is checked before anything is written (who calls, the operation, its input: each refusal
names what is wrong and leaves nothing behind), then started as a run of the built-in `call`
workflow (`runs.direct_calls.workflow`) and advanced in this process, so the policy is asked, an
approval is asked when it holds the call, and the vendor's reply (or its error) lands in the
ledger like any workflow's call:

- allowed: the call is made now; the answer is `made`, with the reply;
- held: the run waits for its approver; the answer is `held`, naming the run and the approval, and
  a worker makes the call once it is approved (the answer to the same call asked again is then
  `made`);
- denied, or its approval rejected or withdrawn: `CallRefused` (`policy_denied`,
  `approval_rejected`, `approval_withdrawn`), with the reason and the run id;
- failed at the vendor: `CallFailed`, the vendor's error (its code kept) with the run id;
- anything else (a retry due later, a call in doubt, a paused operation, a worker that took the run
  first): `under_way`, naming the run to follow.

A `key` makes the call idempotent: it names the run (`call-<key>`), so asking again with the same
key and call answers that run as it stands and never calls the vendor twice (the driver's own
idempotency key is the run's, the same on every try). The same key with another operation, input
is `invalid_input` naming what differs; a key another caller used is `run_exists` (HTTP 409), whether
or not this caller may see that call.
"""
from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from connectors.errors import ErrorCode, InvalidInput, IssueCode, SanomaError, error_from_dict, input_issue
from connectors.operations import Operation
from runs import services as run_services
from runs.approvals.permissions import Principal, check_can_start, permission_denied, principal_of
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.direct_calls.workflow import CALL_WORKFLOW, directly_callable
from runs.engine.calls import policy_words
from runs.engine.requests import parse_op_input
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Run, RunStatus
from runs.selectors import waiting_on
from runs.validation import RUN_ID_RULE, is_valid_run_id
from runs.waiting import run_here

KEY_PREFIX = "call-"
MAX_KEY = 200 - len(KEY_PREFIX)
# How long a call waits for a run another process holds (a worker took it first) before answering `under_way`.
SETTLE_SECONDS = 5.0
SETTLE_POLL = 0.1

REFUSED_CODES = (ErrorCode.POLICY_DENIED, RunCode.APPROVAL_REJECTED, RunCode.APPROVAL_WITHDRAWN)


class Outcome:
    MADE = "made"
    HELD = "held"
    UNDER_WAY = "under_way"


@dataclass(frozen=True)
class CallAnswer:
    """What became of a direct call that was not refused: made (with its output), held for an
    approval, or under way; always with the run that holds its ledger."""

    outcome: str
    op: str
    run_id: str
    output: Any = None
    approvals: list[dict[str, Any]] = field(default_factory=list)
    waiting_for: str = ""
    repeated: bool = False  # the same key was asked before: this is that call's answer

    @property
    def message(self) -> str:
        if self.outcome == Outcome.MADE:
            return f"{self.op} was called (run {self.run_id})"
        if self.outcome == Outcome.HELD:
            named = ", ".join(f"{a['approver']} ({a['approval_id']})" for a in self.approvals) or "an approver"
            return (f"{self.op} is held for approval by {named}: run {self.run_id} makes the call once it is "
                    "approved")
        why = f" ({self.waiting_for})" if self.waiting_for else ""
        return f"{self.op} is under way{why}: follow run {self.run_id}"

    def to_dict(self) -> dict[str, Any]:
        body: dict[str, Any] = {"outcome": self.outcome, "op": self.op, "run_id": self.run_id,
                                "message": self.message, "repeated": self.repeated}
        if self.outcome == Outcome.MADE:
            body["output"] = self.output
        if self.outcome == Outcome.HELD:
            body["approvals"] = self.approvals
            body["approver"] = ", ".join(a["approver"] for a in self.approvals)
        if self.outcome == Outcome.UNDER_WAY:
            body["waiting_for"] = self.waiting_for
        return body


class CallRefused(SanomaError):
    """The policy denied the call, or its approver rejected it (or it was withdrawn): nothing was sent."""


class CallFailed(SanomaError):
    """The vendor (or its driver) failed the call; the error keeps the vendor's code."""


def _key_run_id(key: Any) -> str | None:
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > MAX_KEY or not is_valid_run_id(KEY_PREFIX + key):
        rule = RUN_ID_RULE.replace("a run id is 1-200", f"a key is 1-{MAX_KEY}")
        raise InvalidInput(f"The key is not valid: {rule}",
                           data={"issues": [input_issue(["key"], rule, IssueCode.INVALID)]})
    return KEY_PREFIX + key


def _operation(config: ResolvedConfig, op_id: Any) -> Operation:
    ops = directly_callable(config.ops)
    found = ops.get(op_id) if isinstance(op_id, str) else None
    if found is not None:
        return found
    if not isinstance(op_id, str) or not op_id.strip():
        raise InvalidInput("Name the operation to call: op is <vendor>.<resource>.<name>, e.g. shop.order.get",
                           data={"issues": [input_issue(["op"], "required: the operation's id", IssueCode.REQUIRED)]})
    why = ("is the runtime's own, called only by its built-in workflows" if op_id in config.ops
           else "is not an operation of this config")
    near = [known for known in ops if known.startswith(op_id.rsplit(".", 1)[0] + ".")] or list(ops)
    shown = ", ".join(near[:8]) + (", ..." if len(near) > 8 else "")
    raise InvalidInput(f"{op_id!r} {why}; the operations that may be called directly include {shown}",
                       data={"issues": [input_issue(["op"], f"{why}", IssueCode.NOT_FOUND)]})


def _parsed_input(op: Operation, payload: Any) -> dict[str, Any]:
    if payload is None:
        payload = {}
    if not isinstance(payload, dict):
        raise InvalidInput(f"The input to {op.id} is a JSON object",
                           data={"op": op.id, "issues": [input_issue(["input"], "must be an object")]})
    try:
        parse_op_input(op, payload)
    except InvalidInput as err:
        issues = [{**issue, "path": ["input", *issue.get("path", [])]} for issue in err.data.get("issues", [])]
        raise InvalidInput(err.message, data={"op": op.id, "issues": issues}) from None
    return payload


def check_call(*, op: Any, input: Any, by: Any, key: Any = None,
               config: ResolvedConfig | None = None) -> tuple[Operation, dict[str, Any], Principal, str | None]:
    """Everything a direct call is refused for before it starts, writing nothing: the caller (who
    must be a user that may start the `call` workflow), the key, the operation and its input."""
    config = config or get_config()
    if CALL_WORKFLOW not in config.workflows:
        raise InvalidInput("This config has no operation that may be called directly",
                           data={"issues": [input_issue(["op"], "no operation may be called directly",
                                                        IssueCode.NOT_FOUND)]})
    if not isinstance(by, (str, Principal)) and by is not None and not hasattr(by, "get_username"):
        by = None
    if by is None or (isinstance(by, str) and not by.strip()):
        raise InvalidInput("A direct call needs the username of who makes it",
                           data={"issues": [input_issue(["as"], "must be a non-blank username", IssueCode.REQUIRED)]})
    principal = principal_of(by)
    try:
        check_can_start(principal, CALL_WORKFLOW)
    except SanomaError as err:
        if principal.user is None:
            raise
        raise permission_denied(f"{principal.id} may not make direct calls: that takes starting the "
                                f"{CALL_WORKFLOW} workflow (runs.start_workflow)",
                                user=principal.id, workflow=CALL_WORKFLOW) from err
    run_id = _key_run_id(key)
    operation = _operation(config, op)
    payload = _parsed_input(operation, input)
    return operation, payload, principal, run_id


def call(*, op: str, input: Any, by: str | Principal, key: str | None = None, wait: float = 0.0,
         config: ResolvedConfig | None = None, on_wait: Callable[[str], None] | None = None) -> CallAnswer:
    """Call `op` with `input` as `by`, outside any workflow (see the module's text for the answers).

    With `wait`, a held call is waited for (up to that many seconds, advancing its run here when its
    approval comes) before answering; `on_wait` is told, in a line, what it waits for as the wait
    begins. A refusal or failure raises `CallRefused`/`CallFailed`. No transaction is held while it
    waits: other processes read and write the database as usual."""
    config = config or get_config()
    operation, payload, principal, run_id = check_call(op=op, input=input, by=by, key=key, config=config)
    try:
        run, created = run_services.start_or_get(workflow=CALL_WORKFLOW, input={"op": operation.id, "input": payload},
                                                 started_by=principal, run_id=run_id, config=config)
    except InvalidInput as err:
        if "differs" in err.data and run_id is not None:
            named = {"workflow": "op", "startedBy": "caller"}
            differs = [named.get(d, d) for d in err.data["differs"]]
            if "caller" in differs:
                # Another caller's key: taken (409), as for a caller who may not see that call.
                raise SanomaError(f"The key {key} is taken by another caller's call (run {run_id}); use another key",
                                  code=RunCode.RUN_EXISTS, data={"run_id": run_id, "key": key}) from None
            first = Run.objects.filter(pk=run_id).values_list("input", flat=True).first() or {}
            if "input" in differs and isinstance(first, dict) and first.get("op") != operation.id:
                differs[differs.index("input")] = "op"
            raise InvalidInput(f"The key {key} was used for another call (a different {', '.join(differs)}); "
                               "use another key", data={"differs": differs, "run_id": run_id,
                                                        "issues": [input_issue(["key"], "used for another call")]}
                               ) from None
        raise
    except SanomaError as err:
        if err.code == RunCode.RUN_EXISTS and run_id is not None:
            raise SanomaError(f"The key {key} is taken by a call you may not see; use another key",
                              code=RunCode.RUN_EXISTS, data={"run_id": run_id}) from None
        raise
    if run.status in (RunStatus.QUEUED, RunStatus.WAITING):
        run = run_here(run, config)
        if wait > 0 and run.status not in ENDED_STATUSES:
            run = _settled(run)  # a worker that took the run first holds it a moment
        if wait > 0 and run.status not in ENDED_STATUSES:
            if on_wait is not None:
                on_wait(f"waiting up to {wait:g} s for {waited_for(run)} (run {run.id}) ...")
            run = run_here(run, config, seconds=wait)  # a worker, or this process, makes the call once approved
    run = _settled(run)
    return answer_of(run, op=operation.id, repeated=not created)


def waited_for(run: Run) -> str:
    """What a waiting call's run waits for, in words: its approvals by title and approver, else its wait."""
    waiting = waiting_on(run) or {}
    if waiting.get("kind") == "approval" and waiting.get("approvals"):
        return " and ".join(f"approval '{a.get('title') or a['approval_id']}' by {a['approver']}"
                            for a in waiting["approvals"])
    return re.sub(r"_", " ", str(waiting.get("kind") or run.waiting_for or run.status))


def _settled(run: Run) -> Run:
    """The run once no process holds it (a worker may have taken it before this one), within SETTLE_SECONDS."""
    deadline = time.monotonic() + SETTLE_SECONDS
    while run.status == RunStatus.RUNNING and time.monotonic() < deadline:
        time.sleep(SETTLE_POLL)
        run.refresh_from_db()
    return run


def answer_of(run: Run, *, op: str, repeated: bool = False) -> CallAnswer:
    """The answer a direct call's run gives as it stands; a refusal or failure raised."""
    if run.status == RunStatus.FINISHED:
        return CallAnswer(Outcome.MADE, op, run.id, output=run.result, repeated=repeated)
    if run.status == RunStatus.FAILED:
        recorded = error_from_dict(run.error or {"message": f"run {run.id} failed"})
        data = {**(recorded.data if isinstance(recorded.data, dict) else {}), "run_id": run.id, "op": op}
        if recorded.code == ErrorCode.POLICY_DENIED and isinstance(data.get("reason"), str):
            data["reason"] = policy_words(op, data["reason"])  # the message says the rest
        kind = CallRefused if recorded.code in REFUSED_CODES else CallFailed
        err = kind(f"{recorded.message} (run {run.id})", code=recorded.code, data=data, name=recorded.name)
        for attribute in ("retryable", "status", "vendor_code"):
            if hasattr(recorded, attribute):
                setattr(err, attribute, getattr(recorded, attribute))
        raise err
    if run.status == RunStatus.CANCELLED:
        raise CallRefused(f"The call's run {run.id} was cancelled", code=RunCode.RUN_CANCELLED,
                          data={"run_id": run.id, "op": op})
    waiting = waiting_on(run) or {}
    if waiting.get("kind") == "approval" and waiting.get("approvals"):
        return CallAnswer(Outcome.HELD, op, run.id, approvals=list(waiting["approvals"]), repeated=repeated)
    described = re.sub(r"_", " ", str(waiting.get("kind") or run.waiting_for or run.status))
    return CallAnswer(Outcome.UNDER_WAY, op, run.id, waiting_for=described, repeated=repeated)


__all__ = ["CallAnswer", "CallFailed", "CallRefused", "Outcome", "answer_of", "call", "check_call", "waited_for"]
