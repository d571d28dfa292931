"""How the API's lists are paged: DRF's own pagination, strict about its parameters.

Two kinds, chosen per endpoint:

- `Page` (limit and offset): `{count, next, previous, results}`. For the short lists (workflows,
  connectors, approvals, the inbox, pauses, collections, credentials, scenarios): the count is one
  cheap query (or the length of a list already in memory), and a person paging a filtered list
  wants to know how many match.
- `RunsPage`, the runs list's: `{count, count_exact, next, previous, results}`. The runs that match
  are counted up to 10,000 past the page's start (`runs.selectors.bounded_count`): a list of
  100,000 parked runs costs what a list of 10,000 does. Past that, `count_exact` is false and
  `count` says how many at least (more than it match); `next` is there while a next page is.
- `LedgerCursor` (an opaque cursor on `seq`): `{next, previous, results}` with no count. A ledger
  only grows, at its end, while a run goes on; a cursor keeps its place across those appends, costs
  no COUNT and no OFFSET scan over a long ledger, and its `next` link is how a reader follows a run.

DRF's paginators quietly fall back to the default on a bad `limit` (`limit=0`, `limit=abc`) and answer
404 on a bad cursor; here each is `400 invalid_input` naming the parameter, like every other bad
input to the API.
"""
from __future__ import annotations

from base64 import b64decode
from typing import Any
from urllib import parse

from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination
from rest_framework.request import Request
from rest_framework.response import Response

from connectors.errors import IssueCode
from runs.api.base import invalid_input

# The largest `offset` a page may start at: a signed 64-bit integer, what every database can take.
MAX_OFFSET = 2**63 - 1


def whole_number(request: Request, name: str, *, default: int, low: int, high: int) -> int:
    """The query parameter `name` as an integer from `low` to `high`, `default` when absent."""
    raw = request.query_params.get(name)
    if raw is None:
        return default
    text = raw.strip()
    if not text.isascii() or not text.lstrip("-").isdigit():
        raise invalid_input(f"{name} must be a whole number from {low} to {high}; got {raw[:40]!r}",
                            path=[name], issue="not a whole number", issue_code=IssueCode.INVALID)
    digits = text.lstrip("-").lstrip("0")
    value = int(text) if len(digits) <= len(str(high)) else (high + 1 if not text.startswith("-") else low - 1)
    if not low <= value <= high:
        raise invalid_input(f"{name} must be a whole number from {low} to {high}; got {raw[:40]!r}",
                            path=[name], issue="out of range", issue_code=IssueCode.OUT_OF_RANGE)
    return value


class Page(LimitOffsetPagination):
    """`?limit=` (1 to `max_limit`, default `default_limit`) and `?offset=` (0 to 2^63 - 1)."""

    default_limit = 20
    max_limit = 500

    def get_limit(self, request: Request) -> int:
        return whole_number(request, self.limit_query_param, default=self.default_limit, low=1, high=self.max_limit)

    def get_offset(self, request: Request) -> int:
        return whole_number(request, self.offset_query_param, default=0, low=0, high=MAX_OFFSET)

    def answer(self, request: Request, results: Any, *, count: int, limit: int, offset: int) -> Response:
        """The paginated answer for a page a selector has already cut (`limit` items from `offset` of `count`)."""
        self.request, self.count, self.limit, self.offset = request, count, limit, offset
        return self.get_paginated_response(results)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {"name": self.limit_query_param, "required": False, "in": "query",
             "description": f"How many to answer: 1 to {self.max_limit} (default {self.default_limit}).",
             "schema": {"type": "integer", "minimum": 1, "maximum": self.max_limit}},
            {"name": self.offset_query_param, "required": False, "in": "query",
             "description": "How many to skip first (default 0).",
             "schema": {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}},
        ]


class RunsPage(Page):
    """`Page` whose count may be a lower bound: `count_exact` false says more than `count` match."""

    count_exact = True

    def answer(self, request: Request, results: Any, *, count: int, limit: int, offset: int,
               exact: bool = True) -> Response:
        self.count_exact = exact
        return super().answer(request, results, count=count, limit=limit, offset=offset)

    def get_next_link(self) -> str | None:
        if not self.count_exact:  # more than `count` match, and `count` reaches past this page
            counted = self.count
            self.count = (counted or 0) + 1
            try:
                return super().get_next_link()
            finally:
                self.count = counted
        return super().get_next_link()

    def get_paginated_response(self, data: Any) -> Response:
        return Response({"count": self.count, "count_exact": self.count_exact, "next": self.get_next_link(),
                         "previous": self.get_previous_link(), "results": data})

    def get_paginated_response_schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        answer = super().get_paginated_response_schema(schema)
        answer["required"] = ["count", "count_exact", "results"]
        answer["properties"] = {
            "count": {"type": "integer", "example": 123, "description":
                      "How many match: exactly, or when count_exact is false, at least (more than this many)."},
            "count_exact": {"type": "boolean", "description":
                            "false: the runs were counted up to 10,000 past the page's start and more match."},
            **{k: v for k, v in answer["properties"].items() if k != "count"},
        }
        return answer


class LedgerCursor(CursorPagination):
    """A run's ledger in `seq` order, `?limit=` records a page (1 to 1000, default 100), `?cursor=` from
    the previous page's `next` or `previous` link."""

    ordering = ("seq", "id")
    page_size = 100
    page_size_query_param = "limit"
    max_page_size = 1000
    cursor_query_description = "Where to go on from: the `next` or `previous` link of the page before."

    def get_page_size(self, request: Request) -> int:
        return whole_number(request, "limit", default=self.page_size, low=1, high=self.max_page_size)

    def decode_cursor(self, request: Request) -> Cursor | None:
        encoded = request.query_params.get(self.cursor_query_param)
        if encoded is None:
            return None
        try:
            tokens = parse.parse_qs(b64decode(encoded.encode("ascii"), validate=True).decode("ascii"),
                                    keep_blank_values=True)
            offset = int(tokens.get("o", ["0"])[0])
            reverse = bool(int(tokens.get("r", ["0"])[0]))
            given = tokens.get("p", [None])[0]
            if not 0 <= offset <= self.offset_cutoff or (given is not None and not given.isdigit()):
                raise ValueError(encoded)
            # DRF keeps the position as the text it compares with other positions (the stubs say int).
            position: Any = given
        except ValueError:  # binascii.Error and UnicodeError are ValueErrors too
            raise invalid_input("cursor is not one this API gave: take it from a page's next or previous link",
                                path=["cursor"], issue="not a cursor of this list",
                                issue_code=IssueCode.INVALID_CURSOR) from None
        return Cursor(offset=offset, reverse=reverse, position=position)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        return [
            {"name": self.cursor_query_param, "required": False, "in": "query",
             "description": self.cursor_query_description, "schema": {"type": "string"}},
            {"name": "limit", "required": False, "in": "query",
             "description": f"How many records a page holds: 1 to {self.max_page_size} (default {self.page_size}).",
             "schema": {"type": "integer", "minimum": 1, "maximum": self.max_page_size}},
        ]
