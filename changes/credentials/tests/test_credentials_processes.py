"""Credentials across real processes: `manage.py credentials` (the value only on standard input, only
ciphertext in the database), a `manage.py worker` that refuses to start listing every missing or
invalid variable, and a running worker that picks up a set, changed or cleared value within 2 s
(PostgreSQL: NOTIFY; SQLite: polling) and gives each driver only its connector's names.

Every child runs on the test's database (`transaction=True`: what either side writes is committed)
and on the config root `changes/credentials/tests/credentials_company/`, on its real drivers unless said.
"""
from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cryptography.fernet import Fernet
from django.db import connection

from changes.credentials import runtime, services
from changes.credentials.models import Credential, CredentialChange
from changes.credentials.tests.credentials_company.harness import (
    ROOT,
    TEST_KEY,
    Worker,
    child_env,
    manage,
    rows_containing,
)
from changes.credentials.tests.credentials_company.vendors import seen
from runs import services as run_services
from runs.config.registry import set_config
from runs.config.resolution import ResolvedConfig, load_config
from runs.models import Run, RunStatus
from runs.testing import make_user
from runs.tests.processes import database_url

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.process]

# The config's connectors' variables, then the ones sanoma's change connector declares for the built-in
# remotes (every config has that connector).
NAMES = ("VAULT_URL", "VAULT_TOKEN", "VAULT_REGION", "VAULT_FLAKY", "MAILER_KEY", "GITHUB_TOKEN",
         "SANOMA_GITHUB_WEBHOOK_SECRET")
TOKEN = "tok-Process-3b9e71f0d2"
PATIENCE = 60.0
CONSOLE = services.Console("tester")


class Site:
    def __init__(self, tmp_path: Path) -> None:
        self.tmp = tmp_path
        self.db_url = database_url(connection.settings_dict)
        self.var = tmp_path / "var"
        self.var.mkdir(parents=True, exist_ok=True)
        self.workers: list[Worker] = []
        self.config: ResolvedConfig = load_config(ROOT, fakes="", app_version="c1")
        set_config(self.config)
        make_user("cred-starter", perms=["runs.start_workflow"])

    def env(self, **extra: Any) -> dict[str, str]:
        return child_env(db_url=self.db_url, var_dir=self.var, **extra)

    def worker(self, **extra: Any) -> Worker:
        worker = Worker(self.env(**extra), self.tmp / f"worker-{len(self.workers)}.log")
        self.workers.append(worker)
        return worker

    def run(self, worker: Worker, run_id: str) -> dict:
        run_services.start(workflow="peek", input={}, started_by="cred-starter", run_id=run_id, config=self.config)
        worker.wait_for(lambda: Run.objects.filter(id=run_id).exclude(status=RunStatus.QUEUED)
                        .exclude(status=RunStatus.RUNNING).exists(), within=PATIENCE, what=f"{run_id} to end")
        run = Run.objects.get(id=run_id)
        assert run.status == RunStatus.FINISHED, (run.error, worker.describe())
        assert isinstance(run.result, dict)
        return run.result


@pytest.fixture
def site(tmp_path: Path, settings, monkeypatch) -> Iterator[Site]:
    settings.SANOMA_SECRETS_KEY = [TEST_KEY]
    for name in NAMES:
        monkeypatch.delenv(name, raising=False)
    runtime.invalidate()
    made = Site(tmp_path)
    yield made
    for worker in made.workers:
        worker.cleanup()
    set_config(None)
    runtime.invalidate()


# ---- manage.py credentials ----------------------------------------------------------------------


def test_manage_credentials_set_stores_only_ciphertext_anywhere_in_the_database(site: Site) -> None:
    done = manage("credentials", "set", "VAULT_TOKEN", env=site.env(), input=TOKEN + "\n")
    assert done.returncode == 0, done.stderr
    assert "VAULT_TOKEN stored (encrypted) by console:" in done.stdout
    assert TOKEN not in done.stdout + done.stderr
    row = Credential.objects.get(name="VAULT_TOKEN")
    assert Fernet(TEST_KEY).decrypt(row.ciphertext.encode()).decode() == TOKEN  # one trailing newline dropped
    # Every table, every column, every row: the plaintext is nowhere; the search does find what is there.
    assert rows_containing(TOKEN) == []
    assert rows_containing(row.ciphertext) == ["changes_credential.ciphertext"]
    assert "changes_credentialchange.by" in rows_containing("console:")

    listed = manage("credentials", "list", "--json", env=site.env())
    assert listed.returncode == 0, listed.stderr
    statuses = {s["name"]: s for s in json.loads(listed.stdout)}
    assert (statuses["VAULT_TOKEN"]["status"], statuses["VAULT_TOKEN"]["source"]) == ("set", "stored")
    assert TOKEN not in listed.stdout
    plain = manage("credentials", "list", env=site.env())
    assert "vault: VAULT_TOKEN set (stored)" in plain.stdout and "mailer: MAILER_KEY missing (none)" in plain.stdout

    cleared = manage("credentials", "clear", "VAULT_TOKEN", env=site.env())
    assert cleared.returncode == 0 and "VAULT_TOKEN cleared by console:" in cleared.stdout
    assert not Credential.objects.exists()
    assert list(CredentialChange.objects.order_by("id").values_list("action", flat=True)) == ["set", "cleared"]


def test_manage_credentials_set_refuses_empty_input_an_argument_and_a_bad_value(site: Site) -> None:
    empty = manage("credentials", "set", "VAULT_TOKEN", env=site.env(), input="")
    assert empty.returncode == 1
    assert "No value for VAULT_TOKEN on standard input: pipe it in" in empty.stderr
    assert "manage.py credentials clear VAULT_TOKEN" in empty.stderr
    as_argument = manage("credentials", "set", "VAULT_TOKEN", TOKEN, env=site.env(), input="")
    assert as_argument.returncode != 0 and "unrecognized arguments" in as_argument.stderr
    bad = manage("credentials", "set", "VAULT_URL", env=site.env(), input="http://" + TOKEN)
    assert bad.returncode == 1 and "vault's check refuses the value: must be an https:// URL" in bad.stderr
    assert TOKEN not in bad.stdout + bad.stderr
    unknown = manage("credentials", "set", "NOPE", env=site.env(), input=TOKEN)
    assert unknown.returncode == 1
    assert ("No connector declares NOPE: the declared variables are GITHUB_TOKEN, MAILER_KEY, "
            "SANOMA_GITHUB_WEBHOOK_SECRET, VAULT_FLAKY, VAULT_REGION, VAULT_TOKEN, VAULT_URL") in unknown.stderr
    no_key = manage("credentials", "set", "VAULT_TOKEN", env=site.env(SANOMA_SECRETS_KEY=""), input=TOKEN)
    assert no_key.returncode == 1 and "SANOMA_SECRETS_KEY is not set" in no_key.stderr
    assert not Credential.objects.exists() and not CredentialChange.objects.exists()
    as_someone = manage("credentials", "set", "VAULT_TOKEN", "--as", "cred-starter", env=site.env(), input=TOKEN)
    assert as_someone.returncode == 1 and "cred-starter may not set or clear credentials" in as_someone.stderr


# ---- the worker ---------------------------------------------------------------------------------


def test_the_worker_refuses_to_start_listing_every_missing_or_invalid_variable(site: Site) -> None:
    worker = site.worker(VAULT_URL="http://vault.internal", VAULT_FLAKY="boom").start(ready_within=None)
    assert worker.exit_code(within=PATIENCE) == 1, worker.describe()
    output = worker.output()
    assert (
        "The worker cannot start: vault: VAULT_URL is invalid (environment): must be an https:// URL, not (the "
        "value), vault: VAULT_TOKEN is missing (a vault token with read scope), vault: VAULT_FLAKY is invalid "
        "(environment): its check threw (RuntimeError), mailer: MAILER_KEY is missing (the mailer's API key); set "
        "each in the worker's environment, or store it with `manage.py credentials set NAME`"
    ) in output, worker.describe()
    assert "vault.internal" not in output and "worker started" not in output
    assert not Run.objects.exists()


def test_a_worker_on_the_fakes_needs_no_driver_environment(site: Site) -> None:
    worker = site.worker(fakes="instance").start()
    assert "cannot start" not in worker.output()
    result = site.run(worker, "on-fakes")
    assert result["vault"]["names"] == ["(fake)"]
    assert worker.terminate() == 0, worker.describe()


def test_a_running_worker_picks_up_a_set_changed_or_cleared_value_within_2_s(site: Site) -> None:
    services.set_credential(name="VAULT_TOKEN", value=TOKEN, by=CONSOLE)  # the stored value satisfies the check
    services.set_credential(name="MAILER_KEY", value="mk-stored-not-used", by=CONSOLE)
    worker = site.worker(VAULT_URL="https://vault.example", MAILER_KEY="mk-from-env").start()
    vault_env = {"VAULT_URL": "https://vault.example", "VAULT_REGION": "eu"}

    # Each driver is given its own connector's names only; the environment wins over the stored MAILER_KEY.
    first = site.run(worker, "peek-1")
    assert first == {"vault": seen({**vault_env, "VAULT_TOKEN": TOKEN}), "mailer": seen({"MAILER_KEY": "mk-from-env"})}
    assert first["vault"]["names"] == ["VAULT_REGION", "VAULT_TOKEN", "VAULT_URL"]
    assert first["mailer"]["names"] == ["MAILER_KEY"]

    def reloaded(count: int) -> bool:
        return worker.output().count("credentials reloaded for vault (1 variable)") >= count

    # Changed.
    services.set_credential(name="VAULT_TOKEN", value=TOKEN + "-v2", by=CONSOLE)
    changed_at = time.monotonic()
    worker.wait_for(lambda: reloaded(1), within=PATIENCE, what="the reload of the changed value", every=0.02)
    took = time.monotonic() - changed_at
    assert took < 2.0, f"the change took {took:.2f} s to be picked up\n{worker.describe()}"
    assert site.run(worker, "peek-2")["vault"] == seen({**vault_env, "VAULT_TOKEN": TOKEN + "-v2"})

    # A variable the worker's own environment sets is never replaced.
    services.set_credential(name="MAILER_KEY", value="mk-stored-again", by=CONSOLE)
    worker.wait_for(lambda: "MAILER_KEY changed in the store; this process's environment sets it, so it is kept"
                    in worker.output(), within=PATIENCE, what="the kept MAILER_KEY")
    assert "credentials reloaded for mailer" not in worker.output()
    assert site.run(worker, "peek-3")["mailer"] == seen({"MAILER_KEY": "mk-from-env"})

    # Cleared: the driver no longer gets it.
    services.clear_credential(name="VAULT_TOKEN", by=CONSOLE)
    cleared_at = time.monotonic()
    worker.wait_for(lambda: reloaded(2), within=PATIENCE, what="the reload of the cleared value", every=0.02)
    took = time.monotonic() - cleared_at
    assert took < 2.0, f"the clear took {took:.2f} s to be picked up\n{worker.describe()}"
    assert site.run(worker, "peek-4")["vault"] == seen(vault_env)

    output = worker.output()
    for value in (TOKEN, "mk-from-env", "mk-stored"):
        assert value not in output
    assert len(re.findall(r"credentials reloaded for vault \(1 variable\)", output)) == 2, worker.describe()
    assert rows_containing(TOKEN) == [] and rows_containing("mk-stored-again") == []
    assert worker.terminate() == 0, worker.describe()


def test_a_bad_secrets_key_stops_every_command_without_repeating_it(site: Site) -> None:
    done = manage("check", env=site.env(SANOMA_SECRETS_KEY=f"{TEST_KEY},not-a-key-{TOKEN}"))
    assert done.returncode == 1
    assert "SANOMA_SECRETS_KEY: key 2 is not a Fernet key" in done.stderr
    assert TOKEN not in done.stderr + done.stdout and TEST_KEY not in done.stderr + done.stdout
