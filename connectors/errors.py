"""Errors with machine-readable codes, shared by every layer.

Code branches on `error_code(err)`, never on the class: an error replayed from a checkpoint is a
copy (a `SanomaError` carrying the recorded code and name), not an instance of the original class.
"""
from __future__ import annotations

from collections.abc import KeysView, Mapping, Sequence
from enum import StrEnum
from types import MappingProxyType
from typing import Any, TypeVar


class ErrorCode(StrEnum):
    """The codes of a call, a driver and a request: what any layer may put on an error.

    A code is a plain string on the wire (API bodies, the ledger), so `ErrorCode.INVALID_INPUT ==
    "invalid_input"`. Each domain keeps its own codes beside the code that raises them (a run's in
    `runs.errors.RunCode`, a change's remote's in `changes.lifecycle.errors.RemoteCode`, ...) and
    registers them here (`register_codes`); `all_codes()` is every code the runtime knows.
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
    # calls
    POLICY_DENIED = "policy_denied"  # the policy denied the call
    POLICY_FAILED = "policy_failed"  # the policy raised or answered something that is not a decision
    DRIVER_FAILED = "driver_failed"  # the vendor said no, or the driver failed
    DRIVER_TIMEOUT = "driver_timeout"  # the vendor did not answer within the call's timeout
    NO_DRIVER = "no_driver"  # the operation has no driver in this config
    LEDGER_WRITE_FAILED = "ledger_write_failed"  # the vendor acted but the ledger could not record it


class IssueCode(StrEnum):
    """The short code of one input issue (`input_issue`): what is wrong at its path.

    Issues read from a validator (pydantic's `type`, DRF's codes) keep the validator's own code.
    """

    INVALID = "invalid"  # the value is not acceptable (the default)
    REQUIRED = "required"  # a required key or value is missing
    UNEXPECTED = "unexpected"  # a key that is not expected
    EXTRA = "extra"  # a field the record's shape does not have
    TYPE = "type"  # the value is not of the type the operation or the request expects
    INVALID_TYPE = "invalid_type"  # the JSON value is not of the expected type
    INVALID_NUMBER = "invalid_number"  # a number JSON cannot carry (NaN, infinity)
    UNSAFE_INTEGER = "unsafe_integer"  # an integer beyond what JSON carries exactly
    INVALID_KEY = "invalid_key"  # an object key that is not a string
    INVALID_CHARACTER = "invalid_character"  # a string holding a character JSON text may not carry
    INVALID_RUN_ID = "invalid_run_id"  # not the shape of a run id
    TOO_LONG = "too_long"  # longer than the limit
    TOO_DEEP = "too_deep"  # nested deeper than the limit
    TOO_MANY = "too_many"  # more items than the limit
    PARSE_ERROR = "parse_error"  # the body is not valid JSON
    NOT_FOUND = "not_found"  # what the value names does not exist
    NOT_CHILD = "not_child"  # the run named is not a child of this run
    SAME_RUN = "same_run"  # comparing a run with itself
    CANNOT_FORK = "cannot_fork"  # the run cannot be forked from there
    COUNT_CHANGED = "count_changed"  # the runs matching changed since they were counted
    PAUSED = "paused"  # the workflow is paused
    UNKNOWN_KEYWORD = "unknown_keyword"  # an operation call got a keyword it does not take
    OUT_OF_RANGE = "out_of_range"  # a number outside the allowed range
    INVALID_CURSOR = "invalid_cursor"  # a page cursor that was not given by the API
    UNSUPPORTED = "unsupported"  # a value the endpoint does not support
    CONFLICT = "conflict"  # two values that cannot go together
    EMPTY = "empty"  # an empty value where one is needed
    REFUSED = "refused"  # a connector's check refused the value
    ABOVE_CEILING = "above_ceiling"  # an amount above the operation's money ceiling
    INVALID_JSON = "invalid_json"  # a form's text is not valid JSON
    INVALID_BRANCH = "invalid_branch"  # not a branch name the remote takes
    IS_BASE = "is_base"  # the branch named is the base branch itself
    ONE_OF = "one_of"  # give exactly one of two keys
    UNKNOWN_FIELD = "unknown_field"  # a key the request body does not take


CodeEnum = TypeVar("CodeEnum", bound=type[StrEnum])

# Every code the runtime knows, each to the member of the domain enum that declares it.
_REGISTRY: dict[str, StrEnum] = {}
_DOMAINS: list[type[StrEnum]] = []


def register_codes(enum: CodeEnum) -> CodeEnum:
    """Add a domain's codes to the one registry (each domain's errors module calls it on import).

    A value another domain already declares is refused: a code means one thing.
    """
    for member in enum:
        known = _REGISTRY.get(member.value)
        if known is not None and type(known) is not enum:
            raise ValueError(f"error code {member.value!r} is declared by {type(known).__qualname__} and "
                             f"{enum.__qualname__}")
    if enum not in _DOMAINS:
        _DOMAINS.append(enum)
    for member in enum:
        _REGISTRY[member.value] = member
    return enum


def all_codes() -> Mapping[str, StrEnum]:
    """Every registered code, to its enum member (read-only)."""
    return MappingProxyType(_REGISTRY)


def code_domains() -> list[type[StrEnum]]:
    """The registered enums, in the order they registered."""
    return list(_DOMAINS)


register_codes(ErrorCode)

# The codes the runtime knows: a live view of the registry.
KNOWN_CODES: KeysView[str] = _REGISTRY.keys()


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
    LIMIT = "limit"  # a connector's or an operation's `Limit` is declared wrong
    OTHER = "other"


class Problem(str):
    """One reason a config cannot be resolved: a sentence (the `str` itself) that also knows its
    kind and, where there is one, the file (relative to the config root) and line it is about."""

    kind: ProblemKind
    file: str | None
    line: int | None
    hint: str | None  # how to put this very problem right, when it is known (else the kind's hint)

    def __new__(cls, text: str, *, kind: ProblemKind = ProblemKind.OTHER, file: str | None = None,
                line: int | None = None, hint: str | None = None) -> Problem:
        problem = super().__new__(cls, text)
        problem.kind = kind
        problem.file = file
        problem.line = line
        problem.hint = hint
        return problem

    def __reduce__(self) -> tuple[Any, ...]:
        return (_problem, (str(self), self.kind, self.file, self.line, self.hint))


def _problem(text: str, kind: ProblemKind, file: str | None, line: int | None, hint: str | None = None) -> Problem:
    return Problem(text, kind=kind, file=file, line=line, hint=hint)


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
        may_have_acted: bool = False,
    ) -> None:
        super().__init__(message)
        self.retryable = bool(retryable) if retryable is not None else (
            status is not None and retryable_status(status))
        # The request reached the vendor but its answer was lost (the connection dropped, or no answer
        # came in time): the vendor may have acted. A call that takes no idempotency key is then in
        # doubt, settled by its reconcile read, rather than failed.
        self.may_have_acted = may_have_acted
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


def error_code(err: BaseException | None) -> StrEnum | None:
    """The error's code (the member of its domain's enum) when it is one the runtime knows, else None."""
    code = getattr(err, "code", None)
    return _REGISTRY.get(code) if isinstance(code, str) else None


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


def input_issue(path: Sequence[Any], message: str, code: str = IssueCode.INVALID) -> dict[str, Any]:
    """One thing wrong with an input, as the `issues` of an error's data carry it: where (`path`,
    the keys and indexes down to it; empty for the whole input), what, and a short code."""
    return {"path": list(path), "message": message, "code": code}


def issues_of(validation_error: Any) -> list[dict[str, Any]]:
    """Pydantic validation errors as `{path, message, code}` issues (no symbols)."""
    return [
        input_issue([p if isinstance(p, (int, str)) else str(p) for p in item.get("loc", ())],
                    item.get("msg", ""), item.get("type", IssueCode.INVALID))
        for item in validation_error.errors(include_url=False)
    ]


def describe_issues(issues: list[dict[str, Any]], *, whole: str = "(input)") -> str:
    """`path: message; ...`; `whole` names an issue about the whole value."""
    parts = []
    for issue in issues:
        path = ".".join(str(p) for p in issue["path"]) or whole
        parts.append(f"{path}: {issue['message']}")
    return "; ".join(parts)
