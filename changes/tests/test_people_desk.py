"""People declared in data files can use the desk: `staff=True` on a person, site permissions (or
roles) on a group, checked when the file is read; an apply makes them so; `manage.py people` lists
who can sign in and why not, and grants only where the repository is not the truth; the desk's
sign-in page says why a person who gave their right password cannot sign in (in a real browser).
"""
from __future__ import annotations

import io
import json
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import CommandError

from changes import services
from changes.datafiles.sanoma import ROLES
from runs.config.datafiles import read_datafiles
from runs.config.registry import set_config
from runs.config.resolution import load_config
from runs.tests import test_admin_browser as ui
from runs.tests.test_admin_browser import CHROMEDRIVER, CHROMIUM, HAVE_SELENIUM, browser, shots  # noqa: F401 (fixtures)

CONFIG = """
    from runs.authoring import SanomaConfig
    from runs.tests.fixtures import acme

    config = SanomaConfig(app_name="deskco", connectors=[acme])
"""
PEOPLE = """
    from changes.datafiles import sanoma

    ops = sanoma.group(name="ops", permissions=["operator", "runs.start_workflow"])
    readers = sanoma.group(name="readers", permissions=["viewer"])
    ada = sanoma.person(username="ada", email="ada@deskco.example", groups=[ops], staff=True)
    bo = sanoma.person(username="bo", groups=[readers])
"""
PASSWORD = "correct-horse-battery"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


@pytest.fixture
def root(tmp_path: Path, settings) -> Iterator[Path]:
    name = f"deskco_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / name
    for rel, text in {"__init__.py": "", "sanoma_config.py": CONFIG, "resources/people.py": PEOPLE}.items():
        write(folder, rel, text)
    settings.SANOMA_ROOT = folder
    settings.SANOMA_FAKES = "instance"
    yield folder
    set_config(None)
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


@pytest.fixture
def applied(root, db):
    """The data files applied (no policy: everything allowed), as `manage.py apply --here --yes`."""
    config = load_config(root, fakes="instance")
    set_config(config)
    user = get_user_model().objects.create_superuser("admin", password=PASSWORD)
    call_command("apply", "--here", "--yes", "--as", user.username, stdout=io.StringIO())
    return config


def people(*args: str) -> str:
    """`manage.py people ...`: what it prints, each line's runs of spaces (the columns) made one."""
    out = io.StringIO()
    call_command("people", *args, stdout=out)
    return out.getvalue() if "--json" in args else "\n".join(" ".join(line.split()) for line in
                                                              out.getvalue().splitlines())


# ---- reading the data files ------------------------------------------------------------------------


def test_a_groups_permissions_are_checked_when_read_and_roles_expand(root, db):
    write(root, "resources/more.py", """
        from changes.datafiles import sanoma

        typo = sanoma.group(name="typo", permissions=["runs.operate_run", "operatr", "nothing here"])
    """)
    found = read_datafiles(root, [])
    (problem,) = found.problems
    assert (problem.file, problem.line) == ("resources/more.py", 3)
    assert "unknown permission 'runs.operate_run': did you mean 'runs.operate_runs'?" in problem.message
    assert "'operatr': did you mean 'operator'?" in problem.message
    assert "'nothing here' (a permission is written app_label.codename)" in problem.message
    ops = next(r for r in found.resources if r.name == "ops")
    assert ops.values["permissions"] == sorted({*ROLES["operator"], "runs.start_workflow"})
    ada = next(r for r in found.resources if r.name == "ada")
    assert ada.values["staff"] is True
    # The lint reports it where it is written.
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("lint", "--root", str(root), stdout=out)
    assert f"{root}/resources/more.py:3:" in out.getvalue() and "runs.operate_runs" in out.getvalue()


# ---- an apply makes them so ------------------------------------------------------------------------


def test_apply_makes_staff_and_the_groups_permissions(applied):
    User = get_user_model()
    ada, bo = User.objects.get(username="ada"), User.objects.get(username="bo")
    assert ada.is_staff and not bo.is_staff
    assert ada.has_perm("runs.operate_runs") and ada.has_perm("runs.view_any_run")
    assert ada.has_perm("runs.start_workflow")
    assert bo.has_perm("runs.view_any_run") and not bo.has_perm("runs.operate_runs")
    # Changed behind the files' back, a group's permissions are drift; the next apply takes them back.
    Group.objects.get(name="readers").permissions.clear()
    _, report = services.drift(by="admin", here=True, config=applied)
    readers = next(e for e in report["resources"] if e["name"] == "readers")
    assert readers["status"] == "drifted" and readers["diffs"][0]["path"] == "permissions"
    plan = services.plan(report, by="admin", config=applied)
    (change,) = plan["changes"]
    assert change["action"] == "update" and change["calls"][0]["op"] == "sanoma.group.update"
    assert applied.ops["sanoma.group.update"].effect == "access"  # what the policy sees: a grant
    call_command("apply", "--here", "--yes", "--as", "admin", stdout=io.StringIO())
    assert User.objects.get(username="bo").has_perm("runs.view_any_run")


# ---- manage.py people --------------------------------------------------------------------------------


def test_people_lists_who_can_sign_in_and_why_not(applied):
    User = get_user_model()
    ada = User.objects.get(username="ada")
    printed = people()
    assert "ada cannot sign in: no password yet (an administrator sets one: `manage.py changepassword " \
           "ada`); groups: ops (resources/people.py:5)" in printed
    ada.set_password(PASSWORD)
    ada.save()
    printed = people()
    assert "ada can sign in to the desk (staff); groups: ops (resources/people.py:5)" in printed
    bo = User.objects.get(username="bo")
    bo.set_password(PASSWORD)
    bo.save()
    assert "bo cannot sign in: not staff (declare staff=True in the data file and apply" in people()
    write(applied.root, "resources/later.py", """
        from changes.datafiles import sanoma

        cy = sanoma.person(username="cy")
    """)
    assert "cy cannot sign in: not applied yet (`manage.py apply` makes the account)" in people()
    document = json.loads(people("--json"))
    ops = next(g for g in document["groups"] if g["name"] == "ops")
    assert ops["members"] == ["ada"] and "runs.operate_runs" in ops["permissions"]
    assert next(p for p in document["people"] if p["username"] == "ada")["can_sign_in"] is True


def test_grants_go_in_the_data_files_and_the_console_grants_only_the_sites_own_groups(applied):
    with pytest.raises(CommandError, match=r"The group ops is declared in resources/people.py:3: grant there"):
        people("grant", "ops", "runs.pause")
    with pytest.raises(CommandError, match=r"The site has no group auditors: declare it in a data file"):
        people("grant", "auditors", "viewer")
    auditors = Group.objects.create(name="auditors")  # made in the admin
    with pytest.raises(CommandError, match=r"Unknown permission 'runs.veiw_any_run': did you mean "
                                           r"'runs.view_any_run'\?"):
        people("grant", "auditors", "runs.veiw_any_run")
    assert not auditors.permissions.exists()  # a bad name changes nothing
    assert people("grant", "auditors", "viewer").startswith("auditors holds viewer; it now holds: runs.view_any_run")
    assert auditors.permissions.count() == len(ROLES["viewer"])
    people("revoke", "auditors", "runs.view_step")
    assert not auditors.permissions.filter(codename="view_step").exists()
    assert "auditors runs.view_any_run, runs.view_approval" in people() and "(the site's)" in people()


# ---- signing in to the desk, in a browser ------------------------------------------------------------


@pytest.mark.skipif(not HAVE_SELENIUM or not (CHROMIUM and CHROMEDRIVER), reason="no browser")
def test_the_sign_in_page_says_why_a_known_person_cannot_sign_in(applied, live_server, browser, shots):  # noqa: F811
    By, EC, WebDriverWait = ui.By, ui.EC, ui.WebDriverWait
    User = get_user_model()
    for username in ("ada", "bo"):
        user = User.objects.get(username=username)
        user.set_password(PASSWORD)
        user.save()
    gone = User.objects.create_user("gone", password=PASSWORD, is_staff=True, is_active=False)
    wait = WebDriverWait(browser, 20)

    def sign_in(username: str, password: str) -> tuple[str, str]:
        browser.delete_all_cookies()
        browser.get(f"{live_server.url}/admin/login/?next=/admin/")
        wait.until(EC.presence_of_element_located((By.NAME, "username"))).send_keys(username)
        browser.find_element(By.NAME, "password").send_keys(password)
        browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()
        wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, ".errornote") or b.find_elements(By.ID, "user-tools"))
        notes = browser.find_elements(By.CSS_SELECTOR, ".errornote")
        helps = browser.find_elements(By.ID, "sign-in-help")
        return (notes[0].text if notes else ""), (helps[0].text if helps else "")

    # bo's password is right, but bo is not staff: the page says so, and how it is fixed.
    note, _ = sign_in("bo", PASSWORD)
    assert note.startswith("The password is right, but bo is not staff: only staff sign in to the desk.")
    assert "staff=True" in note
    browser.save_screenshot(str(shots / "sign-in-not-staff.png"))
    note, _ = sign_in("gone", PASSWORD)
    assert note.startswith("The password is right, but gone's account is inactive")
    # Without the right password nothing about the account is said: a wrong password for bo reads
    # exactly as a username nobody has, and both carry the same general note.
    wrong, wrong_help = sign_in("bo", "not-the-password")
    nobody, nobody_help = sign_in("nobody-at-all", "not-the-password")
    assert wrong == nobody and "correct username and password for a staff account" in wrong
    assert wrong_help == nobody_help and "no password yet" in wrong_help and "manage.py people" in wrong_help
    browser.save_screenshot(str(shots / "sign-in-refused.png"))
    # ada, staff in a group with the operator role, signs in and sees the runs.
    note, _ = sign_in("ada", PASSWORD)
    assert note == ""
    browser.get(f"{live_server.url}/admin/runs/run/")
    wait.until(EC.presence_of_element_located((By.ID, "changelist")))
    assert gone.pk  # kept for the record: an inactive account stays
