"""The declared state over the API: `GET /api/resources`, what the data files declare."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from changes.selectors import declared_resources
from runs.api.views import SanomaAPIView, errors


class DeclaredResourceSerializer(serializers.Serializer):
    id = serializers.CharField(help_text="<file path from the config root>#<name>")
    type = serializers.CharField(help_text="<vendor>.<type>")
    name = serializers.CharField()
    values = serializers.DictField(help_text='declared fields; a reference is {"ref": id}, a secret {"secret": name}')
    references = serializers.ListField(child=serializers.CharField())
    file = serializers.CharField()
    line = serializers.IntegerField()
    column = serializers.IntegerField()


class FileProblemSerializer(serializers.Serializer):
    file = serializers.CharField()
    line = serializers.IntegerField()
    column = serializers.IntegerField()
    message = serializers.CharField()
    resource = serializers.CharField(allow_null=True)


class DeclaredStateSerializer(serializers.Serializer):
    files = serializers.ListField(child=serializers.CharField())
    resources = DeclaredResourceSerializer(many=True)
    problems = FileProblemSerializer(many=True)


class ResourceListView(SanomaAPIView):
    @extend_schema(
        operation_id="resources_list",
        summary="The resources the data files declare, and their problems",
        description="Resources in file order; a resource with a problem, and every resource referring to one, "
                    "is left out and its problem listed (file, line, column from 1).",
        responses={200: DeclaredStateSerializer, **errors()},
    )
    def get(self, request: Request) -> Response:
        return Response(DeclaredStateSerializer(declared_resources().plain()).data)
