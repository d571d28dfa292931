"""`manage.py startcompany DIR`: the root it makes passes `check`, `lint` and its scenario as made,
its workflow's held send is approved through the API and the run finishes; a folder that is not
empty and a name that cannot be a package are refused, naming what is wrong, with nothing written.

One root is made for the module (the commands run in processes of their own, pointed at it, as a
person runs them); the tutorial (docs/tutorial/first-company.md, run by sanoma_site/tests/test_docs.py)
runs the same root with a worker and the site in processes of their own.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from connectors.errors import InvalidInput
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.engine.drain import drain
from runs.models import Run
from runs.startcompany import make_company
from runs.tests import test_admin_browser as ui
from runs.tests.test_admin_browser import CHROMEDRIVER, CHROMIUM, HAVE_SELENIUM, PASSWORD, browser, shots  # noqa: F401
from runs.waiting import run_here

PROJECT = Path(__file__).resolve().parents[2]
EXPECTED_FILES = {
    "__init__.py", "sanoma_config.py", "vendors/__init__.py", "vendors/billing.py", "workflows/send_invoice.py",
    "policies/billing.cedar", "resources/people.py", "resources/tax_rates.py", "scenarios/send_invoice.feature",
}


def manage(root: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """`manage.py ARGS` in a process of its own, on `root` and a SQLite database beside it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SANOMA_", "DJANGO_", "DATABASE_", "PYTEST_"))}
    env.update(SANOMA_ROOT=str(root), SANOMA_VAR_DIR=str(root.parent / "var"))
    return subprocess.run([sys.executable, str(PROJECT / "manage.py"), *args], cwd=PROJECT, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # A name of its own: the root is imported as a package by its folder's name, once per process.
    root = tmp_path_factory.mktemp("startcompany") / f"invoices_{uuid.uuid4().hex[:8]}"
    done = manage(root, "startcompany", str(root))
    assert done.returncode == 0, done.stdout
    return root


def tree(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_it_makes_every_part_with_the_name_rendered_in(made: Path) -> None:
    assert tree(made) == EXPECTED_FILES
    config = (made / "sanoma_config.py").read_text()
    assert f'app_name="{made.name.replace("_", "-")}"' in config
    assert f"from {made.name}.vendors.billing import billing" in config
    assert "{{" not in "".join((made / f).read_text() for f in EXPECTED_FILES)
    # Every Python file imports sanoma only through the front door.
    for file in (f for f in EXPECTED_FILES if f.endswith(".py")):
        imports = [line for line in (made / file).read_text().splitlines() if line.startswith(("from ", "import "))]
        sanoma = [line for line in imports if line.split()[1].split(".")[0] in
                  {"runs", "connectors", "changes", "wakeups", "features", "sanoma_site"}]
        assert all(line.startswith("from runs.authoring import") for line in sanoma), (file, sanoma)


def test_check_and_lint_pass_as_made(made: Path) -> None:
    check = manage(made, "check")
    assert check.returncode == 0 and "System check identified no issues" in check.stdout, check.stdout
    lint = manage(made, "lint")
    assert lint.returncode == 0 and lint.stdout.startswith("0 problems"), lint.stdout


def test_its_scenarios_pass_as_made(made: Path) -> None:
    done = manage(made, "behave", "--simple", "--format", "progress", "--no-capture")
    assert done.returncode == 0, done.stdout
    assert "2 scenarios passed, 0 failed, 0 skipped" in done.stdout, done.stdout


@pytest.fixture
def site(made: Path, settings, tmp_path: Path, db) -> Iterator[None]:
    """The made root as this process's config, on its fakes, with its data files applied by the admin."""
    settings.SANOMA_ROOT = made
    settings.SANOMA_FAKES = "instance"
    config = load_config(made, fakes="instance", fake_dir=tmp_path / "fakes")
    set_config(config)
    get_user_model().objects.create_superuser("admin", password="admin-password")
    call_command("apply", "--here", "--yes", "--as", "admin", stdout=io.StringIO())
    yield
    set_config(None)


def client_of(username: str) -> APIClient:
    client = APIClient()
    token = Token.objects.create(user=get_user_model().objects.get(username=username))
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def test_its_held_send_is_approved_through_the_api_and_the_run_finishes(site, monkeypatch) -> None:
    # No worker in this process: the API's decide answers at once (202) instead of waiting for one,
    # and the run is advanced here, as a worker would.
    monkeypatch.setattr("runs.api.views.DECIDE_WAIT_SECONDS", 0.0)
    from runs.config.registry import get_config

    config = get_config()
    # The people come from the made data file: a token each, as `manage.py drf_create_token` makes.
    sam, olivia = client_of("sam"), client_of("olivia")

    started = sam.post("/api/runs", {"workflow": "send-invoice", "input": {"customer_id": "c-1", "amount_cents": 1200},
                                     "run_id": "invoice-1"}, format="json")
    assert started.status_code == 201, started.content
    run = run_here(Run.objects.get(id="invoice-1"), config)
    assert run.status == "waiting"

    inbox = olivia.get("/api/approvals").json()["results"]
    assert [(a["run_id"], a["title"], a["op"]) for a in inbox] == [
        ("invoice-1", "Sending an invoice needs Olivia", "billing.invoice.send")]
    assert sam.get("/api/approvals").json()["results"] == []  # held for Olivia, not for the starter

    decided = olivia.post("/api/runs/invoice-1/approvals", {"decision": "approve", "note": "looks right"},
                          format="json")
    assert decided.status_code in (200, 202), decided.content
    run = run_here(run, config)
    assert run.status == "finished"
    result = sam.get("/api/runs/invoice-1/result").json()
    assert result["output"] == {"invoice_id": "inv-1", "status": "sent", "sent_to": "ada@example.com"}
    approval = olivia.get("/api/runs/invoice-1").json()
    assert "approval.decided" in [r["type"] for r in approval["ledger"]]


# ---- the desk: Olivia approves the held send in a browser, as the tutorial's step 8 says ------------

@pytest.mark.skipif(not HAVE_SELENIUM or not (CHROMIUM and CHROMEDRIVER), reason="no browser")
def test_olivia_signs_in_and_approves_the_held_send_on_the_desk(site, live_server, browser, shots) -> None:  # noqa: F811
    By, EC, WebDriverWait = ui.By, ui.EC, ui.WebDriverWait
    from runs.config.registry import get_config

    config = get_config()
    olivia = get_user_model().objects.get(username="olivia")
    assert olivia.is_staff  # as the made data file declares: she may sign in to the desk
    olivia.set_password(PASSWORD)  # what `manage.py changepassword olivia` does
    olivia.save()
    started = client_of("sam").post("/api/runs", {"workflow": "send-invoice", "run_id": "invoice-2",
                                                  "input": {"customer_id": "c-2", "amount_cents": 4500}}, format="json")
    assert started.status_code == 201, started.content
    assert run_here(Run.objects.get(id="invoice-2"), config).status == "waiting"

    stop = threading.Event()
    worker = threading.Thread(target=work, args=(config, stop), daemon=True)  # what `manage.py worker` does
    worker.start()
    wait = WebDriverWait(browser, 20)
    try:
        browser.get(f"{live_server.url}/admin/login/?next=/admin/")
        browser.find_element(By.NAME, "username").send_keys("olivia")
        browser.find_element(By.NAME, "password").send_keys(PASSWORD)
        browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        badge = wait.until(EC.presence_of_element_located((By.ID, "inbox-badge")))
        assert badge.text.lower() == "inbox 1"  # the header shows its links in capitals
        badge.click()
        wait.until(EC.presence_of_element_located((By.ID, "result_list")))
        inbox = browser.find_element(By.ID, "result_list").text
        # Listed by the call it lets through (the test's fake is fresh: its first invoice is inv-1).
        assert "Sending an invoice needs Olivia" in inbox and "Send invoice inv-1 to its customer" in inbox
        browser.find_element(By.PARTIAL_LINK_TEXT, "Send invoice inv-1").click()
        wait.until(EC.presence_of_element_located((By.ID, "approve-button")))
        browser.find_element(By.ID, "id_note").send_keys("Grace's invoice is right")
        browser.find_element(By.ID, "approve-button").click()
        message = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, "ul.messagelist li")))
        assert "approval-1 of run invoice-2 is approved by olivia" in message.text
        browser.find_element(By.ID, "run-link").click()
        wait.until(EC.presence_of_element_located((By.ID, "ledger")))
        wait.until(lambda b: "run.finished" in b.find_element(By.ID, "ledger").text)
        browser.save_screenshot(str(shots / "startcompany-approved.png"))
    finally:
        stop.set()
        worker.join(timeout=10)
    assert Run.objects.get(pk="invoice-2").status == "finished"


def work(config, stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            drain(config, worker_id="desk-test")
            time.sleep(0.05)
    finally:
        connection.close()


# ---- refusals ----------------------------------------------------------------------------------------

def test_a_folder_that_is_not_empty_is_refused_and_left_as_it_was(tmp_path: Path) -> None:
    folder = tmp_path / "billing_co"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(InvalidInput, match=f"the folder {folder} is not empty"):
        make_company(target=folder)
    assert tree(folder) == {"notes.txt"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["billing_co"]  # nothing staged beside it


@pytest.mark.parametrize(("name", "why"), [
    ("my-company", "'my-company' is not a Python identifier"),
    ("2cool", "'2cool' is not a Python identifier"),
    ("_private", "'_private' is not a Python identifier"),
    ("café", "'café' is not a Python identifier"),
    ("class", "'class' is a Python keyword"),
    ("runs", "'runs' is a package sanoma uses"),
    ("json", "'json' is a module Python already imports"),
    ("django", "'django' is a module Python already imports"),
])
def test_a_name_that_cannot_be_a_package_is_refused_naming_it(tmp_path: Path, name: str, why: str) -> None:
    with pytest.raises(InvalidInput, match=f"startcompany: the company's name {why}"):
        make_company(target=tmp_path / name)
    assert list(tmp_path.iterdir()) == []


def test_the_command_says_why_and_an_empty_folder_is_used(tmp_path: Path) -> None:
    with pytest.raises(CommandError, match=r"'my-company' is not a Python identifier \(.*\); choose another folder "
                                           "name, such as 'my_company'"):
        call_command("startcompany", str(tmp_path / "my-company"), stdout=io.StringIO())
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "empty_co").mkdir()
    out = io.StringIO()
    call_command("startcompany", str(tmp_path / "empty_co"), stdout=out)
    assert tree(tmp_path / "empty_co") == EXPECTED_FILES
    assert f"  {tmp_path / 'empty_co'}/workflows/send_invoice.py" in out.getvalue()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty_co"]
