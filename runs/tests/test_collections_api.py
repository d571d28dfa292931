"""Reading collections over the API (`/api/collections...`) and in the admin (read-only).

Who may read: `runs.view_collectionrecord` or an operator (`runs.view_any_run`); anyone else is
refused (`403 permission_denied` in the API's error shape; the admin hides the page)."""
from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from pydantic import BaseModel
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.drivers import CallContext
from runs.authoring import define_collection
from runs.config.registry import set_config
from runs.config.resolution import SanomaConfig, resolve_config
from runs.models import CollectionRecord
from runs.testing import make_user


class Card(BaseModel):
    ref: str
    owner: str


cards = define_collection("cards", record=Card, key="ref", title="Cards")


class Empty(BaseModel):
    id: int


empties = define_collection("empties", record=Empty, key="id")

KEYS = ["a/1", "a2", "b1", "b2", "c1"]


@pytest.fixture
def config(db):
    resolved = resolve_config(SanomaConfig(connectors=[], collections=[cards, empties]))
    set_config(resolved)
    driver = resolved.drivers[cards.put.id]
    for n, key in enumerate(KEYS):
        driver.call(cards.put.id, cards.put.input.model_validate({"record": {"ref": key, "owner": f"o{n}"}}),
                    CallContext(idempotency_key=f"r-9:{n}", run_id="r-9", op_id=cards.put.id))
    return resolved


def api(user: Any) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def reader(config):
    return make_user("reader", perms=["runs.view_collectionrecord"])


@pytest.fixture
def operator(config):
    return make_user("olga", perms=["runs.view_any_run"])


@pytest.fixture
def nobody(config):
    return make_user("bob", perms=["runs.start_workflow"])


# ---- the API ---------------------------------------------------------------------------------


def test_the_collections_with_their_record_counts(reader, operator):
    for user in (reader, operator):
        response = api(user).get("/api/collections")
        assert response.status_code == 200, response.content
        assert response.json() == {"count": 2, "next": None, "previous": None, "results": [
            {"name": "cards", "app": None, "key": "ref", "title": "Cards", "records": 5,
             "operations": ["data.cards.get", "data.cards.list", "data.cards.put", "data.cards.delete"]},
            {"name": "empties", "app": None, "key": "id", "title": "", "records": 0,
             "operations": ["data.empties.get", "data.empties.list", "data.empties.put", "data.empties.delete"]},
        ]}


def test_someone_without_the_permission_is_refused_in_the_apis_error_shape(nobody):
    for url in ("/api/collections", "/api/collections/cards", "/api/collections/cards/b1"):
        response = api(nobody).get(url)
        assert response.status_code == 403, url
        assert response.json() == {
            "error": "bob may not read collections: that takes runs.view_collectionrecord or runs.view_any_run",
            "code": "permission_denied"}
    assert APIClient().get("/api/collections").status_code == 401


def test_records_a_page_at_a_time_in_key_order(reader):
    client = api(reader)
    first = client.get("/api/collections/cards", {"limit": 2}).json()
    assert first["collection"] == "cards"
    assert [r["key"] for r in first["records"]] == ["a/1", "a2"]
    assert first["records"][0]["record"] == {"ref": "a/1", "owner": "o0"}
    assert first["records"][0]["version"] == 1 and first["records"][0]["updated_by_run"] == "r-9"
    assert first["records"][0]["updated_at"]
    second = client.get("/api/collections/cards", {"limit": 2, "cursor": first["cursor"]}).json()
    third = client.get("/api/collections/cards", {"limit": 2, "cursor": second["cursor"]}).json()
    assert [r["key"] for r in second["records"]] == ["b1", "b2"]
    assert [r["key"] for r in third["records"]] == ["c1"] and third["cursor"] is None
    only_b = client.get("/api/collections/cards/", {"prefix": "b"}).json()
    assert [r["key"] for r in only_b["records"]] == ["b1", "b2"] and only_b["cursor"] is None
    assert client.get("/api/collections/empties").json() == {"collection": "empties", "records": [], "cursor": None}


@pytest.mark.parametrize(("query", "path"), [
    ({"limit": 0}, ["limit"]), ({"limit": 501}, ["limit"]), ({"limit": "ten"}, ["limit"]),
    ({"cursor": "nope"}, ["cursor"]), ({"prefix": "p" * 201}, ["prefix"]),
])
def test_a_bad_query_is_invalid_input_naming_the_parameter(reader, query, path):
    response = api(reader).get("/api/collections/cards", query)
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid_input" and [i["path"] for i in body["issues"]] == [path]


def test_one_record_by_key(reader):
    client = api(reader)
    got = client.get("/api/collections/cards/b1")
    assert got.status_code == 200
    assert {k: got.json()[k] for k in ("key", "record", "version")} == {
        "key": "b1", "record": {"ref": "b1", "owner": "o2"}, "version": 1}
    assert client.get("/api/collections/cards/a/1").json()["key"] == "a/1"
    assert client.get(f"/api/collections/cards/{quote('a/1', safe='')}").json()["key"] == "a/1"
    assert client.get("/api/collections/cards/b1/").json()["key"] == "b1"


def test_an_unknown_collection_or_key_is_not_found(reader):
    client = api(reader)
    missing = client.get("/api/collections/letters")
    assert missing.status_code == 404
    assert missing.json() == {"error": "No collection letters; the collections are cards, empties",
                              "code": "not_found"}
    no_key = client.get("/api/collections/cards/zz")
    assert no_key.status_code == 404
    assert no_key.json() == {"error": "Collection cards has no record 'zz'", "code": "not_found"}
    assert client.get("/api/collections/letters/zz").status_code == 404


def test_the_api_only_reads(reader):
    client = api(reader)
    for url in ("/api/collections", "/api/collections/cards", "/api/collections/cards/b1"):
        assert client.post(url, {"record": {"ref": "x", "owner": "y"}}, format="json").status_code == 405
        assert client.delete(url).status_code == 405
    assert CollectionRecord.objects.count() == 5


# ---- the admin -------------------------------------------------------------------------------


def staff(username: str, perms: list[str]) -> Client:
    user = make_user(username, perms=perms)
    user.is_staff = True
    user.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_lists_collections_and_records_read_only(config):
    client = staff("olga", ["runs.view_any_run"])
    listing = client.get("/admin/runs/collectionrecord/")
    assert listing.status_code == 200
    page = listing.content.decode()
    assert "cards (5)" in page and "empties (0)" in page
    for key in KEYS:
        assert key in page
    filtered = client.get("/admin/runs/collectionrecord/", {"collection": "cards", "q": "b"}).content.decode()
    # Cell text, not a substring: a CSRF token may hold "c1" by chance.
    cells = set(re.findall(r">\s*([^<>]+?)\s*<", filtered))
    assert "b1" in cells and "c1" not in cells
    row = CollectionRecord.objects.get(collection="cards", key="b1")
    shown = client.get(f"/admin/runs/collectionrecord/{row.pk}/change/")
    assert shown.status_code == 200
    text = shown.content.decode()
    assert "&quot;owner&quot;: &quot;o2&quot;" in text and 'name="_save"' not in text
    assert client.get("/admin/runs/collectionrecord/add/").status_code == 403
    assert client.get(f"/admin/runs/collectionrecord/{row.pk}/delete/").status_code == 403
    refused = client.post(f"/admin/runs/collectionrecord/{row.pk}/change/", {"key": "hacked", "version": 9})
    assert refused.status_code == 403
    row.refresh_from_db()
    assert (row.key, row.version) == ("b1", 1)


def test_the_admin_shows_collections_to_readers_only(config):
    assert staff("reader", ["runs.view_collectionrecord"]).get("/admin/runs/collectionrecord/").status_code == 200
    outsider = staff("bob", ["runs.start_workflow"])
    assert outsider.get("/admin/runs/collectionrecord/").status_code == 403
    assert "collectionrecord" not in outsider.get("/admin/").content.decode()
