"""An operation's summary and phrases in its own words: `{field}` placeholders filled from a call's
input ("Refund 1,234.56 EUR on order 1001")."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from connectors.money import format_money

if TYPE_CHECKING:
    from connectors.operations.operation import Operation

# `{field}`; a backslash-escaped `\{` is literal text, as in the scenarios' step expressions.
_PLACEHOLDER = re.compile(r"(?<!\\)\{([^{}\\]+)\}")


# `{field}`, `{field:money}`, or a path into a field holding an object: `{desired.user}`.
_SUMMARY_FIELD = re.compile(r"\{([a-zA-Z_][a-zA-Z0-9_]*(?:\.[a-zA-Z_][a-zA-Z0-9_]*)*)(?::([a-z]+))?\}")

SUMMARY_FORMATS = ("money",)


def check_summary(template: Any, input: type[BaseModel]) -> None:
    """A summary names input fields, each optionally formatted (`{amount_cents:money}`); a path
    (`{desired.user}`) reads into a field holding an object."""
    if not isinstance(template, str) or not template.strip():
        raise ValueError("summary must be a sentence such as 'Refund {amount_cents:money} on order {order_id}'")
    for path, kind in _SUMMARY_FIELD.findall(template):
        name = path.split(".")[0]
        if name not in input.model_fields:
            raise ValueError(f"summary {template!r} names {{{path}}}, which is not an input field; "
                             f"its fields are {', '.join(input.model_fields)}")
        if kind and kind not in SUMMARY_FORMATS:
            raise ValueError(f"summary {template!r}: {{{path}:{kind}}} is not a format; the formats are "
                             f"{', '.join(SUMMARY_FORMATS)}")


def _at(value: Any, path: str) -> Any:
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def summarize(operation: Operation, input_json: Any) -> str:
    """The operation's summary for one call's input ("" without a summary). Money is cents shown
    as units with two decimals and thousands separated (123456 -> 1,234.56), with the currency
    when it is the operation's declared amount and its currency is known (1,234.56 EUR)."""
    if not operation.summary or not isinstance(input_json, dict):
        return ""

    def field(match: re.Match[str]) -> str:
        path = match.group(1)
        value = _at(input_json, path)
        if match.group(2) == "money" and isinstance(value, int) and not isinstance(value, bool):
            money = operation.money_of(input_json) if path == operation.amount else None
            return format_money(value, money.currency if money else None)
        return "?" if value is None else str(value)

    return _SUMMARY_FIELD.sub(field, operation.summary)


def phrase_fields(template: str) -> list[str]:
    return _PLACEHOLDER.findall(template)
