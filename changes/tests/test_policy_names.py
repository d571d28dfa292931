"""Cedar policies that name what the site does not have, as `manage.py check` and `manage.py lint`
report them: an action or operation no connector declares (a typo that makes a rule match nothing),
an `@approve` naming nobody (no declared person or group, no user or group of the site). And the
lint reports its findings when the system checks fail.

Each test writes a config root and runs the commands as the docs say, in this process
(`call_command` with the system checks on, as `manage.py` runs them).
"""
from __future__ import annotations

import io
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command, load_command_class
from django.core.management.base import CommandError, SystemCheckError
from django.test import override_settings

from runs.testing import make_user

CONFIG = """
    from runs.authoring import SanomaConfig
    from runs.tests.fixtures import acme

    config = SanomaConfig(app_name="polco", connectors=[acme])
"""
PEOPLE = """
    from changes.datafiles import sanoma

    finance = sanoma.group(name="finance")
    fiona = sanoma.person(username="fiona", groups=[finance])
"""
GOOD = """
    @id("staff-may-act")
    permit(principal, action, resource);

    @id("refunds-need-finance")
    @approve("fiona")
    forbid(principal, action == Action::"acme.order.refund", resource);

    @id("mail-needs-the-group")
    @approve("group:finance")
    forbid(principal, action in Action::"send", resource in Operation::"acme.mail.send");
"""


@pytest.fixture
def root(tmp_path: Path) -> Iterator[Path]:
    """A config root with a package name of its own, declaring fiona and the finance group."""
    name = f"polco_{uuid.uuid4().hex[:8]}"
    folder = tmp_path / name
    for rel, text in {"__init__.py": "", "sanoma_config.py": CONFIG, "resources/people.py": PEOPLE,
                      "policies/acme.cedar": GOOD}.items():
        write(folder, rel, text)
    with override_settings(SANOMA_ROOT=folder, SANOMA_FAKES="instance"):
        yield folder
    for module in [m for m in sys.modules if m == name or m.startswith(f"{name}.")]:
        del sys.modules[module]
    if str(tmp_path) in sys.path:
        sys.path.remove(str(tmp_path))


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")


def check() -> str:
    """`manage.py check`: what it prints, errors and warnings ("" when it finds nothing)."""
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("check", stdout=out, stderr=err)
    except SystemCheckError as failed:
        return str(failed)
    return err.getvalue() + out.getvalue()


def lint(root: Path) -> tuple[int, list[str]]:
    """`manage.py lint --root ROOT` as manage.py runs it (the system checks first, when the command
    asks for them): exit status, problem lines."""
    out, err = io.StringIO(), io.StringIO()
    # What `run_from_argv` does, but for closing the test's database connection at the end.
    command = load_command_class("runs", "lint")
    options = vars(command.create_parser("manage.py", "lint").parse_args(["--root", str(root)]))
    args = options.pop("args", ())
    try:
        command.execute(*args, **options, stdout=out, stderr=err)
        code = 0
    except CommandError as failed:  # a SystemCheckError too: manage.py prints it and exits 1
        err.write(str(failed))
        code = 1
    except SystemExit as exit:
        code = int(exit.code or 0)
    lines = [line for line in out.getvalue().splitlines() if line.startswith(f"{root}/")]
    assert lines or code == 0, f"exit {code} with nothing linted:\n{err.getvalue()}"
    return code, lines


@pytest.mark.django_db
def test_a_fresh_site_may_name_the_people_its_data_files_declare(root):
    """No user or group exists yet (nothing applied): the declared ones count."""
    assert "no issues" in check()
    assert lint(root) == (0, [])


@pytest.mark.django_db
def test_an_action_no_connector_declares_is_refused_at_its_line(root):
    write(root, "policies/acme.cedar", textwrap.dedent(GOOD).lstrip("\n") + textwrap.dedent("""
        @id("no-refnds")
        forbid(principal, action == Action::"acme.order.refnd", resource)
        when { context.workflow == "x" };

        @id("mail-held")
        @approve("fiona")
        @covers("acme.mail.sned")
        forbid(principal, action, resource in Operation::"acme.mial.send");
    """))
    printed = check()
    where = f"{root}/policies/acme.cedar"
    assert (f'{where}:13: (sanoma.E003) invalid policy: Action::"acme.order.refnd" names an action no connector '
            "declares, so the rule never applies to it: did you mean acme.order.refund?") in printed
    assert (f"{where}:18: (sanoma.E003) invalid policy: @covers names acme.mail.sned, which no connector declares: "
            "did you mean acme.mail.send?") in printed
    assert (f'{where}:19: (sanoma.E003) invalid policy: Operation::"acme.mial.send" names an operation no '
            "connector declares") in printed
    code, lines = lint(root)
    assert code == 1 and [line.split(": ", 1)[0] for line in lines] == [
        f"{where}:13:1", f"{where}:18:1", f"{where}:19:1"]
    assert "did you mean acme.order.refund?" in lines[0]


@pytest.mark.django_db
def test_an_input_field_the_operation_does_not_have_is_refused_at_its_line(root):
    """A typo in `context.input.<name>` makes Cedar skip the rule at run time (a forbid then holds
    nothing): check and lint refuse it where it is written, with the field meant."""
    write(root, "policies/acme.cedar", textwrap.dedent(GOOD).lstrip("\n") + textwrap.dedent("""
        @id("big-refunds-need-fiona")
        @approve("fiona")
        forbid(principal, action == Action::"acme.order.refund", resource)
        when { context.input.amount > 100 };

        @id("big-refunds-typo")
        @approve("fiona")
        forbid(principal, action == Action::"acme.order.refund", resource)
        when { context.input has order_id &&
               context.input.amont > 100 };

        @id("money-and-mail")
        @approve("fiona")
        forbid(principal, action in [Action::"money", Action::"acme.mail.send"], resource)
        when { context.input.to == "x" || context.input.amount > 5 || context.input["subject"] == "y" };
    """))
    printed = check()
    where = f"{root}/policies/acme.cedar"
    assert (f"{where}:21: (sanoma.E003) invalid policy: context.input.amont names an input field acme.order.refund "
            "does not have, so the condition cannot be evaluated and the rule never applies: did you mean amount?"
            ) in printed
    assert (f"{where}:26: (sanoma.E003) invalid policy: context.input.subject names an input field acme.mail.send, "
            "acme.order.refund do not have, so the condition cannot be evaluated and the rule never applies "
            "(its input has amount, order_id, text, to)") in printed
    assert printed.count("context.input.") == 2, printed  # `amount` and `to` are fields: no problem
    code, lines = lint(root)
    assert code == 1 and [line.split(": ", 1)[0] for line in lines] == [f"{where}:21:8", f"{where}:26:1"]
    assert "did you mean amount?" in lines[0]


@pytest.mark.django_db
def test_an_approver_who_is_nobody_is_refused_and_a_user_of_the_site_is_not(root):
    write(root, "policies/acme.cedar", GOOD.replace('@approve("fiona")', '@approve("fionna")')
          .replace('@approve("group:finance")', '@approve("group:finanse")'))
    printed = check()
    where = f"{root}/policies/acme.cedar"
    assert (f'{where}:5: (sanoma.E012) invalid policy: @approve("fionna") names fionna, who is neither a person '
            "the data files declare (sanoma.person) nor a user of the site: the call would wait for nobody "
            "(did you mean fiona?)") in printed
    assert (f'{where}:9: (sanoma.E012) invalid policy: @approve("group:finanse") names the group finanse, which no '
            "data file declares (sanoma.group) and the site does not have: the call would wait for nobody "
            "(did you mean group:finance?)") in printed
    code, lines = lint(root)
    assert code == 1 and [line.split(": ", 1)[0] for line in lines] == [f"{where}:5:1", f"{where}:9:1"]
    # The account and the group a held call makes for the approver it names (no password, never
    # signed in; nobody in the group) turn the errors into warnings that still say so.
    make_user("fionna")
    finanse = Group.objects.create(name="finanse")
    printed = check()
    assert "sanoma.E012" not in printed
    assert (f'{where}:5: (sanoma.W012) invalid policy: @approve("fionna") names fionna, whom no data file declares '
            "and whose account has no password and never signed in") in printed
    assert (f'{where}:9: (sanoma.W012) invalid policy: @approve("group:finanse") names the group finanse, which no '
            "data file declares and nobody is in") in printed
    # People made another way (the admin, a sign-on) are the site's users: they count.
    fionna = get_user_model().objects.get(username="fionna")
    fionna.set_password("a-password-of-hers")
    fionna.save()
    finanse.user_set.add(fionna)
    assert "no issues" in check()
    assert lint(root) == (0, [])


@pytest.mark.django_db
def test_an_approver_whose_account_is_inactive_is_a_warning(root):
    write(root, "policies/acme.cedar", GOOD.replace('@approve("fiona")', '@approve("gone-person")'))
    user = make_user("gone-person")
    user.is_active = False
    user.save()
    printed = check()
    assert "(sanoma.W012) invalid policy: @approve(\"gone-person\") names gone-person, whose account is inactive" \
        in printed
    assert lint(root) == (0, [])  # a warning: the lint refuses what is wrong for sure


def test_without_a_database_an_unknown_approver_is_a_warning_that_says_so(root):
    """No database access (a test without it, a site not migrated): the site's users may hold them."""
    write(root, "policies/acme.cedar", GOOD.replace('@approve("fiona")', '@approve("someone-else")'))
    printed = check()
    assert "(sanoma.W012)" in printed and "(the site's users were not read: " in printed
    assert "sanoma.E012" not in printed


@pytest.mark.django_db
def test_the_lint_reports_its_findings_when_the_system_checks_fail(root):
    """A workflow that does not import fails the checks (sanoma.E002): the lint still runs, without
    --skip-checks, and says what is wrong in the file."""
    write(root, "workflows/__init__.py", "")
    write(root, "workflows/flow.py", """
        import time

        from runs.authoring import define_workflow
        from nowhere_at_all import helper


        def run(ctx, input):
            return time.time()


        flow = define_workflow(name="flow", run=run)
    """)
    assert "sanoma.E002" in check()
    code, lines = lint(root)
    assert code == 1
    assert lines[0].startswith(f"{root}/workflows/flow.py:1:8: `import time`")
    assert any(line.startswith(f"{root}/workflows/flow.py:4:") and "nowhere_at_all" in line for line in lines)
