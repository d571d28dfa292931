"""A local server answering as Stripe's documented API does, for the driver's tests.

What it keeps to, from Stripe's API reference:

- requests are form-encoded (`a=1`, `list[0]=x`, `map[k]=v`); every answer is JSON with an
  `object` field; each has a `Request-Id` header;
- a request without the server's secret key is `401`; an error's body is `{"error": {"type", "code", "message",
  "param"}}`: `invalid_request_error` (`400`, `404` with `resource_missing`), `card_error` (`402`),
  `idempotency_error` (`400`), `api_error` (`500`), a rate limit (`429`, code `rate_limit`);
- a POST with an `Idempotency-Key` saves the status and body of its answer once the endpoint has
  begun (a request refused on its parameters is not saved); the same key with the same parameters
  is answered the saved answer again, with `Idempotent-Replayed: true`; the same key with other
  parameters is `400 idempotency_error`; a key whose first request is still running is `409`
  (`idempotency_key_in_use`, `Stripe-Should-Retry: true`);
- lists are newest first, `limit` (1 to 100, 10 by default) items a page, `has_more`, and the next
  page after the id `starting_after` names;
- a refund is of a succeeded payment intent, in its currency, up to what is left of it:
  `charge_already_refunded` once nothing is left, `amount_too_large` past what is;
- a webhook endpoint's `secret` is in the answer to its create only.

Besides the base's faults (a 429 or 5xx answered before the endpoint runs, slow answers, dropped
connections), `lose_answer` runs the endpoint and then drops the connection (the effect happened,
the caller never hears of it), and `fail_after_effect` runs it and answers a 500, which Stripe
saves under the key like any answer.
"""
from __future__ import annotations

import itertools
import re
import threading
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, cast

from connectors.http.vendor_server import Answer, Received, VendorServer
from connectors.vendors.stripe.wording import (
    already_refunded,
    amount_over_maximum,
    no_such,
    not_refundable,
    refund_too_large,
)

API_KEY = "sk_test_" + "local0server0key"  # the secret key the server takes by default

Handler = Callable[[Received, dict[str, str], dict[str, Any]], Answer]

_INDEX = re.compile(r"\[([^\[\]]*)\]")


def decode_form(body: bytes | str) -> dict[str, Any]:
    """A form-encoded body as Stripe reads it: `a[b]=1` a map, `a[0]=x` a list."""
    text = body.decode() if isinstance(body, bytes) else body
    out: dict[str, Any] = {}
    for key, value in urllib.parse.parse_qsl(text, keep_blank_values=True):
        head = key.split("[", 1)[0]
        parts = [head] + _INDEX.findall(key[len(head):])
        node: Any = out
        for part, nxt in itertools.pairwise(parts):
            if isinstance(node, list):
                index = int(part)
                while len(node) <= index:
                    node.append(None)
                if node[index] is None:
                    node[index] = [] if nxt.isdigit() else {}
                node = node[index]
            else:
                node = node.setdefault(part, [] if nxt.isdigit() else {})
        last = parts[-1]
        if isinstance(node, list):
            index = int(last)
            while len(node) <= index:
                node.append(None)
            node[index] = value
        else:
            node[last] = value
    return out


def error(status: int, type: str, message: str, *, code: str | None = None, param: str | None = None,
          headers: dict[str, str] | None = None) -> Answer:
    body: dict[str, Any] = {"type": type, "message": message}
    if code:
        body["code"] = code
    if param:
        body["param"] = param
    return Answer(status, {"error": body}, dict(headers or {}))


class Refused(Exception):
    """A request refused on its parameters, before the endpoint ran: never saved under its key."""

    def __init__(self, answer: Answer) -> None:
        super().__init__(answer.body)
        self.answer = answer


def _missing(param: str) -> Refused:
    return Refused(error(400, "invalid_request_error", f"Missing required param: {param}.", code="parameter_missing",
                         param=param))


def _integer(params: dict[str, Any], name: str) -> int:
    if name not in params:
        raise _missing(name)
    try:
        value = int(params[name])
    except (TypeError, ValueError):
        raise Refused(error(400, "invalid_request_error", f"Invalid integer: {params[name]}",
                            code="parameter_invalid_integer", param=name)) from None
    if value < 1:
        raise Refused(error(400, "invalid_request_error", "This value must be greater than or equal to 1.",
                            code="parameter_invalid_integer", param=name))
    if value > 99_999_999:
        largest = amount_over_maximum(99_999_999, str(params.get("currency") or "usd"))
        raise Refused(error(400, "invalid_request_error", largest, code="amount_too_large", param=name))
    return value


def _flag(value: Any) -> bool:
    return str(value).lower() == "true"


@dataclass
class _Saved:
    method: str
    path: str
    params: dict[str, Any]
    answer: Answer | None = None  # None while the first request runs


@dataclass
class StripeState:
    payment_intents: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunds: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    products: dict[str, dict[str, Any]] = field(default_factory=dict)
    webhook_endpoints: dict[str, dict[str, Any]] = field(default_factory=dict)
    refunded: dict[str, int] = field(default_factory=dict)  # payment intent -> amount refunded
    keys: dict[str, _Saved] = field(default_factory=dict)


class StripeServer(VendorServer):
    """Stripe's API on a local port (see the module's docstring)."""

    def __init__(self, api_key: str = API_KEY) -> None:
        super().__init__("stripe")
        self.api_key = api_key
        self.stripe = StripeState()
        self._counter = itertools.count(1)
        self._state_lock = threading.RLock()
        self._after: list[tuple[str, str]] = []  # (kind, path prefix): lose | fail
        self._declare()

    def __enter__(self) -> StripeServer:
        self.start()
        return self

    # ---- seeding and faults --------------------------------------------------------------------

    def pay(self, amount: int, currency: str = "eur", *, customer: str | None = None) -> str:
        """A succeeded card payment of `amount` (minor units): its payment intent's id."""
        with self._state_lock:
            n = next(self._counter)
            intent: dict[str, Any] = {
                "id": f"pi_{n:06d}", "object": "payment_intent", "amount": amount, "amount_received": amount,
                "currency": currency.lower(), "status": "succeeded", "customer": customer,
                "latest_charge": f"ch_{n:06d}", "created": int(time.time())}
            self.stripe.payment_intents[intent["id"]] = intent
            return intent["id"]

    def lose_answer(self, path: str) -> None:
        """The next POST to `path` takes effect, then the connection drops without an answer."""
        self._after.append(("lose", path))

    def fail_after_effect(self, path: str) -> None:
        """The next POST to `path` takes effect, then is answered 500 (saved under its key)."""
        self._after.append(("fail", path))

    def rate_limit(self, *, retry_after: float | None = None, path: str | None = None, times: int = 1) -> None:
        """The next requests are refused as Stripe refuses too many: 429, code `rate_limit`."""
        headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
        self.fault(status=429, path=path, times=times, headers=headers,
                   body={"error": {"type": "invalid_request_error", "code": "rate_limit",
                                   "message": "Too many requests hit the API too quickly."}})

    def refunds_of(self, payment_intent: str) -> list[dict[str, Any]]:
        with self._state_lock:
            return [r for r in self.stripe.refunds if r["payment_intent"] == payment_intent]

    # ---- the API -------------------------------------------------------------------------------

    def _id(self, prefix: str) -> str:
        return f"{prefix}_{next(self._counter):06d}"

    def _declare(self) -> None:
        s = self
        routes: list[tuple[str, str, Handler]] = [
            ("POST", "/v1/payment_intents", s._create_payment_intent),
            ("GET", "/v1/payment_intents/{id}", s._get_payment_intent),
            ("POST", "/v1/refunds", s._create_refund),
            ("GET", "/v1/refunds", s._list_refunds),
            ("GET", "/v1/refunds/{id}", s._get_refund),
            ("POST", "/v1/products", s._create_product),
            ("GET", "/v1/products/{id}", s._get_product),
            ("POST", "/v1/products/{id}", s._update_product),
            ("DELETE", "/v1/products/{id}", s._delete_product),
            ("POST", "/v1/webhook_endpoints", s._create_endpoint),
            ("GET", "/v1/webhook_endpoints", s._list_endpoints),
            ("GET", "/v1/webhook_endpoints/{id}", s._get_endpoint),
            ("POST", "/v1/webhook_endpoints/{id}", s._update_endpoint),
            ("DELETE", "/v1/webhook_endpoints/{id}", s._delete_endpoint),
        ]
        for method, pattern, handler in routes:
            self.route(method, pattern)(self._endpoint(method, handler))

    def _endpoint(self, method: str, handler: Handler) -> Callable[[Received, dict[str, str]], Answer]:
        def serve(request: Received, path_params: dict[str, str]) -> Answer:
            answer = self._answer(method, request, path_params, handler)
            if answer is None:
                return cast(Answer, None)  # the base drops the connection
            answer.headers.setdefault("Request-Id", f"req_{next(self._counter):06d}")
            return answer

        return serve

    def _answer(self, method: str, request: Received, path_params: dict[str, str], handler: Handler
                ) -> Answer | None:
        auth = request.header("Authorization") or ""
        if not auth.startswith("Bearer "):
            return error(401, "invalid_request_error", "You did not provide an API key.")
        if auth.removeprefix("Bearer ") != self.api_key:
            shown = auth.removeprefix("Bearer ")[:8] + "*" * 4
            return error(401, "invalid_request_error", f"Invalid API Key provided: {shown}")
        if method == "GET":
            params: dict[str, Any] = {k: v[-1] for k, v in request.query.items()}
        else:
            params = decode_form(request.body)
        key = request.header("Idempotency-Key") if method == "POST" else None
        if key is None:
            return self._run(method, request, path_params, params, handler)[1]
        with self._state_lock:
            saved = self.stripe.keys.get(key)
            if saved is not None:
                if (saved.method, saved.path, saved.params) != (method, request.path, params):
                    return error(400, "idempotency_error",
                                 f"Keys for idempotent requests can only be used with the same parameters they were "
                                 f"first used with. Try using a key other than '{key}' if you meant to execute a "
                                 f"different request.")
                if saved.answer is None:
                    return error(409, "idempotency_error", "There is currently another in-progress request using "
                                                           "this Idempotent Key.", code="idempotency_key_in_use",
                                 headers={"Stripe-Should-Retry": "true"})
                replay = saved.answer
                return Answer(replay.status, replay.body, {**replay.headers, "Idempotent-Replayed": "true"})
            self.stripe.keys[key] = _Saved(method, request.path, params)
        ran, answer = self._run(method, request, path_params, params, handler)
        with self._state_lock:
            if ran is None:  # refused on its parameters: nothing saved, the key is free again
                del self.stripe.keys[key]
            else:
                self.stripe.keys[key].answer = ran
        return answer

    def _run(self, method: str, request: Received, path_params: dict[str, str], params: dict[str, Any],
             handler: Handler) -> tuple[Answer | None, Answer | None]:
        """The endpoint's answer to save under the key (None when refused before it ran), and the
        answer sent (None: the connection is dropped)."""
        try:
            with self._state_lock:
                answer = handler(request, path_params, params)
        except Refused as refused:
            return None, refused.answer
        after = next((a for a in self._after if method == "POST" and request.path.startswith(a[1])), None)
        if after is None:
            return answer, answer
        self._after.remove(after)
        if after[0] == "lose":
            return answer, None  # the effect stands and is saved; the caller hears nothing
        failed = error(500, "api_error", "An unknown error occurred while processing the request.")
        return failed, failed

    def _serve(self, received: Received) -> Answer | None:
        answer = super()._serve(received)
        if answer is not None and answer.status >= 400 and "Request-Id" not in answer.headers:
            answer.headers["Request-Id"] = f"req_{next(self._counter):06d}"
        return answer

    # payment intents

    def _create_payment_intent(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        amount = _integer(p, "amount")
        if not p.get("currency"):
            raise _missing("currency")
        confirmed = _flag(p.get("confirm")) and bool(p.get("payment_method"))
        n = self._id("pi")
        intent = {"id": n, "object": "payment_intent", "amount": amount,
                  "amount_received": amount if confirmed else 0, "currency": str(p["currency"]).lower(),
                  "status": "succeeded" if confirmed else "requires_payment_method",
                  "customer": p.get("customer"), "description": p.get("description"),
                  "latest_charge": f"ch_{n[3:]}" if confirmed else None, "created": int(time.time())}
        self.stripe.payment_intents[n] = intent
        return Answer(200, dict(intent))

    def _get_payment_intent(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        intent = self.stripe.payment_intents.get(path["id"])
        if intent is None:
            return error(404, "invalid_request_error", no_such("payment_intent", path["id"]),
                         code="resource_missing", param="intent")
        return Answer(200, dict(intent))

    # refunds

    def _create_refund(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        if not p.get("payment_intent") and not p.get("charge"):
            raise _missing("payment_intent")
        intent = self.stripe.payment_intents.get(str(p.get("payment_intent")))
        if intent is None:
            raise Refused(error(404, "invalid_request_error", no_such("payment_intent", str(p.get("payment_intent"))),
                                code="resource_missing", param="payment_intent"))
        if intent["status"] != "succeeded":
            return error(400, "invalid_request_error", not_refundable(intent["id"]),
                         code="charge_not_refundable", param="payment_intent")
        refunded = self.stripe.refunded.get(intent["id"], 0)
        left = intent["amount_received"] - refunded
        amount = _integer(p, "amount") if "amount" in p else left
        if left <= 0:
            return error(400, "invalid_request_error", already_refunded(intent["latest_charge"]),
                         code="charge_already_refunded")
        if amount > left:
            return error(400, "invalid_request_error", refund_too_large(amount, left, intent["currency"]),
                         code="amount_too_large", param="amount")
        refund = {"id": self._id("re"), "object": "refund", "amount": amount, "currency": intent["currency"],
                  "payment_intent": intent["id"], "charge": intent["latest_charge"], "status": "succeeded",
                  "reason": p.get("reason"), "created": int(time.time())}
        self.stripe.refunded[intent["id"]] = refunded + amount
        self.stripe.refunds.append(refund)
        return Answer(200, dict(refund))

    def _get_refund(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        found = next((r for r in self.stripe.refunds if r["id"] == path["id"]), None)
        if found is None:
            return error(404, "invalid_request_error", no_such("refund", path["id"]), code="resource_missing",
                         param="id")
        return Answer(200, dict(found))

    def _list_refunds(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        wanted = p.get("payment_intent")
        items = [r for r in self.stripe.refunds if not wanted or r["payment_intent"] == wanted]
        return self._page("/v1/refunds", list(reversed(items)), p)

    def _page(self, url: str, newest_first: list[dict[str, Any]], p: dict[str, Any]) -> Answer:
        try:
            limit = int(p.get("limit", 10))
        except ValueError:
            return error(400, "invalid_request_error", f"Invalid integer: {p['limit']}",
                         code="parameter_invalid_integer", param="limit")
        if not 1 <= limit <= 100:
            return error(400, "invalid_request_error", f"This value must be less than or equal to 100 (it currently "
                                                       f"is '{limit}')", code="parameter_invalid_integer",
                         param="limit")
        start = 0
        after = p.get("starting_after")
        if after:
            ids = [item["id"] for item in newest_first]
            if after not in ids:
                return error(400, "invalid_request_error", no_such("object", after), code="resource_missing",
                             param="starting_after")
            start = ids.index(after) + 1
        data = [{k: v for k, v in item.items() if k != "secret"} for item in newest_first[start:start + limit]]
        return Answer(200, {"object": "list", "url": url, "has_more": start + limit < len(newest_first), "data": data})

    # products

    def _product(self, id: str) -> dict[str, Any]:
        found = self.stripe.products.get(id)
        if found is None:
            raise Refused(error(404, "invalid_request_error", no_such("product", id), code="resource_missing",
                                param="id"))
        return found

    def _create_product(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        if not p.get("name"):
            raise _missing("name")
        id = p.get("id") or self._id("prod")
        if id in self.stripe.products:
            raise Refused(error(400, "invalid_request_error", "Product already exists.",
                                code="resource_already_exists", param="id"))
        made = {"id": id, "object": "product", "name": p["name"], "description": p.get("description") or None,
                "active": _flag(p.get("active", "true")), "metadata": dict(p.get("metadata") or {}),
                "created": int(time.time())}
        self.stripe.products[id] = made
        return Answer(200, dict(made))

    def _get_product(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        return Answer(200, dict(self._product(path["id"])))

    def _update_product(self, _: Received, path: dict[str, str], p: dict[str, Any]) -> Answer:
        found = self._product(path["id"])
        for name in ("name", "description"):
            if name in p:
                found[name] = p[name] or None
        if "active" in p:
            found["active"] = _flag(p["active"])
        if "metadata" in p:
            metadata = dict(found["metadata"])
            for k, v in (p["metadata"] or {}).items():
                if v == "":
                    metadata.pop(k, None)  # Stripe: an empty value unsets the key
                else:
                    metadata[k] = v
            found["metadata"] = metadata
        return Answer(200, dict(found))

    def _delete_product(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        self._product(path["id"])
        del self.stripe.products[path["id"]]
        return Answer(200, {"id": path["id"], "object": "product", "deleted": True})

    # webhook endpoints

    def _endpoint_of(self, id: str) -> dict[str, Any]:
        found = self.stripe.webhook_endpoints.get(id)
        if found is None:
            raise Refused(error(404, "invalid_request_error", no_such("webhook endpoint", id),
                                code="resource_missing", param="id"))
        return found

    def _create_endpoint(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        if not p.get("url"):
            raise _missing("url")
        if not p.get("enabled_events"):
            raise _missing("enabled_events")
        made = {"id": self._id("we"), "object": "webhook_endpoint", "url": p["url"],
                "enabled_events": list(p["enabled_events"]), "description": p.get("description") or None,
                "status": "enabled", "secret": f"whsec_{next(self._counter):024d}", "created": int(time.time())}
        self.stripe.webhook_endpoints[made["id"]] = made
        return Answer(200, dict(made))  # the only answer with the secret

    def _shown(self, endpoint: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in endpoint.items() if k != "secret"}

    def _get_endpoint(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        return Answer(200, self._shown(self._endpoint_of(path["id"])))

    def _list_endpoints(self, _: Received, __: dict[str, str], p: dict[str, Any]) -> Answer:
        return self._page("/v1/webhook_endpoints", list(reversed(self.stripe.webhook_endpoints.values())), p)

    def _update_endpoint(self, _: Received, path: dict[str, str], p: dict[str, Any]) -> Answer:
        found = self._endpoint_of(path["id"])
        if "enabled_events" in p:
            found["enabled_events"] = list(p["enabled_events"])
        if "description" in p:
            found["description"] = p["description"] or None
        if "disabled" in p:
            found["status"] = "disabled" if _flag(p["disabled"]) else "enabled"
        return Answer(200, self._shown(found))

    def _delete_endpoint(self, _: Received, path: dict[str, str], __: dict[str, Any]) -> Answer:
        self._endpoint_of(path["id"])
        del self.stripe.webhook_endpoints[path["id"]]
        return Answer(200, {"id": path["id"], "object": "webhook_endpoint", "deleted": True})
