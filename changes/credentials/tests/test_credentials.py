"""Connectors' credentials in-process: statuses, set and clear (and their refusals), encryption at rest
and its key, the environment winning, a secret's value, and what a driver is given during a run.

The config root is `changes/credentials/tests/credentials_company/` on its real drivers (which reach no network).
"""
from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from cryptography.fernet import Fernet

from changes.credentials import crypto, runtime, selectors, services
from changes.credentials.declared import VariableStatus
from changes.credentials.models import Credential, CredentialChange
from changes.credentials.tests.credentials_company.harness import ROOT, TEST_KEY, rows_containing
from changes.credentials.tests.credentials_company.vendors import seen
from connectors.errors import SanomaError
from runs import services as run_services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.engine import secrets
from runs.models import Run, RunStatus
from runs.testing import drain, make_user

pytestmark = pytest.mark.django_db

# The config's connectors' variables, then the ones sanoma's change connector declares for the built-in
# remotes (every config has that connector).
NAMES = ("VAULT_URL", "VAULT_TOKEN", "VAULT_REGION", "VAULT_FLAKY", "MAILER_KEY", "GITHUB_TOKEN",
         "SANOMA_GITHUB_WEBHOOK_SECRET")
TOKEN = "tok-Plain-5e3f9a1c77"  # a value that must never show up where it should not


@pytest.fixture
def config(settings, monkeypatch) -> Iterator[ResolvedConfig]:
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    resolved = load_config(ROOT, fakes="", app_version="creds-t")
    set_config(resolved)
    runtime.invalidate()
    yield resolved
    set_config(None)
    runtime.invalidate()


@pytest.fixture
def admin_user(config):
    return make_user("cred-admin", perms=["credentials.manage_credentials"])


def status_of(name: str) -> VariableStatus:
    return next(s for s in selectors.credential_statuses() if s.name == name)


# ---- statuses ----------------------------------------------------------------------------------


def test_statuses_set_missing_invalid_and_a_check_that_threw(config, admin_user, monkeypatch) -> None:
    # Nothing set: the required ones are missing, the optional ones are not set (the driver gets the
    # default where there is one; an empty default or None gives it no value).
    statuses = {s.name: s for s in selectors.credential_statuses()}
    assert list(statuses) == list(NAMES)
    assert (statuses["VAULT_URL"].status, statuses["VAULT_URL"].source) == ("missing", "none")
    assert statuses["VAULT_URL"].description == "the vault's API base URL"
    assert (statuses["VAULT_REGION"].status, statuses["VAULT_REGION"].source) == ("not_set", "default")
    assert statuses["VAULT_REGION"].note == "optional, the driver gets its default"
    assert (statuses["VAULT_FLAKY"].status, statuses["VAULT_FLAKY"].source) == ("not_set", "none")
    assert statuses["VAULT_FLAKY"].note == "optional, the driver gets no value"
    assert (statuses["MAILER_KEY"].connector, statuses["MAILER_KEY"].status) == ("mailer", "missing")
    for builtin in ("GITHUB_TOKEN", "SANOMA_GITHUB_WEBHOOK_SECRET"):
        assert (statuses[builtin].connector, statuses[builtin].status, statuses[builtin].source) == \
            ("sanoma", "not_set", "none")

    monkeypatch.setenv("VAULT_URL", "http://vault.internal")  # the check wants https
    monkeypatch.setenv("VAULT_FLAKY", "boom")  # the check raises RuntimeError on this one
    monkeypatch.setenv("MAILER_KEY", "mk-1")
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    statuses = {s.name: s for s in selectors.credential_statuses()}
    assert (statuses["VAULT_URL"].status, statuses["VAULT_URL"].source) == ("invalid", "environment")
    assert statuses["VAULT_URL"].problem == "must be an https:// URL, not (the value)"
    assert statuses["VAULT_FLAKY"].status == "invalid"
    assert statuses["VAULT_FLAKY"].problem == "its check threw (RuntimeError)"
    assert (statuses["VAULT_TOKEN"].status, statuses["VAULT_TOKEN"].source) == ("set", "stored")
    assert (statuses["MAILER_KEY"].status, statuses["MAILER_KEY"].source) == ("set", "environment")
    # A status never holds a value.
    for status in statuses.values():
        assert TOKEN not in repr(status) and "vault.internal" not in repr(status) and "mk-1" not in repr(status)


def test_a_problem_never_repeats_the_value_even_when_the_check_would(config, monkeypatch) -> None:
    monkeypatch.setenv("VAULT_URL", "ftp://only-mine")
    status = status_of("VAULT_URL")
    assert status.status == "invalid" and status.problem == "must be an https:// URL, not (the value)"


# ---- set and clear -----------------------------------------------------------------------------


def test_set_encrypts_clear_removes_and_both_are_recorded_without_the_value(config, admin_user, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    changed = services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    assert (changed.action, changed.by, changed.was_stored) == ("set", "cred-admin", False)
    row = Credential.objects.get(name="VAULT_TOKEN")
    assert TOKEN not in row.ciphertext and Fernet(TEST_KEY).decrypt(row.ciphertext.encode()).decode() == TOKEN
    assert row.key_id == crypto.key_id(TEST_KEY) and row.updated_by == "cred-admin"
    assert services.set_credential(name="VAULT_TOKEN", value=TOKEN + "-2", by=admin_user).was_stored is True
    cleared = services.clear_credential(name="VAULT_TOKEN", by=admin_user)
    assert cleared.was_stored and not Credential.objects.exists()
    assert status_of("VAULT_TOKEN").status == "missing"
    assert services.clear_credential(name="VAULT_TOKEN", by=admin_user).was_stored is False
    assert list(CredentialChange.objects.order_by("id").values_list("name", "action", "by")) == [
        ("VAULT_TOKEN", "set", "cred-admin"), ("VAULT_TOKEN", "set", "cred-admin"),
        ("VAULT_TOKEN", "cleared", "cred-admin")]
    assert "credential VAULT_TOKEN set by cred-admin" in caplog.text
    assert TOKEN not in caplog.text


@pytest.mark.parametrize(("name", "value", "code", "says"), [
    ("NOT_DECLARED", TOKEN, "unknown_credential",
     "No connector declares NOT_DECLARED: the declared variables are GITHUB_TOKEN, MAILER_KEY, "
     "SANOMA_GITHUB_WEBHOOK_SECRET, VAULT_FLAKY, VAULT_REGION, VAULT_TOKEN, VAULT_URL"),
    ("VAULT_TOKEN", "", "invalid_input", "The value of VAULT_TOKEN is empty: clear it to unset it"),
    ("VAULT_TOKEN", "  \n", "invalid_input", "The value of VAULT_TOKEN is empty: clear it to unset it"),
    ("VAULT_TOKEN", "tok-Sh", "invalid_input",
     "VAULT_TOKEN was not stored: vault's check refuses the value: String should have at least 8 characters"),
    ("VAULT_URL", "http://" + TOKEN, "invalid_input",
     "VAULT_URL was not stored: vault's check refuses the value: must be an https:// URL, not (the value)"),
    ("VAULT_FLAKY", "boom", "invalid_input",
     "VAULT_FLAKY was not stored: vault's check refuses the value: its check threw (RuntimeError)"),
])
def test_a_refused_set_changes_nothing_and_never_echoes_the_value(config, admin_user, caplog, name, value, code,
                                                                  says) -> None:
    caplog.set_level(logging.DEBUG)
    services.set_credential(name="MAILER_KEY", value="mk-before", by=admin_user)
    before = list(CredentialChange.objects.values_list("id", flat=True))
    with pytest.raises(SanomaError) as refused:
        services.set_credential(name=name, value=value, by=admin_user)
    assert refused.value.code == code
    assert refused.value.message == says
    if value.strip():
        assert value not in str(refused.value) and value not in repr(refused.value.data) and value not in caplog.text
    assert list(Credential.objects.values_list("name", flat=True)) == ["MAILER_KEY"]
    assert list(CredentialChange.objects.values_list("id", flat=True)) == before


def test_a_name_that_looks_like_a_value_is_not_repeated(config, admin_user) -> None:
    with pytest.raises(SanomaError) as refused:
        services.set_credential(name="sk-live/" + TOKEN, value="whatever-123", by=admin_user)
    assert TOKEN not in str(refused.value)
    assert str(refused.value) == ("No connector declares that name: the declared variables are GITHUB_TOKEN, "
                                  "MAILER_KEY, SANOMA_GITHUB_WEBHOOK_SECRET, VAULT_FLAKY, VAULT_REGION, "
                                  "VAULT_TOKEN, VAULT_URL")


def test_clear_refuses_an_undeclared_name_and_changes_nothing(config, admin_user) -> None:
    with pytest.raises(SanomaError) as refused:
        services.clear_credential(name="NOPE", by=admin_user)
    assert refused.value.code == "unknown_credential" and "VAULT_TOKEN" in str(refused.value)
    assert not CredentialChange.objects.exists()


def test_who_may_set_and_clear(config) -> None:
    operator = make_user("cred-operator", perms=["runs.view_any_run", "runs.operate_runs"])
    nobody = make_user("cred-nobody")
    boss = make_user("cred-boss", superuser=True)
    for who in (operator, nobody, "no-such-user"):
        with pytest.raises(SanomaError) as refused:
            services.set_credential(name="MAILER_KEY", value="mk-secret-1", by=who)
        assert refused.value.code == "permission_denied"
        assert "credentials.manage_credentials" in str(refused.value)
        with pytest.raises(SanomaError):
            services.clear_credential(name="MAILER_KEY", by=who)
    assert not Credential.objects.exists() and not CredentialChange.objects.exists()
    assert services.set_credential(name="MAILER_KEY", value="mk-secret-1", by=boss).by == "cred-boss"
    assert services.set_credential(name="MAILER_KEY", value="mk-secret-2", by=services.Console("ops")).by == \
        "console:ops"
    # Seeing the statuses: operators and holders of the permissions; not a plain user.
    assert selectors.check_can_view(operator).id == "cred-operator"
    with pytest.raises(SanomaError):
        selectors.check_can_view(nobody)


# ---- the key -------------------------------------------------------------------------------------


def test_without_a_key_storing_is_refused_unless_debug(config, admin_user, settings, caplog) -> None:
    settings.SANOMA_SECRETS_KEY = []
    settings.DEBUG = False
    with pytest.raises(SanomaError) as refused:
        services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    assert refused.value.code == "secrets_key_missing" and "SANOMA_SECRETS_KEY is not set" in str(refused.value)
    assert not Credential.objects.exists()

    settings.DEBUG = True
    crypto._warned.clear()
    caplog.set_level(logging.WARNING, logger="sanoma.credentials")
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    services.set_credential(name="MAILER_KEY", value="mk-1234", by=admin_user)
    assert set(Credential.objects.values_list("key_id", flat=True)) == {"development"}
    warnings = [r for r in caplog.records if "DEVELOPMENT key" in r.getMessage()]
    assert len(warnings) == 1  # once a process
    assert status_of("VAULT_TOKEN").status == "set"

    # The real key set later: a value stored with the development key is reported, not used.
    settings.DEBUG = False
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    status = status_of("VAULT_TOKEN")
    assert (status.status, status.source) == ("invalid", "stored")
    assert status.problem == ("stored, but it was encrypted with the development key, which SANOMA_SECRETS_KEY does "
                              "not hold: set it again")


def test_keys_rotate_the_first_encrypts_every_one_decrypts(config, admin_user, settings) -> None:
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    new_key = Fernet.generate_key().decode()
    settings.SANOMA_SECRETS_KEY = [new_key, TEST_KEY]
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN
    services.set_credential(name="MAILER_KEY", value="mk-rotated", by=admin_user)
    assert Credential.objects.get(name="MAILER_KEY").key_id == crypto.key_id(new_key)
    settings.SANOMA_SECRETS_KEY = [new_key]
    runtime.invalidate()
    assert status_of("VAULT_TOKEN").status == "invalid" and status_of("MAILER_KEY").status == "set"


# ---- the environment wins; a secret's value -----------------------------------------------------


def test_the_environment_wins_over_a_stored_value(config, admin_user, monkeypatch) -> None:
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    monkeypatch.setenv("VAULT_TOKEN", "from-the-environment")
    status = status_of("VAULT_TOKEN")
    assert (status.status, status.source) == ("set", "environment")
    assert selectors.secret_value("VAULT_TOKEN") == "from-the-environment"
    assert secrets.for_connector("vault")["VAULT_TOKEN"] == "from-the-environment"
    # Set while the environment sets it: stored, and the caller is told the environment wins.
    assert services.set_credential(name="VAULT_TOKEN", value=TOKEN + "-x", by=admin_user).environment_wins is True
    # An empty environment variable counts as unset.
    monkeypatch.setenv("VAULT_TOKEN", "")
    assert status_of("VAULT_TOKEN").source == "stored"
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN + "-x"


def test_secret_value_names_a_missing_or_undeclared_secret(config, admin_user) -> None:
    assert selectors.secret_value("VAULT_REGION") == "eu"  # its default
    with pytest.raises(SanomaError) as missing:
        selectors.secret_value("VAULT_TOKEN")
    assert missing.value.code == "secret_missing"
    assert str(missing.value) == ("The secret VAULT_TOKEN (vault: a vault token with read scope) is missing; set it "
                                  "in the environment or with `manage.py credentials set VAULT_TOKEN`")
    with pytest.raises(SanomaError) as unknown:
        selectors.secret_value("NOT_A_SECRET")
    assert unknown.value.code == "unknown_credential" and "NOT_A_SECRET" in str(unknown.value)
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    assert selectors.secret_value("VAULT_TOKEN") == TOKEN


# ---- what a driver is given ---------------------------------------------------------------------


def test_the_provider_gives_a_connector_only_its_declared_names(config, admin_user, monkeypatch) -> None:
    monkeypatch.setenv("VAULT_URL", "https://vault.example")
    monkeypatch.setenv("UNRELATED_SECRET", "not-for-drivers")
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    services.set_credential(name="MAILER_KEY", value="mk-only-mailer", by=admin_user)
    assert dict(secrets.for_connector("vault")) == {
        "VAULT_URL": "https://vault.example", "VAULT_TOKEN": TOKEN, "VAULT_REGION": "eu"}
    assert dict(secrets.for_connector("mailer")) == {"MAILER_KEY": "mk-only-mailer"}
    assert dict(secrets.for_connector("no-such-vendor")) == {}
    # This process's own set is seen at once (its cache is dropped); a clear too.
    services.clear_credential(name="MAILER_KEY", by=admin_user)
    assert dict(secrets.for_connector("mailer")) == {}


def test_during_a_run_each_driver_gets_only_its_connectors_names(config, admin_user, monkeypatch) -> None:
    monkeypatch.setenv("VAULT_URL", "https://vault.example")
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=admin_user)
    services.set_credential(name="MAILER_KEY", value="mk-in-run", by=admin_user)
    make_user("cred-starter", perms=["runs.start_workflow"])
    run_services.start(workflow="peek", input={}, started_by="cred-starter", run_id="peek-1", config=config)
    drain(config)
    run = Run.objects.get(id="peek-1")
    assert run.status == RunStatus.FINISHED, run.error
    assert run.result == {
        "vault": seen({"VAULT_URL": "https://vault.example", "VAULT_TOKEN": TOKEN, "VAULT_REGION": "eu"}),
        "mailer": seen({"MAILER_KEY": "mk-in-run"}),
    }
    assert run.result["vault"]["names"] == ["VAULT_REGION", "VAULT_TOKEN", "VAULT_URL"]
    assert run.result["mailer"]["names"] == ["MAILER_KEY"]
    assert rows_containing(TOKEN) == [] and rows_containing("mk-in-run") == []
    assert rows_containing("cred-starter")  # the search itself finds what is there
