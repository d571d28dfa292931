"""Stripe's real driver: the official `stripe` library, over httpx.

- One `stripe.HTTPXClient` per driver (one pool of connections, the same HTTP library as every
  other vendor's driver), bounded on each request by the call's deadline (`CallContext.time_left()`).
- A `StripeClient` per API key and base URL, read from the call's secrets with each call
  (`STRIPE_API_KEY`, and `STRIPE_API_BASE` for a test server), so a rotated key is used at once.
- The library's own network retries are off (`max_network_retries=0`): the engine retries,
  durably when the wait is long, and only operations that may be tried again.
- Every write is sent with the call's idempotency key as Stripe's `Idempotency-Key`, the same on
  every attempt: Stripe answers a repeated request with its first answer, so a refund tried again
  after a lost answer is one refund.
- Stripe's errors (`stripe.StripeError`) are read as `DriverError`: the status, Stripe's own code
  (`vendor_code`), `retry_after` from `Retry-After`, and whether to try again from Stripe's
  `Stripe-Should-Retry` when it says (else from the status: 409 on a key in use, 429 and 5xx).

The `stripe` library (and httpx under it) is imported, and the HTTP client made, at the driver's first
request: every `manage.py` command makes the config's drivers, and most never call Stripe (the library
and its client are about a quarter of a second of each start).
"""
from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from connectors import CallContext, DriverError, define_driver
from connectors.errors import DriverTimeout
from connectors.http import pages, parse_retry_after, require_secrets
from connectors.vendors.stripe.connector import stripe
from connectors.vendors.stripe.models import (
    PaymentIntentCreate,
    PaymentIntentRef,
    RefundCreate,
    RefundQuery,
    RefundRef,
)
from connectors.vendors.stripe.resources import product, webhook_endpoint
from connectors.vendors.stripe.wording import driver_message

if TYPE_CHECKING:
    import stripe as stripe_sdk

DEFAULT_TIMEOUT = 30.0  # seconds, for a request made outside a call
PAGE_SIZE = 100  # Stripe's largest page
# Stripe's answer to the create of a webhook endpoint carries its signing secret; nothing of it is
# kept: not in the values, the plan, the ledger, or a log.
NEVER_KEPT = frozenset({"secret"})

_timeout: contextvars.ContextVar[float | None] = contextvars.ContextVar("stripe_timeout", default=None)


@functools.cache
def _deadline_httpx() -> type[stripe_sdk.HTTPXClient]:
    """The class of the driver's HTTP client, made with the library's first import."""
    import stripe as stripe_sdk

    class _DeadlineHTTPX(stripe_sdk.HTTPXClient):
        """The library's httpx client, each request bounded by the call's time left instead of one
        timeout fixed for the client's life. It hooks the method where the library (16.1.0, as pinned)
        builds each request's arguments; the driver's deadline test fails if a new version moves it."""

        def __init__(self) -> None:
            super().__init__(timeout=DEFAULT_TIMEOUT, allow_sync_methods=True)

        def _get_request_args_kwargs(self, method: str, url: str, headers: Mapping[str, str], post_data: Any):
            args, kwargs = super()._get_request_args_kwargs(method, url, headers, post_data)
            left = _timeout.get()
            if left is not None:
                kwargs["timeout"] = left
            return args, kwargs

    return _DeadlineHTTPX


class StripeDriver:
    """The functions of Stripe's operations, over one HTTP client (made at the first request)."""

    def __init__(self) -> None:
        self._http: stripe_sdk.HTTPXClient | None = None
        self._clients: dict[tuple[str, str | None], stripe_sdk.StripeClient] = {}
        self._lock = threading.Lock()

    @property
    def http(self) -> stripe_sdk.HTTPXClient:
        """The one HTTP client of every `StripeClient` of the driver."""
        with self._lock:
            if self._http is None:
                self._http = _deadline_httpx()()
            return self._http

    # ---- the client and its errors ---------------------------------------------------------

    def client(self, context: CallContext) -> stripe_sdk.StripeClient:
        key = require_secrets("stripe", context, "STRIPE_API_KEY")["STRIPE_API_KEY"]
        base = context.secrets.get("STRIPE_API_BASE") or None
        http = self.http
        with self._lock:
            made = self._clients.get((key, base))
            if made is None:
                import stripe as stripe_sdk

                made = stripe_sdk.StripeClient(
                    key, base_addresses={"api": base} if base else None, max_network_retries=0,
                    http_client=http)
                self._clients[(key, base)] = made
            return made

    def send(self, context: CallContext, what: str, request: Callable[[stripe_sdk.StripeClient], Any]) -> Any:
        """One request of the library, bounded by the call's deadline; its errors as `DriverError`."""
        import stripe as stripe_sdk

        client = self.client(context)
        token = _timeout.set(context.time_left() if context.deadline is not None else DEFAULT_TIMEOUT)
        try:
            return request(client)
        except stripe_sdk.StripeError as err:
            raise driver_error(err, what) from None
        finally:
            _timeout.reset(token)

    @staticmethod
    def write(context: CallContext) -> stripe_sdk.RequestOptions:
        """The request options of a write: the call's key as Stripe's `Idempotency-Key`."""
        return {"idempotency_key": context.idempotency_key}

    # ---- refunds and payment intents -------------------------------------------------------

    def create_refund(self, i: RefundCreate, c: CallContext) -> dict[str, Any]:
        # Stripe refunds in the payment's own currency: a refund the caller believes is in another
        # one (the currency the policy saw) is refused before any money moves.
        intent = self.get_payment_intent(PaymentIntentRef(id=i.payment_intent), c)
        if intent["currency"].upper() != i.currency:
            raise DriverError(f"stripe: payment {i.payment_intent} is in {intent['currency'].upper()}, not "
                              f"{i.currency}: the refund was not sent", retryable=False,
                              vendor_code="currency_mismatch")
        params: Any = {"payment_intent": i.payment_intent, "amount": i.amount}
        if i.reason:
            params["reason"] = i.reason
        return _plain(self.send(c, "POST /v1/refunds",
                                lambda s: s.v1.refunds.create(params=params, options=self.write(c))))

    def get_refund(self, i: RefundRef, c: CallContext) -> dict[str, Any]:
        return _plain(self.send(c, f"GET /v1/refunds/{i.id}", lambda s: s.v1.refunds.retrieve(i.id)))

    def list_refunds(self, i: RefundQuery, c: CallContext) -> dict[str, Any]:
        query: Any = {"payment_intent": i.payment_intent} if i.payment_intent else {}
        refunds = [_plain(r) for r in self.every(c, "GET /v1/refunds", lambda s, params: s.v1.refunds.list(
            params={**query, **params}))]
        return {"refunds": refunds, "total": sum(r["amount"] for r in refunds)}

    def create_payment_intent(self, i: PaymentIntentCreate, c: CallContext) -> dict[str, Any]:
        params: Any = {"amount": i.amount, "currency": i.currency.lower(), "confirm": i.confirm}
        for name in ("customer", "payment_method", "description"):
            if getattr(i, name):
                params[name] = getattr(i, name)
        return _plain(self.send(c, "POST /v1/payment_intents",
                                lambda s: s.v1.payment_intents.create(params=params, options=self.write(c))))

    def get_payment_intent(self, i: PaymentIntentRef, c: CallContext) -> dict[str, Any]:
        return _plain(self.send(c, f"GET /v1/payment_intents/{i.id}", lambda s: s.v1.payment_intents.retrieve(i.id)))

    def every(self, c: CallContext, what: str, fetch: Callable[[stripe_sdk.StripeClient, Any], Any]
              ) -> Iterator[Any]:
        """Every item of a Stripe list, page by page (`has_more`, `starting_after` the last id)."""
        def page(cursor: str | None) -> tuple[list[Any], str | None]:
            params: Any = {"limit": PAGE_SIZE}
            if cursor:
                params["starting_after"] = cursor
            answer = self.send(c, what, lambda s: fetch(s, params))
            items = list(answer.data)
            more = bool(answer.has_more) and bool(items)
            return items, (items[-1]["id"] if more else None)

        return pages(page, vendor="stripe")

    # ---- products ----------------------------------------------------------------------------

    def product_read(self, i: Any, c: CallContext) -> dict[str, Any]:
        try:
            found = _plain(self.send(c, f"GET /v1/products/{i.id}", lambda s: s.v1.products.retrieve(i.id)))
        except DriverError as err:
            if err.status == 404:
                return _gone(i.id)
            raise
        return _observed(i.id, found)

    def product_create(self, i: Any, c: CallContext) -> dict[str, Any]:
        d = i.desired
        params: Any = {k: d[k] for k in ("id", "name", "description", "active", "metadata") if k in d and d[k] != ""}
        made = _plain(self.send(c, "POST /v1/products",
                                lambda s: s.v1.products.create(params=params, options=self.write(c))))
        return _observed(product.import_id(d), made)

    def product_update(self, i: Any, c: CallContext) -> dict[str, Any]:
        params: Any = {k: v for k, v in i.changes.items() if k in ("name", "description", "active", "metadata")}
        if "metadata" in params:
            # Stripe merges the metadata it is sent: a key no longer declared is unset by sending it empty.
            held = self.product_read(i, c)
            if held.get("gone"):
                raise DriverError(f"stripe: no product {i.id}", status=404, vendor_code="resource_missing",
                                  retryable=False)
            dropped = {k: "" for k in held["values"].get("metadata") or {} if k not in params["metadata"]}
            params["metadata"] = {**dropped, **params["metadata"]}
        try:
            made = _plain(self.send(c, f"POST /v1/products/{i.id}",
                                    lambda s: s.v1.products.update(i.id, params=params, options=self.write(c))))
        except DriverError as err:
            if err.status == 404:
                raise DriverError(f"stripe: no product {i.id}", status=404, vendor_code="resource_missing",
                                  retryable=False) from None
            raise
        return _observed(i.id, made)

    def product_delete(self, i: Any, c: CallContext) -> dict[str, Any]:
        try:
            self.send(c, f"DELETE /v1/products/{i.id}", lambda s: s.v1.products.delete(i.id))
        except DriverError as err:
            if err.status != 404:
                raise
        return _gone(i.id)

    # ---- webhook endpoints -----------------------------------------------------------------

    def endpoint_find(self, url: str, c: CallContext) -> dict[str, Any] | None:
        for endpoint in self.every(c, "GET /v1/webhook_endpoints",
                                   lambda s, params: s.v1.webhook_endpoints.list(params=params)):
            if endpoint["url"] == url:
                return _plain(endpoint)
        return None

    def endpoint_read(self, i: Any, c: CallContext) -> dict[str, Any]:
        if getattr(i, "handle", None):
            try:
                found = _plain(self.send(c, f"GET /v1/webhook_endpoints/{i.handle}",
                                         lambda s: s.v1.webhook_endpoints.retrieve(i.handle)))
            except DriverError as err:
                if err.status == 404:
                    return _gone(i.id)
                raise
            return _observed(i.id, found) if found.get("url") == i.id else _gone(i.id)
        found_by_url = self.endpoint_find(i.id, c)
        return _gone(i.id) if found_by_url is None else _observed(i.id, found_by_url)

    def endpoint_create(self, i: Any, c: CallContext) -> dict[str, Any]:
        d = i.desired
        params: Any = {"url": d["url"], "enabled_events": list(d["enabled_events"])}
        if d.get("description"):
            params["description"] = d["description"]
        made = _plain(self.send(c, "POST /v1/webhook_endpoints",
                                lambda s: s.v1.webhook_endpoints.create(params=params, options=self.write(c))))
        return _observed(webhook_endpoint.import_id(d), made)

    def endpoint_update(self, i: Any, c: CallContext) -> dict[str, Any]:
        handle = self._endpoint_handle(i, c)
        if handle is None:
            raise DriverError(f"stripe: no webhook endpoint to {i.id}", status=404, vendor_code="resource_missing",
                              retryable=False)
        params: Any = {k: (list(v) if k == "enabled_events" else v) for k, v in i.changes.items()
                  if k in ("enabled_events", "description")}
        made = _plain(self.send(c, f"POST /v1/webhook_endpoints/{handle}",
                                lambda s: s.v1.webhook_endpoints.update(handle, params=params, options=self.write(c))))
        return _observed(i.id, made)

    def endpoint_delete(self, i: Any, c: CallContext) -> dict[str, Any]:
        handle = self._endpoint_handle(i, c)
        if handle is not None:
            try:
                self.send(c, f"DELETE /v1/webhook_endpoints/{handle}",
                          lambda s: s.v1.webhook_endpoints.delete(handle))
            except DriverError as err:
                if err.status != 404:
                    raise
        return _gone(i.id)

    def _endpoint_handle(self, i: Any, c: CallContext) -> str | None:
        found = self.endpoint_read(i, c)
        return None if found.get("gone") else str(found["handle"])


def _header(headers: Any, name: str) -> str | None:
    if not headers:
        return None
    try:
        value = headers.get(name)
        if value is None:
            value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    except AttributeError:
        return None
    return None if value is None else str(value)


def driver_error(err: stripe_sdk.StripeError, what: str) -> DriverError:
    """Stripe's error as the engine reads it: status, Stripe's code, Retry-After, whether to try again."""
    import httpx
    import stripe as stripe_sdk

    if isinstance(err, stripe_sdk.APIConnectionError):
        cause = err.__cause__
        if isinstance(cause, httpx.TimeoutException):
            return DriverTimeout(f"stripe did not answer {what} in time", retryable=True, cause=err)
        return DriverError(f"stripe could not be reached for {what}: {type(cause).__name__ if cause else err}",
                           retryable=True, cause=err)
    body = err.error
    code = (getattr(body, "code", None) if body is not None else None) or err.code
    kind = getattr(body, "type", None) if body is not None else None
    message = err.user_message or (getattr(body, "message", None) if body is not None else None) or "no message"
    status = err.http_status
    told = _header(err.headers, "Stripe-Should-Retry")
    retryable = None if told is None else told.strip().lower() == "true"
    return DriverError(driver_message(status, what, kind, code, message), status=status, vendor_code=code or kind,
                       retryable=retryable, retry_after=parse_retry_after(_header(err.headers, "Retry-After")),
                       cause=err)


def _plain(obj: Any) -> dict[str, Any]:
    """A Stripe object as a plain dict, without what is never kept."""
    data = obj.to_dict() if hasattr(obj, "to_dict") else dict(obj)
    return {k: v for k, v in data.items() if k not in NEVER_KEPT}


def _observed(id: str, values: Mapping[str, Any]) -> dict[str, Any]:
    return {"id": id, "handle": str(values["id"]), "values": {k: v for k, v in values.items() if k not in NEVER_KEPT}}


def _gone(id: str) -> dict[str, Any]:
    return {"id": id, "gone": True}


def make_driver():
    d = StripeDriver()
    return define_driver(
        stripe,
        {
            "refund": {"create": d.create_refund, "get": d.get_refund, "list": d.list_refunds},
            "payment_intent": {"create": d.create_payment_intent, "get": d.get_payment_intent},
            "product": {"import": d.product_read, "read": d.product_read, "create": d.product_create,
                        "update": d.product_update, "delete": d.product_delete},
            "webhook_endpoint": {"import": d.endpoint_read, "read": d.endpoint_read, "create": d.endpoint_create,
                                 "update": d.endpoint_update, "delete": d.endpoint_delete},
        },
    )
