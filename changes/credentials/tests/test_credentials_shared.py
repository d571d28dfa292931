"""A variable two connectors read is one value: `manage.py credentials list` (and the API and the
admin, through the same selector) shows it once, naming every connector that reads it, with the
graver of their statuses. The example company's GITHUB_TOKEN is read by the GitHub connector and
by the change workflow's GitHub remote."""
from __future__ import annotations

import json
from collections.abc import Iterator
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.core.management import call_command
from pydantic import BaseModel, Field

from changes.credentials import runtime, selectors
from changes.credentials.tests.credentials_company.harness import TEST_KEY
from connectors import define_connector, op
from connectors.vendors.github import github
from runs.config.registry import set_config
from runs.config.resolution import load_config

pytestmark = pytest.mark.django_db

COMPANY = Path(django_settings.BASE_DIR) / "company"
GITHUB = ("a token with the repo and admin:org scopes, delete_repo to delete (or an App's: Administration and "
          "Members)")
REMOTE = ("the change workflow's GitHub remote (a repository on GitHub): Contents and Pull requests read-write, "
          "Checks read")


@pytest.fixture(autouse=True)
def company(settings, monkeypatch) -> Iterator[None]:
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    for name in ("GITHUB_TOKEN", "GITHUB_ORG", "GITHUB_API_URL"):
        monkeypatch.delenv(name, raising=False)
    set_config(load_config(COMPANY, fakes="", app_version="creds-shared"))
    runtime.invalidate()
    yield
    set_config(None)
    runtime.invalidate()


def listed(*args: str) -> str:
    out = StringIO()
    call_command("credentials", "list", *args, stdout=out)
    return out.getvalue()


def test_the_list_shows_a_shared_variable_once_naming_both_connectors(monkeypatch) -> None:
    lines = listed().splitlines()
    mentions = [line for line in lines if "GITHUB_TOKEN" in line]
    assert mentions == ["github, sanoma: GITHUB_TOKEN missing (none)"]  # github needs it; the remote may use it
    at = lines.index(mentions[0])
    assert lines[at + 1:at + 3] == [f"    github: {GITHUB}", f"    sanoma: {REMOTE}"]
    assert "github: GITHUB_ORG missing (none)" in lines  # the others as they were, one connector each

    monkeypatch.setenv("GITHUB_TOKEN", "ghp_not-a-real-token")
    assert [line for line in listed().splitlines() if "GITHUB_TOKEN" in line] == [
        "github, sanoma: GITHUB_TOKEN set (environment)"]
    shown = [s for s in json.loads(listed("--json")) if s["name"] == "GITHUB_TOKEN"]
    assert len(shown) == 1 and shown[0]["used_by"] == ["github", "sanoma"]
    assert (shown[0]["status"], shown[0]["source"], shown[0]["connector"]) == ("set", "environment", "github, sanoma")
    assert "ghp_not-a-real-token" not in listed("--json")


class StrictEnvironment(BaseModel):
    GITHUB_TOKEN: str = Field(pattern=r"^ghs_", description="an installation token of the deploy App")


class Nothing(BaseModel):
    pass


deployer = define_connector("deployer", {"app": {"ping": op(effect="read", input=Nothing, output=Nothing,
                                                            idempotent=True)}}, environment=StrictEnvironment)


def test_one_connectors_refusal_is_the_shared_values_status_naming_whose_check(monkeypatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_classic-token")  # github takes it, the deployer's check does not
    (status,) = [s for s in selectors.credential_statuses(among=[github, deployer]) if s.name == "GITHUB_TOKEN"]
    assert (status.connector, status.status, status.source) == ("github, deployer", "invalid", "environment")
    assert status.problem is not None and status.problem.startswith("deployer's check: String should match pattern")
    assert status.descriptions == (f"github: {GITHUB}", "deployer: an installation token of the deploy App")
    assert "ghp_classic-token" not in repr(status)
    monkeypatch.setenv("GITHUB_TOKEN", "ghs_installation")
    (status,) = [s for s in selectors.credential_statuses(among=[github, deployer]) if s.name == "GITHUB_TOKEN"]
    assert (status.status, status.problem) == ("set", None)
