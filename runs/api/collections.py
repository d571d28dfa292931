"""The API's collection reads: `GET /api/collections`, `/api/collections/<name>` and
`/api/collections/<name>/<key>`. Read-only: a collection changes through its workflows.

Who may read: `runs.view_collectionrecord` or operators (`runs.view_any_run`); anyone else gets
`403 permission_denied`. An unknown collection or key is `404 not_found`.
"""
from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from connectors.errors import ErrorCode, IssueCode
from runs.api.base import ERRORS, ApiError, SanomaAPIView, me
from runs.api.pagination import Page
from runs.api.serializers import StrictCharField, StrictSerializer
from runs.collections import selectors
from runs.collections.definition import KEY_MAX_LENGTH, LIST_LIMIT, LIST_LIMIT_MAX, Collection, decode_cursor
from runs.config.registry import get_config

NOT_FOUND = OpenApiResponse(description="not_found: no such collection, or no record with that key")


class CollectionSerializer(serializers.Serializer):
    name = serializers.CharField(help_text="`<name>`, or `<app>.<name>` for an app's collection")
    app = serializers.CharField(allow_null=True)
    key = serializers.CharField(help_text="The record field whose value is each record's key")
    title = serializers.CharField()
    records = serializers.IntegerField(help_text="How many records it holds")
    operations = serializers.ListField(child=serializers.CharField())


class RecordSerializer(serializers.Serializer):
    key = serializers.CharField()
    record = serializers.JSONField()
    version = serializers.IntegerField(help_text="How many times it was put (since it was last deleted)")
    updated_at = serializers.DateTimeField()
    updated_by_run = serializers.CharField(help_text="The run whose put wrote this version")


class RecordPageSerializer(serializers.Serializer):
    collection = serializers.CharField()
    records = RecordSerializer(many=True)
    cursor = serializers.CharField(allow_null=True, help_text="Pass it back for the next page; null on the last")


class RecordQuery(StrictSerializer):
    prefix = StrictCharField(required=False, default="", allow_blank=True, max_length=KEY_MAX_LENGTH,
                                   trim_whitespace=False)
    limit = serializers.IntegerField(required=False, default=LIST_LIMIT, min_value=1, max_value=LIST_LIMIT_MAX)
    cursor = StrictCharField(required=False, default=None, allow_null=True)

    def validate_cursor(self, value: str | None) -> str | None:
        if value is not None:
            try:
                decode_cursor(value)
            except ValueError as err:
                raise serializers.ValidationError(str(err), code=IssueCode.INVALID_CURSOR) from None
        return value


def _collection(name: str) -> Collection:
    collections = get_config().collections
    found = collections.get(name)
    if found is None:
        raise ApiError(f"No collection {name}; the collections are {', '.join(sorted(collections)) or 'none'}",
                       code=ErrorCode.NOT_FOUND, http_status=status.HTTP_404_NOT_FOUND, data={"collection": name})
    return found


class CollectionListView(SanomaAPIView):
    pagination_class = Page

    @extend_schema(operation_id="collections_list", summary="The collections and how many records each holds",
                   responses={200: CollectionSerializer(many=True), 400: ERRORS[400], 401: ERRORS[401],
                              403: ERRORS[403]})
    def get(self, request: Request) -> Response:
        selectors.check_may_read(me(request))
        found = selectors.summaries(get_config().collections)
        return self.paged(request, found, lambda page: CollectionSerializer(page, many=True).data)


class CollectionRecordsView(SanomaAPIView):
    @extend_schema(operation_id="collections_records", summary="A collection's records in key order, a page at a time",
                   parameters=[RecordQuery],
                   responses={200: RecordPageSerializer, 400: ERRORS[400], 401: ERRORS[401], 403: ERRORS[403],
                              404: NOT_FOUND})
    def get(self, request: Request, name: str) -> Response:
        selectors.check_may_read(me(request))
        collection = _collection(name)
        query: dict[str, Any] = self.checked(RecordQuery, request.query_params.dict())
        found = selectors.page(collection, **query)
        return Response(RecordPageSerializer({"collection": collection.name, **found}).data)


class CollectionRecordView(SanomaAPIView):
    @extend_schema(operation_id="collections_record", summary="One record of a collection, by key",
                   responses={200: RecordSerializer, 401: ERRORS[401], 403: ERRORS[403], 404: NOT_FOUND})
    def get(self, request: Request, name: str, key: str) -> Response:
        selectors.check_may_read(me(request))
        collection = _collection(name)
        found = selectors.record(collection, key)
        if found is None:
            raise ApiError(f"Collection {collection.name} has no record {key!r}", code=ErrorCode.NOT_FOUND,
                           http_status=status.HTTP_404_NOT_FOUND, data={"collection": collection.name, "key": key})
        return Response(RecordSerializer(found).data)
