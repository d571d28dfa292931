"""Checking what a workflow asks of `ctx` before anything durable happens: bad requests fail
the run with `invalid_input` and write nothing."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic_core import to_jsonable_python

from connectors.errors import InvalidInput, IssueCode, describe_issues, input_issue, issues_of
from connectors.operations import Operation, Retry
from connectors.operations import check_timeout as check_op_timeout
from runs.approvals.approver import GROUP_PREFIX, Approver
from runs.engine import clock
from runs.validation import check_topic

SLEEP_UNITS_MS = {"ms": 1, "seconds": 1000, "minutes": 60_000, "hours": 3_600_000, "days": 86_400_000}


def parse_op_input(op: Operation, payload: Any) -> BaseModel:
    """The call's input parsed by its operation, and within the ceiling a money operation declares:
    refused here, before the policy or the vendor sees it."""
    if isinstance(payload, op.input):
        parsed = payload
    else:
        if isinstance(payload, BaseModel):
            payload = payload.model_dump(mode="python")
        try:
            parsed = op.input.model_validate({} if payload is None else payload)
        except ValidationError as err:
            issues = issues_of(err)
            raise InvalidInput(
                f"The input to {op.id} does not match its schema: {describe_issues(issues)}",
                data={"op": op.id, "issues": issues},
            ) from None
    if op.money is not None:
        above = op.ceiling_issues(parsed.model_dump(mode="json"))
        if above:
            raise InvalidInput(f"The input to {op.id} is refused: {describe_issues(above)}",
                               data={"op": op.id, "issues": above})
    return parsed


def check_sleep(until: Any, duration: dict[str, Any]) -> tuple[int | None, float]:
    unknown = sorted(set(duration) - set(SLEEP_UNITS_MS))
    if unknown:
        raise InvalidInput(
            f"ctx.sleep: Unrecognized key(s) {', '.join(unknown)}: give until, or ms, seconds, minutes, hours, days"
        )
    if until is not None and duration:
        raise InvalidInput("ctx.sleep takes until or a duration, not both")
    if until is None and not duration:
        raise InvalidInput("ctx.sleep needs until or a duration (ms, seconds, minutes, hours, days)")
    if until is not None:
        return until_ms(until), 0
    total = 0.0
    for unit, amount in duration.items():
        if isinstance(amount, bool) or not isinstance(amount, (int, float)):
            raise InvalidInput(f"{unit}: must be a number")
        if amount < 0:
            raise InvalidInput(f"{unit}: must not be negative")
        total += amount * SLEEP_UNITS_MS[unit]
    return None, total


def until_ms(until: Any) -> int:
    hint = ("until: must be an ISO 8601 date-time with an offset (e.g. 2026-10-07T09:00:00+03:00), "
            "epoch milliseconds, or an aware datetime")
    if isinstance(until, bool):
        raise InvalidInput(hint)
    if isinstance(until, int):
        return until
    if isinstance(until, str):
        try:
            until = datetime.fromisoformat(until)
        except ValueError:
            raise InvalidInput(hint) from None
    if isinstance(until, datetime):
        if until.tzinfo is None or until.utcoffset() is None:
            raise InvalidInput(hint)
        return clock.to_ms(until)
    raise InvalidInput(hint)


def check_approval_request(
    title: Any, approver: Any, covers: Any, links: Any, details: Any
) -> tuple[str, list[str], list[str]]:
    data = {"title": title}
    if not isinstance(title, str) or not title.strip():
        raise InvalidInput("ctx.approval needs a title", data=data)
    if (isinstance(approver, dict) and set(approver) == {"group"} and isinstance(approver["group"], str)
            and approver["group"]):
        approver = str(Approver.group_named(approver["group"]))
    if not isinstance(approver, str) or not approver.strip() or approver == GROUP_PREFIX:
        raise InvalidInput(f'ctx.approval "{title}" needs an approver: a username or "group:<name>"', data=data)
    if isinstance(covers, (str, bytes)) or not isinstance(covers, (list, tuple)):
        raise InvalidInput(f'ctx.approval "{title}": covers must be a list of operations', data=data)
    cover_ids = []
    for cover in covers:
        if isinstance(cover, Operation):
            cover_ids.append(cover.id)
        elif isinstance(cover, str) and cover.count(".") >= 2:
            cover_ids.append(cover)
        else:
            raise InvalidInput(f'ctx.approval "{title}": covers must be a list of operations; {cover!r} is not one',
                               data=data)
    if (isinstance(links, (str, bytes)) or not isinstance(links, (list, tuple))
            or not all(isinstance(link, str) for link in links)):
        raise InvalidInput(f'ctx.approval "{title}": links must be a list of strings', data=data)
    if details is not None:
        try:
            to_jsonable_python(details)
        except Exception:
            raise InvalidInput(f'ctx.approval "{title}": details must be JSON', data=data) from None
    return approver, cover_ids, list(links)


@dataclass(frozen=True)
class CallOptions:
    """What one call may change of its operation's declaration."""

    timeout: float | None = None
    retry: Retry | None = None


NO_OPTIONS = CallOptions()


def check_call_options(op: Operation, timeout: Any, retry: Any) -> CallOptions:
    if timeout is None and retry is None:
        return NO_OPTIONS
    try:
        seconds = check_op_timeout(timeout, what=f"ctx.{op.id}")
    except ValueError as err:
        raise InvalidInput(str(err), data={"issues": [input_issue(["timeout"], str(err), IssueCode.INVALID)]}
                           ) from None
    if retry is not None and not isinstance(retry, Retry):
        raise InvalidInput(f"ctx.{op.id}: retry must be a Retry(...); got {type(retry).__name__}",
                           data={"issues": [input_issue(["retry"], "not a Retry", IssueCode.TYPE)]})
    if retry is not None and not op.idempotent and retry.attempts > 1:
        raise InvalidInput(f"ctx.{op.id}: {op.id} is not idempotent, so it is tried once; a retry could repeat "
                           "its effect", data={"issues": [input_issue(["retry"], "not idempotent", IssueCode.INVALID)]})
    return CallOptions(timeout=seconds, retry=retry)


def check_timeout(call: str, timeout: Any) -> int | None:
    """A wait's timeout in milliseconds (None: wait as long as it takes), or `InvalidInput`."""
    if timeout is None:
        return None
    if isinstance(timeout, timedelta):
        seconds = timeout.total_seconds()
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        seconds = float(timeout)
    else:
        raise InvalidInput(f"{call}: timeout must be seconds (a number) or a timedelta")
    if not seconds >= 0 or seconds == float("inf"):
        raise InvalidInput(f"{call}: timeout must be a finite number of seconds, not negative")
    return int(seconds * 1000)


def check_wait_message(topic: Any, timeout: Any) -> tuple[str, int | None]:
    """The topic, and the timeout in milliseconds (None: wait as long as it takes)."""
    try:
        check_topic(topic)
    except InvalidInput as err:
        raise InvalidInput(f"ctx.wait_message: {err.message}", data=err.data) from None
    return topic, check_timeout(f"ctx.wait_message({topic!r})", timeout)


def check_result_model(call: str, model: Any) -> None:
    """`model=` of a wait: a pydantic model class, or None."""
    if model is not None and not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise InvalidInput(f"{call}: model must be a pydantic model class; got {model!r}",
                           data={"issues": [input_issue(["model"], "not a model class", IssueCode.TYPE)]})


def as_model(what: str, value: Any, model: type[BaseModel] | None) -> Any:
    """A wait's result as `model` (as sent, without one). A value the model refuses fails the run
    with `invalid_input` naming the field; the recorded value is the same on every replay."""
    if model is None:
        return value
    try:
        return model.model_validate(value)
    except ValidationError as err:
        issues = issues_of(err)
        raise InvalidInput(f"{what} does not match {model.__name__}: {describe_issues(issues)}",
                           data={"model": model.__name__, "issues": issues}) from None


def check_wait_run(run_id: Any, timeout: Any) -> tuple[str, int | None]:
    """The child's run id, and the timeout in milliseconds (None: wait as long as it takes)."""
    if not isinstance(run_id, str) or not run_id:
        raise InvalidInput(f"ctx.wait_run takes the id ctx.start_run returned; got {type(run_id).__name__}",
                           data={"issues": [input_issue(["run_id"], "must be a run id", IssueCode.TYPE)]})
    return run_id, check_timeout(f"ctx.wait_run({run_id!r})", timeout)


TAG_KEY = re.compile(r"^[a-z][a-z0-9_]{0,99}$")
MAX_TAG_VALUE = 200
MAX_TAGS = 20


def check_tags(keys: dict[str, Any]) -> dict[str, str]:
    """Tags as stored: lowercase keys, values text (a number is written as text), at most 200 characters."""
    if not keys:
        raise InvalidInput("ctx.tag takes keys and values, e.g. ctx.tag(order=\"1001\")")
    if len(keys) > MAX_TAGS:
        raise InvalidInput(f"ctx.tag takes at most {MAX_TAGS} keys at once; got {len(keys)}")
    tags: dict[str, str] = {}
    for key, value in keys.items():
        if not TAG_KEY.match(key):
            raise InvalidInput(f"ctx.tag: the key {key!r} must be lowercase letters, digits and underscores",
                               data={"issues": [input_issue([key], "bad key", IssueCode.INVALID)]})
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise InvalidInput(f"ctx.tag: {key} must be text or a whole number, not {type(value).__name__}",
                               data={"issues": [input_issue([key], "not text", IssueCode.TYPE)]})
        text = str(value)
        if not text.strip() or len(text) > MAX_TAG_VALUE or "\x00" in text:
            raise InvalidInput(f"ctx.tag: {key} must be 1-{MAX_TAG_VALUE} characters of text",
                               data={"issues": [input_issue([key], "bad value", IssueCode.INVALID)]})
        tags[key] = text
    return tags


PATCH_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,99}$")


def check_patch_name(name: Any) -> str:
    """A patch's name: what its step is recorded under, lowercase letters, digits, `_ . -`."""
    if not isinstance(name, str) or not PATCH_NAME.match(name):
        shown = repr(name) if isinstance(name, str) else type(name).__name__
        raise InvalidInput(f"ctx.patched takes a patch's name (lowercase letters, digits, _ . -, at most 100); "
                           f"got {shown}",
                           data={"issues": [input_issue(["name"], "bad patch name", IssueCode.INVALID)]})
    return name
