"""Stripe's own words: the messages its API answers with, written once for the fake and the local
test server, and the message the driver makes of an error. So the fake's refusals read exactly as
the real driver's do over Stripe's API (`stripe answered 404 to GET /v1/payment_intents/pi_9
(invalid_request_error resource_missing): No such payment_intent: 'pi_9'`).

Stripe writes an amount in an error message in the currency's own notation: `€15.00`, `$0.90`,
`¥1,500` (a zero-decimal currency has no fraction); a currency without a symbol here is written
with its code (`15.00 SEK`).
"""
from __future__ import annotations

SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£", "JPY": "¥"}
# Stripe's zero-decimal currencies: an amount is in whole units.
ZERO_DECIMAL = {"BIF", "CLP", "DJF", "GNF", "JPY", "KMF", "KRW", "MGA", "PYG", "RWF", "UGX", "VND", "VUV", "XAF",
                "XOF", "XPF"}


def amount_shown(amount: int, currency: str) -> str:
    """An amount in minor units as Stripe writes it in a message: `€15.00`, `¥1500`, `15.00 SEK`."""
    code = currency.upper()
    number = f"{amount:,}" if code in ZERO_DECIMAL else f"{amount // 100:,}.{amount % 100:02d}"
    symbol = SYMBOLS.get(code)
    return f"{symbol}{number}" if symbol else f"{number} {code}"


def no_such(kind: str, id: str) -> str:
    """`No such payment_intent: 'pi_9'` (404 resource_missing)."""
    return f"No such {kind}: '{id}'"


def refund_too_large(amount: int, left: int, currency: str) -> str:
    """A refund past what is left of its charge (400 amount_too_large)."""
    return (f"Refund amount ({amount_shown(amount, currency)}) is greater than unrefunded amount on charge "
            f"({amount_shown(left, currency)})")


def already_refunded(charge: str) -> str:
    """A refund of a charge with nothing left (400 charge_already_refunded)."""
    return f"Charge {charge} has already been refunded."


def not_refundable(intent: str) -> str:
    """A refund of a payment without a successful charge (400 charge_not_refundable)."""
    return f"This PaymentIntent ({intent}) does not have a successful charge to refund."


def amount_over_maximum(maximum: int, currency: str) -> str:
    """An amount past Stripe's largest (400 amount_too_large)."""
    return f"Amount must be no more than {amount_shown(maximum, currency)}"


def driver_message(status: int | None, what: str, kind: str | None, code: str | None, message: str) -> str:
    """The driver's error message for Stripe's error answer to `what` (`POST /v1/refunds`)."""
    shown = " ".join(p for p in (kind, code) if p)
    return f"stripe answered {status} to {what}" + (f" ({shown})" if shown else "") + f": {message}"


__all__ = ["already_refunded", "amount_over_maximum", "amount_shown", "driver_message", "no_such",
           "not_refundable", "refund_too_large"]
