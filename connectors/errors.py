"""Errors with machine-readable codes, shared by every layer.

Code branches on `error_code(err)`, never on the class: an error replayed from a checkpoint is a
copy (a `SanomaError` carrying the recorded code and name), not an instance of the original class.
"""
from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Every code the runtime puts on an error. Code branches on these, never on an error's class.

    A code is a plain string on the wire (API bodies, the ledger), so `ErrorCode.RUN_ENDED ==
    "run_ended"`; this enum is the one list of them.
    """

    # a request was refused before anything happened
    INVALID_INPUT = "invalid_input"  # the input (or an argument) does not have the expected shape
    PERMISSION_DENIED = "permission_denied"  # the caller may not do this
    NOT_AUTHENTICATED = "not_authenticated"  # the API caller did not say who they are
    UNSUPPORTED_MEDIA_TYPE = "unsupported_media_type"  # the API body is not JSON
    TOO_LARGE = "too_large"  # the request body is over the limit (SANOMA_MAX_BODY_BYTES)
    NOT_FOUND = "not_found"  # no such API endpoint, collection, or record in a collection
    CONFLICT = "conflict"  # a compare-and-set write found another version: nothing was changed
    CONFIG_INVALID = "config_invalid"  # the company's config cannot be resolved
    # credentials
    UNKNOWN_CREDENTIAL = "unknown_credential"  # no connector declares a variable of that name
    SECRET_MISSING = "secret_missing"  # a secret a data file names has no value
    SECRETS_KEY_MISSING = "secrets_key_missing"  # storing a value needs SANOMA_SECRETS_KEY
    # runs
    RUN_NOT_FOUND = "run_not_found"  # no such run, or the caller may not see it
    RUN_EXISTS = "run_exists"  # starting with a run id already taken by a run the caller may not see
    RUN_ENDED = "run_ended"  # the run has ended: no more calls, cancels or decisions
    RUN_RUNNING = "run_running"  # the run has not ended yet (asking for its result)
    NO_WORKER = "no_worker"  # a command would wait for a run no worker is up to advance: nothing was started
    RUN_CANCELLED = "run_cancelled"  # the run was cancelled
    WORKFLOW_NOT_FOUND = "workflow_not_found"  # no workflow of that name (in this version)
    REPLAY_DIVERGED = "replay_diverged"  # the workflow no longer makes the calls it made before
    CALL_NOT_IN_OUTLINE = "call_not_in_outline"  # a ctx call from code the workflow's outline does not show
    BAD_RETURN_VALUE = "bad_return_value"  # the workflow returned something that is not JSON
    WAIT_TIMED_OUT = "wait_timed_out"  # ctx.wait_message's deadline passed before a message came
    # calls
    POLICY_DENIED = "policy_denied"  # the policy denied the call
    POLICY_FAILED = "policy_failed"  # the policy raised or answered something that is not a decision
    DRIVER_FAILED = "driver_failed"  # the vendor said no, or the driver failed
    DRIVER_TIMEOUT = "driver_timeout"  # the vendor did not answer within the call's timeout
    NO_DRIVER = "no_driver"  # the operation has no driver in this config
    LEDGER_WRITE_FAILED = "ledger_write_failed"  # the vendor acted but the ledger could not record it
    # approvals
    APPROVAL_REJECTED = "approval_rejected"
    APPROVAL_WITHDRAWN = "approval_withdrawn"
    NOT_APPROVER = "not_approver"  # the decider is not the approval's approver
    NO_PENDING_APPROVAL = "no_pending_approval"  # nothing (or not that approval) waits for a decision
    ALREADY_DECIDED = "already_decided"
    # changes (the repo's remote)
    BRANCH_NOT_FOUND = "branch_not_found"  # the remote has no such branch (or pull request)
    MERGE_CONFLICT = "merge_conflict"  # the branch does not merge cleanly: data.files names the files
    HEAD_CHANGED = "head_changed"  # the branch moved since its checks: nothing was merged
    NOT_MERGEABLE = "not_mergeable"  # the remote refuses the merge (closed, required reviews or checks)
    CHECKS_FAILED = "checks_failed"  # a change's checks failed on its head
    WEBHOOK_NOT_CONFIGURED = "webhook_not_configured"  # a webhook came, and the site has no secret to check it
    BAD_SIGNATURE = "bad_signature"  # a webhook's signature does not match its body and the site's secret
    # declared state
    APPLY_INCOMPLETE = "apply_incomplete"  # an apply ended with changes of its plan not made: data counts them


KNOWN_CODES = frozenset(code.value for code in ErrorCode)


class SanomaError(Exception):
    """An error the runtime raises on purpose: a `code`, a message and JSON-safe `data`."""

    code: str | None = None

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        data: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        self.message = message
        self.data: dict[str, Any] = dict(data or {})
        self.name = name or type(self).__name__

    def __str__(self) -> str:
        return self.message


class InvalidInput(SanomaError):
    code = ErrorCode.INVALID_INPUT


class ProblemKind(StrEnum):
    """What kind of thing stops a config from resolving (each has its own system check id)."""

    ROOT = "root"  # the config root is missing or cannot be imported as a package
    WORKFLOW_IMPORT = "workflow_import"  # a workflow file does not import
    POLICY = "policy"  # a policy file is invalid
    CONFIG_FILE = "config_file"  # sanoma_config.py does not import, or its `config` is not valid
    OPERATIONS = "operations"  # connectors, drivers and workflows do not line up
    WORKFLOW_NAMES = "workflow_names"  # two workflows share a name, or one takes a built-in's
    HALVES = "halves"  # a connector's driver or fake cannot be made
    OUTLINE = "outline"  # a workflow's body holds what its outline cannot draw
    OTHER = "other"


class Problem(str):
    """One reason a config cannot be resolved: a sentence (the `str` itself) that also knows its
    kind and, where there is one, the file (relative to the config root) and line it is about."""

    kind: ProblemKind
    file: str | None
    line: int | None

    def __new__(cls, text: str, *, kind: ProblemKind = ProblemKind.OTHER, file: str | None = None,
                line: int | None = None) -> Problem:
        problem = super().__new__(cls, text)
        problem.kind = kind
        problem.file = file
        problem.line = line
        return problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (_problem, (str(self), self.kind, self.file, self.line))


def _problem(text: str, kind: ProblemKind, file: str | None, line: int | None) -> Problem:
    return Problem(text, kind=kind, file=file, line=line)


class ConfigError(SanomaError):
    """The company's config cannot be resolved; the message lists every problem."""

    code = ErrorCode.CONFIG_INVALID

    def __init__(self, problems: list[str]) -> None:
        # A plain sentence is a problem of no known kind; a `Problem` keeps its kind and place.
        self.problems: list[Problem] = [p if isinstance(p, Problem) else Problem(p) for p in problems]
        if len(problems) == 1:
            text = f"The config cannot be resolved: {problems[0]}"
        else:
            text = "The config cannot be resolved:\n" + "\n".join(f"- {p}" for p in problems)
        super().__init__(text, data={"problems": [str(p) for p in self.problems]})


class DriverError(SanomaError):
    """A vendor said no. `retryable` says whether trying again may succeed; left out, it follows the
    HTTP `status` (408, 429 and 5xx may succeed later: `retryable_status`), and without a status the
    answer is final."""

    code: str | None = ErrorCode.DRIVER_FAILED

    def __init__(
        self,
        message: str,
        *,
        retryable: bool | None = None,
        status: int | None = None,
        vendor_code: str | None = None,
        cause: BaseException | None = None,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = bool(retryable) if retryable is not None else (
            status is not None and retryable_status(status))
        self.status = status
        self.vendor_code = vendor_code
        # Seconds the vendor asked to wait before trying again (its `Retry-After`): honoured by the retry.
        if retry_after is not None and (isinstance(retry_after, bool) or not isinstance(retry_after, (int, float))
                                        or retry_after < 0):
            raise ValueError(f"retry_after must be a number of seconds, not negative; got {retry_after!r}")
        self.retry_after = None if retry_after is None else float(retry_after)
        if cause is not None:
            self.__cause__ = cause


class DriverTimeout(DriverError):
    """The vendor did not answer within the call's timeout: the call was abandoned."""

    code = ErrorCode.DRIVER_TIMEOUT


class RemoteError(DriverError):
    """A repository's remote said no, with a code of its own (`merge_conflict`, `head_changed`,
    `branch_not_found`, `not_mergeable`, or `driver_failed`) and JSON-safe `data` (the files in
    conflict, the head it found)."""

    def __init__(self, message: str, *, code: str = ErrorCode.DRIVER_FAILED, retryable: bool = False,
                 data: dict[str, Any] | None = None, status: int | None = None,
                 retry_after: float | None = None, cause: BaseException | None = None) -> None:
        super().__init__(message, retryable=retryable, status=status, retry_after=retry_after, cause=cause)
        self.code = code
        self.data = dict(data or {})


def retryable_status(status: int) -> bool:
    """The HTTP rule: 408, 429 and 5xx may succeed on a later try."""
    return status in (408, 429) or 500 <= status <= 599


def error_code(err: BaseException | None) -> ErrorCode | None:
    """The error's code when it is one the runtime knows, else None."""
    code = getattr(err, "code", None)
    return ErrorCode(code) if isinstance(code, str) and code in KNOWN_CODES else None


def error_to_dict(err: BaseException) -> dict[str, Any]:
    """An error as the ledger records it.

    Vendor `status`/`vendor_code` only from a DriverError and `data` only from the runtime's own
    errors, so an HTTP client error escaping a driver cannot leak the vendor's reply.
    """
    record: dict[str, Any] = {}
    code = error_code(err)
    if code:
        record["code"] = code
    record["name"] = getattr(err, "name", None) or type(err).__name__
    record["message"] = str(err)
    retryable = getattr(err, "retryable", None)
    if isinstance(retryable, bool):
        record["retryable"] = retryable
    if code == ErrorCode.DRIVER_FAILED:
        if getattr(err, "status", None) is not None:
            record["status"] = err.status  # type: ignore[attr-defined]
        if getattr(err, "vendor_code", None) is not None:
            record["vendor_code"] = err.vendor_code  # type: ignore[attr-defined]
    if isinstance(err, SanomaError) and err.data and code:
        record["data"] = err.data
    return record


def error_from_dict(record: dict[str, Any]) -> SanomaError:
    """The copy of a recorded error that a replay raises: same code, name, message and data."""
    err = SanomaError(
        record.get("message", ""),
        code=record.get("code"),
        data=record.get("data"),
        name=record.get("name"),
    )
    if "retryable" in record:
        err.retryable = record["retryable"]  # type: ignore[attr-defined]
    if "status" in record:
        err.status = record["status"]  # type: ignore[attr-defined]
    if "vendor_code" in record:
        err.vendor_code = record["vendor_code"]  # type: ignore[attr-defined]
    return err


def input_issue(path: Sequence[Any], message: str, code: str = "invalid") -> dict[str, Any]:
    """One thing wrong with an input, as the `issues` of an error's data carry it: where (`path`,
    the keys and indexes down to it; empty for the whole input), what, and a short code."""
    return {"path": list(path), "message": message, "code": code}


def issues_of(validation_error: Any) -> list[dict[str, Any]]:
    """Pydantic validation errors as `{path, message, code}` issues (no symbols)."""
    return [
        input_issue([p if isinstance(p, (int, str)) else str(p) for p in item.get("loc", ())],
                    item.get("msg", ""), item.get("type", "invalid"))
        for item in validation_error.errors(include_url=False)
    ]


def describe_issues(issues: list[dict[str, Any]], *, whole: str = "(input)") -> str:
    """`path: message; ...`; `whole` names an issue about the whole value."""
    parts = []
    for issue in issues:
        path = ".".join(str(p) for p in issue["path"]) or whole
        parts.append(f"{path}: {issue['message']}")
    return "; ".join(parts)
