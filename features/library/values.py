"""Values written in feature files: JSON doc strings, two-column tables and phrase words, read
against a pydantic input model.

A cell or phrase value is taken as text when the field accepts text, else parsed as JSON (`5` is
a number, `true` a boolean, `[1, 2]` a list); every named field must exist (the error lists the
fields there are) and be accepted by its type.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from features.library.errors import ScenarioProblem

TAKES_OBJECT = "a JSON doc string or a two-column table"


def _resolve(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    seen = 0
    while isinstance(schema, Mapping) and "$ref" in schema and seen < 20:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        schema = defs.get(name, {})
        seen += 1
    return schema


def accepts_text(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> bool:
    """True when a JSON string can be a value of this schema (or the schema says nothing)."""
    schema = _resolve(schema, defs)
    if not isinstance(schema, Mapping):
        return True
    kind = schema.get("type")
    if kind == "string" or (isinstance(kind, list) and "string" in kind):
        return True
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return any(accepts_text(option, defs) for option in schema[key])
    if "enum" in schema:
        return any(isinstance(v, str) for v in schema["enum"])
    if "const" in schema:
        return isinstance(schema["const"], str)
    return kind is None


def describe_type(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> str:
    schema = _resolve(schema, defs)
    kind = schema.get("type") if isinstance(schema, Mapping) else None
    names = {
        "integer": "a whole number",
        "number": "a number",
        "boolean": "true or false",
        "array": "a JSON list",
        "object": "a JSON object",
        "null": "null",
    }
    if isinstance(kind, str):
        return names.get(kind, kind)
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " or ".join(dict.fromkeys(describe_type(o, defs) for o in schema[key]))
    if "enum" in schema:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"])
    return "a JSON value"


class Fields:
    """The top-level fields of an input model, as a feature file names them."""

    def __init__(self, model: type[BaseModel], what: str) -> None:
        self.model = model
        self.what = what
        schema = model.model_json_schema(mode="validation")
        self.defs: Mapping[str, Any] = schema.get("$defs", {})
        self.properties: dict[str, Mapping[str, Any]] = dict(schema.get("properties", {}))
        self.required: tuple[str, ...] = tuple(schema.get("required", ()))
        # The Python type of each field, by the name the schema shows (its alias, when it has one).
        self.annotations: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            self.annotations[info.alias or name] = info.annotation

    @property
    def names(self) -> list[str]:
        return list(self.properties)

    def listing(self) -> str:
        return ", ".join(self.names) if self.properties else "none (it takes no input)"

    def check_name(self, name: str) -> None:
        if name not in self.properties:
            raise ScenarioProblem(f"{self.what} has no field {name!r}; its fields are {self.listing()}")

    def check_names(self, names: Iterable[str]) -> None:
        for name in names:
            self.check_name(name)

    def takes_text(self, name: str) -> bool:
        return accepts_text(self.properties.get(name, {}), self.defs)

    def coerce(self, name: str, raw: str) -> Any:
        """A cell or phrase word as the field's value: text when the field takes text, else JSON."""
        self.check_name(name)
        if self.takes_text(name):
            return raw
        try:
            return json.loads(raw)
        except ValueError:
            wanted = describe_type(self.properties[name], self.defs)
            hint = "" if wanted == "true or false" else ", written as JSON"
            raise ScenarioProblem(
                f"{raw!r} is not a value for {name} of {self.what}: it takes {wanted}{hint}"
            ) from None

    def accepted(self, name: str, value: Any) -> Any:
        """The value as the field's type takes it, as JSON; an object is left as written, since an
        expectation may name only some of its fields."""
        self.check_name(name)
        if isinstance(value, dict):
            return value
        annotation = self.annotations.get(name)
        if annotation is None:
            return value
        try:
            adapter = TypeAdapter(annotation)
            return adapter.dump_python(adapter.validate_python(value), mode="json")
        except ValidationError as err:
            issue = err.errors()[0]["msg"] if err.errors() else str(err)
            raise ScenarioProblem(f"{json.dumps(value)} is not a value for {name} of {self.what}: {issue}") from None
        except Exception:  # a type pydantic cannot adapt on its own: compare as written
            return value


def doc_object(text: str | None, what: str) -> dict[str, Any]:
    if text is None:
        raise ScenarioProblem(f"{what} needs {TAKES_OBJECT} after it")
    try:
        value = json.loads(text)
    except ValueError as err:
        raise ScenarioProblem(f"the doc string after {what} is not JSON: {err}") from None
    if not isinstance(value, dict):
        raise ScenarioProblem(
            f"the doc string after {what} must be a JSON object ({{...}}); it is {type(value).__name__}"
        )
    return value


def table_rows(table: Any) -> list[tuple[list[str], int]]:
    """Every row of a behave table, its first (behave's heading row) included, with its line."""
    rows: list[tuple[list[str], int]] = []
    if table is None:
        return rows
    heading_line = getattr(table, "line", None) or 0
    rows.append((list(table.headings), heading_line))
    for row in table.rows:
        rows.append((list(row.cells), getattr(row, "line", heading_line)))
    return rows


def table_pairs(table: Any, what: str) -> list[tuple[str, str, int]]:
    pairs = []
    for cells, line in table_rows(table):
        if len(cells) != 2:
            raise ScenarioProblem(
                f"the table after {what} needs exactly two columns (name | value); this row has {len(cells)}",
                line=line or None,
            )
        pairs.append((cells[0].strip(), cells[1], line))
    return pairs


def step_object(
    text: str | None, table: Any, what: str, fields: Fields | None, *, file: str | None = None
) -> dict[str, Any]:
    """The JSON object a doc string or a two-column table gives; names checked against `fields`."""
    if table is not None:
        value: dict[str, Any] = {}
        for name, raw, line in table_pairs(table, what):
            try:
                if name in value:
                    raise ScenarioProblem(f"the table after {what} names {name} twice")
                value[name] = fields.coerce(name, raw) if fields is not None else plain_value(raw)
            except ScenarioProblem as problem:
                if problem.line is None and line:
                    problem.line = line
                raise
        return value
    value = doc_object(text, what)
    if fields is not None:
        fields.check_names(value)
    return value


def plain_value(raw: str) -> Any:
    """A value with no schema to go by: JSON when it parses, else the text."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def issues_text(err: ValidationError) -> str:
    parts = []
    for issue in err.errors():
        path = ".".join(str(p) for p in issue.get("loc", ())) or "(the input)"
        parts.append(f"{path}: {issue.get('msg', 'invalid')}")
    return "; ".join(parts)


def validate(model: type[BaseModel], data: dict[str, Any], what: str) -> BaseModel:
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise ScenarioProblem(f"{what} does not accept {json.dumps(data, default=str)}: {issues_text(err)}") from None


def contains(actual: Any, expected: Any) -> bool:
    """True when `actual` has every key `expected` has, with an equal value, at every depth; a list
    matches a list of the same length whose items contain the expected items, in order."""
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(k in actual and contains(actual[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return (isinstance(actual, list) and len(actual) == len(expected)
                and all(contains(a, e) for a, e in zip(actual, expected, strict=True)))
    if isinstance(expected, bool) or isinstance(actual, bool):
        return type(expected) is type(actual) and expected == actual
    return actual == expected


def short(value: Any, limit: int = 200) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _path_parts(path: str) -> list[str]:
    return [p for p in path.split(".") if p != ""] if path else []


def get_path(state: Any, path: str) -> Any:
    current = state
    walked: list[str] = []
    for part in _path_parts(path):
        if isinstance(current, dict):
            if part not in current:
                keys = ", ".join(map(str, list(current)[:20])) or "nothing"
                where = ".".join(walked) or "the top"
                raise LookupError(f"{where} has no {part!r} (it has {keys})")
            current = current[part]
        elif isinstance(current, list) and part.lstrip("-").isdigit() and -len(current) <= int(part) < len(current):
            current = current[int(part)]
        else:
            raise LookupError(f"{'.'.join(walked) or 'the top'} has no {part!r}")
        walked.append(part)
    return current


def check_settable(state: Any, path: str) -> None:
    """Raise LookupError, naming what is there, when `path` is not a place in `state` a step may set.

    Every part but the last must be there. The last may be new only where the state keeps records by
    key (a mapping whose values are all mappings or lists, or an empty one: `orders.3001` adds an
    order) or as the next item of a list; a new key beside plain values (`orders.1001.statsu`) is
    a typo, not a new field: set the whole record to give it one."""
    parts = _path_parts(path)
    if not parts:
        raise LookupError('give a path such as "orders.1001"')
    current = state
    walked: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        where = ".".join(walked)
        if isinstance(current, dict):
            if part in current:
                current = current[part]
            elif last and all(isinstance(v, (dict, list)) for v in current.values()):
                return  # a new record beside the others
            else:
                raise LookupError(_not_there(part, where, [str(k) for k in current]))
        elif isinstance(current, list) and part.lstrip("-").isdigit():
            number = int(part)
            if last and number == len(current):
                return  # the next item
            if not -len(current) <= number < len(current):
                raise LookupError(f"{where or 'the state'} is a list of {len(current)} item(s): it has no item "
                                  f"{part} (a step may add item {len(current)})")
            current = current[number]
        else:
            raise LookupError(f"{where or 'the state'} is {short(current, 80)}, which has no {part!r}")
        walked.append(part)


def _not_there(part: str, where: str, keys: list[str]) -> str:
    prefix = f"{where}." if where else ""
    shown = ", ".join(f"{prefix}{k}" for k in keys[:20]) + (f" and {len(keys) - 20} more" if len(keys) > 20 else "")
    return f"there is no {prefix}{part}; " + (f"the paths {'there' if where else 'at the top'} are {shown}" if keys
                                              else f"{where or 'the state'} is empty")


def put_path(state: dict[str, Any], path: str, value: Any) -> None:
    parts = _path_parts(path)
    if not parts:
        raise ValueError("give a path such as \"orders.1001\"")
    current: Any = state
    for part in parts[:-1]:
        if isinstance(current, list):
            current = current[int(part)]
            continue
        current = current.setdefault(part, {})
    last = parts[-1]
    if isinstance(current, list):
        index = int(last)
        if index == len(current):
            current.append(value)
        else:
            current[index] = value
    else:
        current[last] = value
