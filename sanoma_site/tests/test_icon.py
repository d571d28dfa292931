"""The site's icon: every desk page names it, and /favicon.ico answers it (no 404 in the log for
the request a browser makes on a page that names none)."""
from __future__ import annotations

import pytest
from django.test import Client

from runs.seed import seed_person

pytestmark = pytest.mark.django_db


def test_the_icon_is_served_where_browsers_ask_for_it_and_named_by_the_desk():
    icon = Client().get("/favicon.ico")
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml" and b"<svg" in icon.content
    client = Client()
    client.force_login(seed_person(username="root", superuser=True))
    assert '<link rel="icon" href="/favicon.ico" type="image/svg+xml">' in client.get("/admin/").content.decode()
