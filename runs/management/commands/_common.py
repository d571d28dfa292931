"""What the run commands share: turning errors into clear command errors, reading inputs."""
from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, NoReturn

from django.core.management.base import CommandError

from connectors.errors import ConfigError, InvalidInput, SanomaError
from runs.validation import check_run_id, json_issues, parse_json, schema_branches


def command_error(err: SanomaError) -> CommandError:
    code = f" [{err.code}]" if getattr(err, "code", None) else ""
    issues = err.data.get("issues") if isinstance(err.data, dict) else None
    # An issue that only repeats the message (the whole error is about one field) is said once.
    issues = [i for i in issues or [] if i.get("message") != err.message]
    detail = ""
    if issues:
        detail = "\n" + "\n".join(f"  {'.'.join(map(str, i['path'])) or '(input)'}: {i['message']}" for i in issues)
    return CommandError(f"{err.message}{code}{detail}")


def _check_arguments(options: dict[str, Any]) -> None:
    """No argument may carry a NUL or a lone surrogate (what undecodable bytes in argv become)."""
    for name, value in options.items():
        for text in value if isinstance(value, list) else [value]:
            issues = json_issues(text) if isinstance(text, str) else []
            if issues:
                raise CommandError(f"--{name.replace('_', '-')} {issues[0]['message']}")


def guarded(fn: Any) -> Any:
    """A command's `handle`: sanoma's errors become one-line command errors, and a closed pipe
    (`manage.py show RUN | head`) ends the command quietly."""
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        _check_arguments(kwargs)
        try:
            done = fn(*args, **kwargs)
            sys.stdout.flush()  # a reader that left shows here, not at the interpreter's exit
            return done
        except BrokenPipeError:
            _reader_left()
        except ConfigError as err:
            raise CommandError(str(err)) from None
        except SanomaError as err:
            raise command_error(err) from None
    return wrapper


def _reader_left() -> NoReturn:
    """The reader of the output closed it (`| head`): it has what it wanted, so exit 0, with no
    traceback, and with stdout pointed at /dev/null so the exit's own flush cannot fail again
    (Python's documented way: https://docs.python.org/3/library/signal.html#note-on-sigpipe)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(0)


def run_id_argument(value: Any) -> str:
    """A run id given on the command line, held to the run-id rule."""
    try:
        return check_run_id(value)
    except InvalidInput as err:
        raise CommandError(err.message) from None


# JSON Schema types and the Python values that are them (bool before int: True is an int to Python).
_JSON_TYPES = {"string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,),
               "null": (type(None),), "object": (dict,), "array": (list,)}


def _field_types(schema: dict[str, Any] | None, key: str) -> tuple[set[str], bool] | None:
    """The JSON types the input's field `key` accepts, and whether it is a date-time; None: unknown field."""
    if not isinstance(schema, dict):
        return None
    properties = schema.get("properties")
    if not isinstance(properties, dict) or key not in properties:
        return None
    types: set[str] = set()
    when = False
    for node in schema_branches(properties[key], schema):
        kind = node.get("type")
        types.update([kind] if isinstance(kind, str) else kind if isinstance(kind, list) else [])
        for value in node.get("enum", []) + ([node["const"]] if "const" in node else []):
            types.update(name for name in _JSON_TYPES if _is(value, name))
        when = when or node.get("format") == "date-time"
    return types, when


def _is(value: Any, kind: str) -> bool:
    if isinstance(value, bool):
        return kind == "boolean"
    return isinstance(value, _JSON_TYPES.get(kind, ()))


def parse_value(text: str, *, schema: dict[str, Any] | None = None, key: str = "") -> Any:
    """A `--set` value, read against the input field's schema.

    A field that takes text gets the text as typed (`--set order_id=1001` is "1001"); a date-time
    field reads `+2m`/`+3h`/`+1d` as a time from now; other fields read the value as JSON (`500`,
    `true`, `["a"]`), falling back to the text so the schema says what is wrong. A field the schema
    does not name reads JSON when it parses, else text, `+2m` included.
    """
    known = _field_types(schema, key)
    types, when = known if known is not None else (set(), True)
    if when and len(text) > 2 and text[0] == "+" and text[-1] in "smhd" and text[1:-1].isdigit():
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[text[-1]]
        return (datetime.now(UTC) + timedelta(**{unit: int(text[1:-1])})).isoformat()
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return text
    if known is None or not types:
        return value
    if any(_is(value, kind) for kind in types if kind != "string"):
        return value
    return text if "string" in types else value


def _document(source: str, raw: str | bytes, *, require_object: bool = True) -> Any:
    try:
        data = parse_json(raw, what=source)
    except InvalidInput as err:
        raise CommandError(err.message.replace("\n", " ")) from None
    if require_object and not isinstance(data, dict):
        raise CommandError(f"{source} must be a JSON object")
    return data


def read_document(*, text: str | None, file: str | None, flags: tuple[str, str] = ("--input", "--input-file"),
                  require_object: bool = True) -> Any:
    """The JSON given inline (`flags[0]`) or in a file (`flags[1]`), `{}` when neither; every problem
    is a one-line CommandError naming the flag."""
    inline, in_file = flags
    if text and file:
        raise CommandError(f"give {inline} or {in_file}, not both")
    if file:
        try:
            raw = Path(file).read_bytes()
        except OSError as err:
            raise CommandError(f"{in_file} {file}: {err.strerror or err}") from None
        return _document(f"{in_file} {file}", raw, require_object=require_object)
    if text:
        return _document(inline, text, require_object=require_object)
    return {}


def read_input(*, input_json: str | None, input_file: str | None, sets: list[str],
               schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The input from --input or --input-file, then each --set read against `schema` (the workflow's
    input JSON Schema). Every problem is a one-line CommandError."""
    data: dict[str, Any] = read_document(text=input_json, file=input_file)
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--set takes key=value; got {item!r}")
        data[key] = parse_value(value, schema=schema, key=key)
    return data


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, default=str)
