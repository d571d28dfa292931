"""What the run commands share: turning errors into clear command errors, reading inputs."""
from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from django.core.management.base import CommandError

from connectors.errors import ConfigError, SanomaError


def command_error(err: SanomaError) -> CommandError:
    code = f" [{err.code}]" if getattr(err, "code", None) else ""
    issues = err.data.get("issues") if isinstance(err.data, dict) else None
    detail = ""
    if issues:
        detail = "\n" + "\n".join(f"  {'.'.join(map(str, i['path'])) or '(input)'}: {i['message']}" for i in issues)
    return CommandError(f"{err.message}{code}{detail}")


def guarded(fn: Any) -> Any:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ConfigError as err:
            raise CommandError(str(err)) from None
        except SanomaError as err:
            raise command_error(err) from None
    return wrapper


def parse_value(text: str) -> Any:
    """A `--set` value: `+2m`/`+3h`/`+1d` is a time from now; JSON when it parses; else text."""
    if len(text) > 2 and text[0] == "+" and text[-1] in "smhd" and text[1:-1].isdigit():
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[text[-1]]
        return (datetime.now(UTC) + timedelta(**{unit: int(text[1:-1])})).isoformat()
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def read_input(*, input_json: str | None, input_file: str | None, sets: list[str]) -> dict[str, Any]:
    if input_json and input_file:
        raise CommandError("give --input or --input-file, not both")
    data: Any = {}
    if input_file:
        try:
            data = json.loads(Path(input_file).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise CommandError(f"--input-file {input_file}: {err}") from None
    elif input_json:
        try:
            data = json.loads(input_json)
        except json.JSONDecodeError as err:
            raise CommandError(f"--input is not JSON: {err}") from None
    if not isinstance(data, dict):
        raise CommandError("the input must be a JSON object")
    for item in sets:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"--set takes key=value; got {item!r}")
        data[key] = parse_value(value)
    return data


def dumps(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=False, default=str)
