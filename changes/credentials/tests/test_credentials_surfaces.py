"""The credentials' API and admin page: statuses without values, set and clear, refusals with codes,
who may do what. No response ever holds a value."""
from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from django.test import Client
from rest_framework.test import APIClient

from changes.credentials import runtime, selectors
from changes.credentials.models import Credential, CredentialChange
from changes.credentials.tests.credentials_company.harness import ROOT, TEST_KEY
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.testing import make_user

pytestmark = pytest.mark.django_db

# The config's connectors' variables, then the ones sanoma's change connector declares for the built-in
# remotes (every config has that connector).
NAMES = ("VAULT_URL", "VAULT_TOKEN", "VAULT_REGION", "VAULT_FLAKY", "MAILER_KEY", "GITHUB_TOKEN",
         "SANOMA_GITHUB_WEBHOOK_SECRET")
TOKEN = "tok-Surface-81d0c2e4aa"


@pytest.fixture(autouse=True)
def config(settings, monkeypatch) -> Iterator[None]:
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    set_config(load_config(ROOT, fakes="", app_version="creds-s"))
    runtime.invalidate()
    yield
    set_config(None)
    runtime.invalidate()


def api(user=None) -> APIClient:
    client = APIClient()
    if user is not None:
        client.force_authenticate(user)
    return client


def body(response) -> dict:
    return json.loads(response.content)


# ---- the API -----------------------------------------------------------------------------------


def test_the_api_lists_statuses_and_sets_and_clears_without_ever_answering_a_value() -> None:
    keeper = make_user("api-keeper", perms=["credentials.manage_credentials"])
    listed = api(keeper).get("/api/credentials")
    assert listed.status_code == 200, listed.content
    rows = body(listed)["results"]
    assert [r["name"] for r in rows] == list(NAMES)
    assert rows[1] == {"connector": "vault", "name": "VAULT_TOKEN", "description": "a vault token with read scope",
                       "status": "missing", "problem": None, "source": "none", "needed_by": [],
                       "used_by": ["vault"], "descriptions": []}
    assert [(r["connector"], r["status"], r["source"]) for r in rows[-2:]] == [("sanoma", "not_set", "none")] * 2

    put = api(keeper).put("/api/credentials/VAULT_TOKEN", {"value": TOKEN}, format="json")
    assert put.status_code == 200, put.content
    assert TOKEN not in put.content.decode()
    answer = body(put)
    assert (answer["name"], answer["action"], answer["by"], answer["was_stored"]) == (
        "VAULT_TOKEN", "set", "api-keeper", False)
    assert answer["credentials"] == [{"connector": "vault", "name": "VAULT_TOKEN",
                                      "description": "a vault token with read scope", "status": "set",
                                      "problem": None, "source": "stored", "needed_by": [],
                                      "used_by": ["vault"], "descriptions": []}]
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN
    listed = api(keeper).get("/api/credentials/")
    assert TOKEN not in listed.content.decode()
    assert {r["name"]: r["source"] for r in body(listed)["results"]}["VAULT_TOKEN"] == "stored"

    deleted = api(keeper).delete("/api/credentials/VAULT_TOKEN")
    assert deleted.status_code == 200, deleted.content
    assert (body(deleted)["action"], body(deleted)["was_stored"]) == ("cleared", True)
    assert body(deleted)["credentials"][0]["status"] == "missing"
    assert not Credential.objects.exists()
    assert list(CredentialChange.objects.order_by("id").values_list("action", "by")) == [
        ("set", "api-keeper"), ("cleared", "api-keeper")]


@pytest.mark.parametrize(("name", "payload", "status", "code", "says"), [
    ("NOT_DECLARED", {"value": TOKEN}, 404, "unknown_credential",
     "No connector declares NOT_DECLARED: the declared variables are GITHUB_TOKEN, MAILER_KEY, "
     "SANOMA_GITHUB_WEBHOOK_SECRET, VAULT_FLAKY, VAULT_REGION, VAULT_TOKEN, VAULT_URL"),
    ("VAULT_TOKEN", {"value": ""}, 400, "invalid_input", "The value of VAULT_TOKEN is empty: clear it to unset it"),
    ("VAULT_TOKEN", {"value": "tok-Sh"}, 400, "invalid_input",
     "VAULT_TOKEN was not stored: vault's check refuses the value: String should have at least 8 characters"),
    ("VAULT_URL", {"value": "http://" + TOKEN}, 400, "invalid_input",
     "VAULT_URL was not stored: vault's check refuses the value: must be an https:// URL, not (the value)"),
    ("VAULT_TOKEN", {}, 400, "invalid_input", "value must be text: send {\"value\": \"...\"}"),
    ("VAULT_TOKEN", {"value": 12345678}, 400, "invalid_input", "value must be text: send {\"value\": \"...\"}"),
    ("VAULT_TOKEN", {"value": TOKEN, "note": "x"}, 400, "invalid_input",
     "Unexpected field note: send {\"value\": \"...\"}"),
])
def test_api_refusals_have_codes_change_nothing_and_never_echo_the_value(name, payload, status, code, says) -> None:
    keeper = make_user("api-keeper", perms=["credentials.manage_credentials"])
    response = api(keeper).put(f"/api/credentials/{name}", payload, format="json")
    assert response.status_code == status, response.content
    assert body(response)["code"] == code and body(response)["error"] == says
    value = payload.get("value")
    if isinstance(value, str) and value:
        assert value not in response.content.decode()
    assert not Credential.objects.exists() and not CredentialChange.objects.exists()


def test_api_who_may_see_and_change() -> None:
    assert api().get("/api/credentials").status_code in (401, 403)
    nobody = make_user("api-nobody")
    refused = api(nobody).get("/api/credentials")
    assert (refused.status_code, body(refused)["code"]) == (403, "permission_denied")
    operator = make_user("api-operator", perms=["runs.view_any_run"])
    assert api(operator).get("/api/credentials").status_code == 200
    put = api(operator).put("/api/credentials/MAILER_KEY", {"value": "mk-operator"}, format="json")
    assert (put.status_code, body(put)["code"]) == (403, "permission_denied")
    assert api(operator).delete("/api/credentials/MAILER_KEY").status_code == 403
    text = api(operator).put("/api/credentials/MAILER_KEY", "mk", content_type="text/plain")
    assert text.status_code in (403, 415)
    assert not Credential.objects.exists()


def test_api_without_a_key_says_so(settings) -> None:
    settings.SANOMA_SECRETS_KEY = []
    settings.DEBUG = False
    keeper = make_user("api-keeper", perms=["credentials.manage_credentials"])
    response = api(keeper).put("/api/credentials/MAILER_KEY", {"value": "mk-no-key"}, format="json")
    assert (response.status_code, body(response)["code"]) == (503, "secrets_key_missing")
    assert "mk-no-key" not in response.content.decode()


# ---- the admin ---------------------------------------------------------------------------------


def admin_client(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_admin_page_lists_sets_and_clears_and_never_shows_a_value() -> None:
    boss = make_user("admin-boss", superuser=True)
    client = admin_client(boss)
    page = client.get("/admin/credentials/credential/")
    assert page.status_code == 200
    html = page.content.decode()
    for name in NAMES:
        assert name in html
    assert "a vault token with read scope" in html and "missing" in html

    form = client.get("/admin/credentials/credential/VAULT_TOKEN/set/")
    assert form.status_code == 200 and 'type="password"' in form.content.decode()
    stored = client.post("/admin/credentials/credential/VAULT_TOKEN/set/", {"value": TOKEN}, follow=True)
    assert stored.status_code == 200
    html = stored.content.decode()
    assert "VAULT_TOKEN stored (encrypted)" in html
    assert TOKEN not in html
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN
    assert CredentialChange.objects.get().by == "admin-boss"
    # Not even masked, not its length: the form never carries it back, and the page shows no value.
    again = client.get("/admin/credentials/credential/VAULT_TOKEN/set/").content.decode()
    assert TOKEN not in again and 'value="' not in again.split('type="password"')[1].split(">")[0]
    listing = client.get("/admin/credentials/credential/").content.decode()
    assert TOKEN not in listing and "stored" in listing and "Clear" in listing

    refused = client.post("/admin/credentials/credential/VAULT_TOKEN/set/", {"value": "tok-Sh"})
    assert refused.status_code == 200
    assert "String should have at least 8 characters" in refused.content.decode()
    assert "tok-Sh" not in refused.content.decode()
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN

    assert client.get("/admin/credentials/credential/VAULT_TOKEN/clear/").status_code == 405
    cleared = client.post("/admin/credentials/credential/VAULT_TOKEN/clear/", follow=True)
    assert "VAULT_TOKEN cleared" in cleared.content.decode()
    assert not Credential.objects.exists()
    log = client.get("/admin/credentials/credentialchange/")
    assert log.status_code == 200 and "admin-boss" in log.content.decode()


def test_the_admin_page_is_for_those_who_may_see_it_and_changes_for_those_who_may_change() -> None:
    staff = make_user("admin-staff")
    staff.is_staff = True
    staff.save()
    client = admin_client(staff)
    assert client.get("/admin/credentials/credential/").status_code == 302
    operator = make_user("admin-operator", perms=["runs.view_any_run"])
    operator.is_staff = True
    operator.save()
    client = admin_client(operator)
    page = client.get("/admin/credentials/credential/")
    assert page.status_code == 200 and "VAULT_TOKEN" in page.content.decode()
    assert "/set/" not in page.content.decode()  # no actions offered
    refused = client.post("/admin/credentials/credential/MAILER_KEY/set/", {"value": "mk-operator-1"})
    assert "may not set or clear credentials" in refused.content.decode()
    assert "mk-operator-1" not in refused.content.decode()
    assert not Credential.objects.exists()
