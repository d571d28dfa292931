"""What input every surface refuses before anything is written: the run-id rule and strict JSON.

One module, shared by the services, the API, the admin and the commands, so a run id or a body is
judged the same way wherever it arrives:

- a run id is 1-200 characters, letters, digits and `- _ . : @` (`check_run_id`);
- JSON is at most `MAX_DEPTH` containers deep and holds no NUL and no lone surrogate in any key or
  value (`check_json`, `parse_json`);
- a workflow's input is validated strictly as JSON against its model (`validate_input`): a boolean
  is not a number, text stays text, and an integer outside +-(2^53 - 1) is refused unless the schema
  bounds that field explicitly (`Field(le=...)`/`ge=...`).

Every refusal is `InvalidInput` with `data.issues` (`[{path, message, code}]`) naming where.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from connectors.errors import InvalidInput, IssueCode, describe_issues, input_issue, issues_of

MAX_RUN_ID_LENGTH = 200
RUN_ID_RULE = "a run id is 1-200 characters: letters (a-z, A-Z), digits (0-9), '-', '_', '.', ':', '@' and '~'"
_RUN_ID = re.compile(r"[A-Za-z0-9_.:@~-]{1,200}")

MAX_DEPTH = 64
SAFE_INTEGER = 2**53 - 1
_BAD_CHARACTER = re.compile("[\x00\ud800-\udfff]")

Path = list[Any]


# ---- run ids -------------------------------------------------------------------------------------


def is_valid_run_id(value: Any) -> bool:
    return isinstance(value, str) and _RUN_ID.fullmatch(value) is not None


def check_run_id(value: Any, *, path: Sequence[Any] = ("runId",)) -> str:
    """The run id itself, or `InvalidInput` stating the rule (the id is shown escaped, never raw)."""
    if is_valid_run_id(value):
        return value
    shown = _shown(value)
    raise InvalidInput(f"Run id {shown} is not valid: {RUN_ID_RULE}",
                       data={"issues": [input_issue(path, RUN_ID_RULE, IssueCode.INVALID_RUN_ID)]})


def _shown(value: Any) -> str:
    """A value as a message may quote it: escaped, and cut short."""
    text = ascii(value) if isinstance(value, str) else type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."


# ---- JSON ----------------------------------------------------------------------------------------


def json_issues(value: Any, *, path: Sequence[Any] = ()) -> list[dict[str, Any]]:
    """What makes `value` unsafe as JSON: too deep, NUL or a lone surrogate, not a JSON type.

    Walks without recursion, so a document of any depth is judged without a RecursionError; stops
    at the first problem of each kind worth reporting (a few issues, never thousands).
    """
    issues: list[dict[str, Any]] = []
    stack: list[tuple[Any, Path, int]] = [(value, list(path), 0)]
    while stack and len(issues) < 10:
        item, where, depth = stack.pop()
        if isinstance(item, str):
            _check_text(item, where, issues)
        elif isinstance(item, bool) or item is None or isinstance(item, int):
            continue
        elif isinstance(item, float):
            if not math.isfinite(item):
                issues.append(input_issue(where, f"{item} is not a JSON number", IssueCode.INVALID_NUMBER))
        elif isinstance(item, dict | list | tuple):
            if depth + 1 > MAX_DEPTH:
                issues.append(input_issue(where, f"nested deeper than {MAX_DEPTH} levels", IssueCode.TOO_DEEP))
                return issues
            if isinstance(item, dict):
                for key, child in item.items():
                    if not isinstance(key, str):
                        issues.append(input_issue(where, f"key {_shown(key)} is not text", IssueCode.INVALID_KEY))
                        continue
                    if _BAD_CHARACTER.search(key):
                        issues.append(input_issue([*where, _safe_key(key)], _character_problem(key),
                                                  IssueCode.INVALID_CHARACTER))
                        continue
                    stack.append((child, [*where, key], depth + 1))
            else:
                for index, child in enumerate(item):
                    stack.append((child, [*where, index], depth + 1))
        else:
            issues.append(input_issue(where, f"a {type(item).__name__} is not a JSON value", IssueCode.INVALID_TYPE))
    return issues


def _check_text(text: str, where: Path, issues: list[dict[str, Any]]) -> None:
    if _BAD_CHARACTER.search(text):
        issues.append(input_issue(where, _character_problem(text), IssueCode.INVALID_CHARACTER))


def _character_problem(text: str) -> str:
    found = _BAD_CHARACTER.search(text)
    assert found is not None
    if found.group() == "\x00":
        return "contains a NUL character (\\u0000)"
    return f"contains a lone surrogate ({ascii(found.group())[1:-1]}), which is not a character"


def _safe_key(key: str) -> str:
    """A key that is itself the problem, as a path may show it."""
    return ascii(key)[1:-1]


def _describe(issues: list[dict[str, Any]], whole: str) -> str:
    return describe_issues(issues, whole=whole)


def check_json(value: Any, *, path: Sequence[Any] = (), what: str = "The input") -> Any:
    """`value` itself, or `InvalidInput` naming the path of what makes it unsafe."""
    issues = json_issues(value, path=path)
    if issues:
        raise InvalidInput(f"{what} is not valid: {_describe(issues, '(input)')}", data={"issues": issues})
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str | bytes, *, what: str = "The body") -> Any:
    """Parse a JSON document strictly (UTF-8, no NaN or Infinity), then `check_json` it."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise InvalidInput(f"{what} is not UTF-8: byte {err.start} cannot be decoded",
                               data={"issues": [input_issue([], "not UTF-8", IssueCode.PARSE_ERROR)]}) from None
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidInput(f"{what} is nested deeper than {MAX_DEPTH} levels",
                           data={"issues": [input_issue([], f"nested deeper than {MAX_DEPTH} levels",
                                                        IssueCode.TOO_DEEP)]}) from None
    except ValueError as err:
        raise InvalidInput(f"{what} is not valid JSON: {err}",
                           data={"issues": [input_issue([], str(err), IssueCode.PARSE_ERROR)]}) from None
    return check_json(value, what=what)


# ---- a workflow's input --------------------------------------------------------------------------


def validate_input(model: type[BaseModel], input: Any, *, name: str) -> BaseModel:
    """The input parsed by `model`, validated strictly as the JSON document it is.

    Strict JSON mode: `true` is not a number, `1` is not text, `"5"` is not an integer, while what
    JSON can only spell as text (dates, enums, decimals) is read from text. Integers beyond
    +-(2^53 - 1), which most JSON clients cannot hold exactly, are refused unless the field's schema
    bounds them explicitly.
    """
    check_json(input)
    try:
        document = json.dumps(input, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as err:
        raise InvalidInput(f"The input is not JSON: {err}",
                           data={"issues": [input_issue([], str(err), IssueCode.INVALID_TYPE)]}) from None
    issues: list[dict[str, Any]] = []
    parsed: BaseModel | None = None
    try:
        parsed = model.model_validate_json(document, strict=True)
    except ValidationError as err:
        issues = issues_of(err)
    big = list(_big_integers(input, []))
    if big:
        schema = _schema_or_none(model)
        for where, number in big:
            if schema is None or not _bounded(schema, where, number):
                issues.append(input_issue(
                    where, f"{number} is outside +-(2^53 - 1), beyond what JSON clients hold exactly",
                    IssueCode.UNSAFE_INTEGER))
    if issues or parsed is None:
        raise InvalidInput(f"The input does not match {name}'s schema: {describe_issues(issues)}",
                           data={"issues": issues})
    return parsed


def _big_integers(value: Any, where: Path) -> Iterator[tuple[Path, int]]:
    stack: list[tuple[Any, Path]] = [(value, where)]
    while stack:
        item, at = stack.pop()
        if isinstance(item, int) and not isinstance(item, bool):
            if abs(item) > SAFE_INTEGER:
                yield at, item
        elif isinstance(item, dict):
            stack.extend((child, [*at, key]) for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((child, [*at, index]) for index, child in enumerate(item))


def _schema_or_none(model: type[BaseModel]) -> dict[str, Any] | None:
    try:
        return model.model_json_schema(mode="validation")
    except Exception:  # a model pydantic cannot describe: no field can say otherwise
        return None


def schema_branches(node: Any, root: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas a node stands for: references followed, anyOf/oneOf/allOf branches spread."""
    out: list[dict[str, Any]] = []
    pending = [node]
    seen = 0
    while pending and seen < 100:
        seen += 1
        current = pending.pop()
        if not isinstance(current, dict):
            continue
        ref = current.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            target: Any = root
            for part in ref[2:].split("/"):
                target = target.get(part) if isinstance(target, dict) else None
            pending.append(target)
        for key in ("anyOf", "oneOf", "allOf"):
            if isinstance(current.get(key), list):
                pending.extend(current[key])
        out.append(current)
    return out


def _children(node: dict[str, Any], step: Any) -> list[Any]:
    if isinstance(step, int):
        prefix = node.get("prefixItems")
        if isinstance(prefix, list) and step < len(prefix):
            return [prefix[step]]
        return [node["items"]] if isinstance(node.get("items"), dict) else []
    found = []
    properties = node.get("properties")
    if isinstance(properties, dict) and step in properties:
        found.append(properties[step])
    elif isinstance(node.get("additionalProperties"), dict):
        found.append(node["additionalProperties"])
    return found


def _bounded(schema: dict[str, Any], where: Path, number: int) -> bool:
    """Whether the schema at `where` bounds integers explicitly, on the side `number` lies."""
    nodes = schema_branches(schema, schema)
    for step in where:
        nodes = [resolved for node in nodes for child in _children(node, step)
                 for resolved in schema_branches(child, schema)]
    keys = ("maximum", "exclusiveMaximum") if number > 0 else ("minimum", "exclusiveMinimum")
    return any(key in node for node in nodes for key in keys)


# ---- messages ------------------------------------------------------------------------------------

MAX_TOPIC_LENGTH = 200
MAX_MESSAGE_ID_LENGTH = 200


def check_topic(value: Any, *, path: Sequence[Any] = ("topic",)) -> str:
    """A message topic: non-blank text of at most 200 characters, with no NUL or lone surrogate."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("A message topic must be non-blank text",
                           data={"issues": [input_issue(path, "must be non-blank text", IssueCode.REQUIRED)]})
    if len(value) > MAX_TOPIC_LENGTH:
        raise InvalidInput(f"A message topic is at most {MAX_TOPIC_LENGTH} characters; got {len(value)}",
                           data={"issues": [input_issue(path, f"longer than {MAX_TOPIC_LENGTH} characters",
                                                        IssueCode.TOO_LONG)]})
    check_json(value, path=path, what="The topic")
    return value


def check_payload(value: Any, *, path: Sequence[Any] = ("payload",)) -> dict[str, Any]:
    """A message payload: a JSON object, held to the strict JSON rules."""
    if not isinstance(value, dict):
        raise InvalidInput("A message payload must be a JSON object",
                           data={"issues": [input_issue(path, "must be a JSON object", IssueCode.INVALID_TYPE)]})
    check_json(value, path=path, what="The payload")
    return value


def check_message_id(value: Any, *, path: Sequence[Any] = ("id",)) -> str | None:
    """An optional message id: None, or non-blank text of at most 200 characters."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > MAX_MESSAGE_ID_LENGTH:
        raise InvalidInput(f"A message id must be non-blank text of at most {MAX_MESSAGE_ID_LENGTH} characters",
                           data={"issues": [input_issue(path, "must be non-blank text of at most 200 characters")]})
    check_json(value, path=path, what="The message id")
    return value
