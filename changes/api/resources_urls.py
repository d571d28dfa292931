"""Routes: filled in as the API grows."""
from django.urls import URLPattern

urlpatterns: list[URLPattern] = []
