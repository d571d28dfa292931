"""Resend's broadcast API on a local port, answering as its documentation says.

- Bearer auth: no key is 401 `missing_api_key`, a key it does not know 403 `invalid_api_key`;
- `POST /broadcasts` creates a draft (`{"id"}`), 422 `validation_error` without `from`, `subject`
  or a body, 404 `not_found` for an unknown segment;
- `POST /broadcasts/{id}/send` sends (or schedules) it, 422 `validation_error` when it was sent
  already; the `Idempotency-Key` header is not read here (Resend reads it on emails only);
- `GET /broadcasts/{id}` shows it (`status`: draft, scheduled, sent);
- every error is `{"statusCode", "name", "message"}`; `rate_limit()` answers the next requests
  429 `rate_limit_exceeded` with `retry-after` and the `ratelimit-*` headers.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any

from connectors.http.vendor_server import Answer, Received, VendorServer

KEY = "re_test_0123456789"


def error(status: int, name: str, message: str, headers: dict[str, str] | None = None) -> Answer:
    return Answer(status, {"statusCode": status, "name": name, "message": message}, headers or {})


class ResendServer(VendorServer):
    def __init__(self, *, segments: dict[str, int] | None = None, key: str = KEY) -> None:
        super().__init__("resend")
        self.key = key
        self.segments = dict(segments or {"seg_newsletter": 3})
        self.broadcasts: dict[str, dict[str, Any]] = {}
        self.sends: list[str] = []  # each broadcast id the server sent, once per send it took
        self._ids = itertools.count(1)
        self._state = threading.Lock()
        self.route("POST", "/broadcasts")(self._create)
        self.route("POST", "/broadcasts/{id}/send")(self._send)
        self.route("GET", "/broadcasts/{id}")(self._get)

    def rate_limit(self, *, retry_after: int = 1, times: int = 1, path: str | None = None) -> None:
        """The next `times` requests are refused as Resend refuses past its rate (2 a second by default)."""
        self.fault(status=429, body={"statusCode": 429, "name": "rate_limit_exceeded",
                                     "message": "Too many requests. You can only make 2 requests per second."},
                   headers={"retry-after": str(retry_after), "ratelimit-limit": "2", "ratelimit-remaining": "0",
                            "ratelimit-reset": str(retry_after)}, times=times, path=path)

    def server_error(self, *, times: int = 1, path: str | None = None) -> None:
        self.fault(status=500, body={"statusCode": 500, "name": "internal_server_error",
                                     "message": "An unexpected error occurred."}, times=times, path=path)

    def _auth(self, request: Received) -> Answer | None:
        header = request.header("authorization") or ""
        if not header.startswith("Bearer ") or not header[7:]:
            return error(401, "missing_api_key", "Missing API key in the authorization header.")
        if header[7:] != self.key:
            return error(403, "invalid_api_key", "API key is invalid.")
        return None

    def _create(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._auth(request)
        if refused:
            return refused
        body = request.json() or {}
        for field in ("from", "subject"):
            if not body.get(field):
                return error(422, "validation_error", f"The `{field}` field is missing.")
        if not body.get("html") and not body.get("text"):
            return error(422, "validation_error", "Either `html` or `text` must be provided.")
        segment = body.get("segment_id") or body.get("audience_id")
        if segment not in self.segments:
            return error(404, "not_found", "Segment not found")
        with self._state:
            broadcast_id = f"00000000-0000-4000-8000-{next(self._ids):012d}"
            self.broadcasts[broadcast_id] = {
                "object": "broadcast", "id": broadcast_id, "name": body.get("name"), "segment_id": segment,
                "from": body["from"], "subject": body["subject"], "status": "draft",
                "created_at": "2026-12-04 21:00:00.000000+00", "scheduled_at": None, "sent_at": None}
        return Answer(200, {"id": broadcast_id})

    def _send(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._auth(request)
        if refused:
            return refused
        body = request.json() or {}
        with self._state:
            broadcast = self.broadcasts.get(params["id"])
            if broadcast is None:
                return error(404, "not_found", "Broadcast not found")
            if broadcast["status"] != "draft":
                return error(422, "validation_error", "This broadcast has already been sent.")
            if body.get("scheduled_at"):
                broadcast.update(status="scheduled", scheduled_at=body["scheduled_at"])
            else:
                broadcast.update(status="sent", sent_at="2026-12-04 21:00:01.000000+00")
            self.sends.append(params["id"])
        return Answer(200, {"id": params["id"]})

    def _get(self, request: Received, params: dict[str, str]) -> Answer:
        refused = self._auth(request)
        if refused:
            return refused
        broadcast = self.broadcasts.get(params["id"])
        if broadcast is None:
            return error(404, "not_found", "Broadcast not found")
        return Answer(200, dict(broadcast))
