"""Money an operation moves: which input field holds it, in which currency, and the most one call may
move (its ceiling).

    op(effect="money", input=RefundRequest, output=Refund, amount="amount_cents", currency="EUR",
       ceiling=1_000_000, summary="Refund {amount_cents:money} on order {order_id}")

`amount` names an integer input field holding the money in minor units (cents). `currency` is an
ISO 4217 code (`"EUR"`), or the name of a text input field holding one. `ceiling` is the largest
amount one call may move, in the same minor units: a call above it is refused `invalid_input`,
with an issue at the amount's path, before the policy or the vendor sees it. Each is checked when
the operation is declared.

A workflow whose input carries the amount refuses it at the start too (the start form, the API,
`manage.py start`) by declaring the field with the operation's own rule:

    class RefundInput(BaseModel):
        amount_cents: int = REFUND.amount_field(gt=0)

Plain Python: importable without Django.
"""
from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import AfterValidator, BaseModel, Field
from pydantic_core import PydanticCustomError

from connectors.errors import input_issue

CURRENCY_CODE = re.compile(r"^[A-Z]{3}$")
MAX_SAFE_INTEGER = 2**53 - 1  # what every JSON client holds exactly
ABOVE_CEILING = "above_ceiling"  # the issue's code


def format_money(cents: int, currency: str | None = None) -> str:
    """Minor units as people read them: 123456 -> `1,234.56`, with the currency when known
    (`1,234.56 EUR`)."""
    sign = "-" if cents < 0 else ""
    units, rest = divmod(abs(cents), 100)
    shown = f"{sign}{units:,}.{rest:02d}"
    return f"{shown} {currency}" if currency else shown


@dataclass(frozen=True)
class Money:
    """An amount in minor units, and its currency when known."""

    cents: int
    currency: str | None = None

    @property
    def shown(self) -> str:
        return format_money(self.cents, self.currency)

    def as_dict(self) -> dict[str, Any]:
        return {"cents": self.cents, "currency": self.currency, "shown": self.shown}


@dataclass(frozen=True)
class MoneyRule:
    """What a money operation declares: its amount's field, currency (code or field) and ceiling."""

    amount: str
    currency: str | None = None
    ceiling: int | None = None

    @property
    def fixed_currency(self) -> str | None:
        """The currency when the operation names its code (not a field)."""
        return self.currency if self.currency and CURRENCY_CODE.match(self.currency) else None

    def currency_of(self, input_json: Mapping[str, Any]) -> str | None:
        """The call's ISO 4217 code: the operation's own, or its input field's, in capitals (a
        vendor such as Stripe spells them `eur`); None when neither gives one."""
        if self.currency is None:
            return None
        if CURRENCY_CODE.match(self.currency):
            return self.currency
        value = input_json.get(self.currency)
        if not isinstance(value, str) or not CURRENCY_CODE.match(value.upper()) or not value.isascii():
            return None
        return value.upper()

    def money_of(self, input_json: Any) -> Money | None:
        """The money a call with this input moves (None: the input lacks a whole number there)."""
        if not isinstance(input_json, Mapping):
            return None
        value = input_json.get(self.amount)
        if isinstance(value, bool) or not isinstance(value, int):
            return None
        return Money(value, self.currency_of(input_json))

    def ceiling_issues(self, op_id: str, input_json: Any) -> list[dict[str, Any]]:
        """The issue of an amount above the ceiling (at the amount's path), or none."""
        money = self.money_of(input_json)
        if self.ceiling is None or money is None or money.cents <= self.ceiling:
            return []
        return [input_issue([self.amount], self.above(op_id, money), ABOVE_CEILING)]

    def above(self, op_id: str, money: Money) -> str:
        assert self.ceiling is not None
        return (f"{money.shown} is above the ceiling of {format_money(self.ceiling, money.currency)} "
                f"that {op_id} declares")


def check_money(*, op_id: str = "op", effect: str, input: type[BaseModel], amount: Any, currency: Any,
                ceiling: Any) -> MoneyRule | None:
    """The declaration's rule, or a clear error naming what is wrong with it."""
    if amount is None:
        if currency is not None or ceiling is not None:
            raise ValueError(f"{op_id}: currency and ceiling need amount, the input field holding the money")
        return None
    if effect != "money":
        raise ValueError(f"{op_id}: amount is for a money operation (effect=\"money\"); this one's effect is "
                         f"{effect}")
    fields = input.model_fields
    if not isinstance(amount, str) or amount not in fields:
        raise ValueError(f"{op_id}: amount={amount!r} is not an input field of {input.__name__}; its fields are "
                         f"{', '.join(fields)}")
    if fields[amount].annotation is not int:
        raise ValueError(f"{op_id}: amount={amount!r} must be an int field (the money in minor units, cents)")
    if ceiling is not None and (isinstance(ceiling, bool) or not isinstance(ceiling, int)
                                or not 0 < ceiling <= MAX_SAFE_INTEGER):
        raise ValueError(f"{op_id}: ceiling must be a whole number of minor units (cents) from 1 to 2^53 - 1; "
                         f"got {ceiling!r}")
    if currency is not None:
        if not isinstance(currency, str):
            raise ValueError(f"{op_id}: currency must be an ISO 4217 code such as 'EUR' or a text input field's "
                             f"name; got {currency!r}")
        if not CURRENCY_CODE.match(currency):
            if currency not in fields:
                raise ValueError(f"{op_id}: currency={currency!r} is neither an ISO 4217 code (three capitals, "
                                 f"'EUR') nor an input field of {input.__name__}")
            if fields[currency].annotation is not str:
                raise ValueError(f"{op_id}: currency={currency!r} must be a str field holding an ISO 4217 code")
    return MoneyRule(amount=amount, currency=currency, ceiling=ceiling)


def amount_field(op_id: str, rule: MoneyRule | None, **field: Any) -> Any:
    """A workflow input field for the amount `op_id` moves: `Field(**field)` that refuses an amount
    above the operation's ceiling with the issue the call gives (code `above_ceiling`, at the
    field), so the start form and the API refuse it before a run exists. The JSON Schema shows the
    ceiling as the field's `maximum`."""
    if rule is None:
        raise ValueError(f"{op_id} declares no amount: op(..., amount=<field>, ceiling=...) first")
    extra = dict(field.pop("json_schema_extra", None) or {})
    currency = rule.fixed_currency
    extra["x-money"] = {"op": op_id, "currency": currency, "ceiling": rule.ceiling}
    if rule.ceiling is not None:
        extra.setdefault("maximum", rule.ceiling)
    if "description" not in field:
        said = f"In minor units (cents){f' of {currency}' if currency else ''}"
        if rule.ceiling is not None:
            said += f"; at most {format_money(rule.ceiling, currency)}, the ceiling of {op_id}"
        field["description"] = said
    info = Field(json_schema_extra=extra, **field)

    def within_ceiling(value: int) -> int:
        if rule.ceiling is not None and value > rule.ceiling:
            said = rule.above(op_id, Money(value, currency))
            raise PydanticCustomError(ABOVE_CEILING, "{message}", {"message": said})
        return value

    # Checked after the field's own constraints (gt=0, ...), as part of the model: every surface
    # that validates the workflow's input refuses it alike.
    info.metadata.append(AfterValidator(within_ceiling))
    return info


__all__ = ["ABOVE_CEILING", "Money", "MoneyRule", "amount_field", "check_money", "format_money"]
