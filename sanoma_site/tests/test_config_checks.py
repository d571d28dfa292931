"""`manage.py check` resolves the company config and reports each problem with its file and line."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sanoma_site.tests.support import PRODUCTION_KEY, REPO, manage


@pytest.fixture
def company(tmp_path: Path) -> Path:
    """A copy of the example company, named company/ (its files import `company.*`)."""
    root = tmp_path / "copy" / "company"
    shutil.copytree(REPO / "company", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def check(root: Path, var_dir: Path, *args: str) -> tuple[int, str]:
    done = manage("check", *args, SANOMA_ROOT=str(root), SANOMA_VAR_DIR=str(var_dir))
    return done.returncode, done.stdout + done.stderr


def replace_line(file: Path, starting: str, text: str) -> int:
    """Replace the first line starting with `starting` by `text`; its number."""
    lines = file.read_text().splitlines()
    number = next(i for i, line in enumerate(lines, 1) if line.startswith(starting))
    lines[number - 1] = text
    file.write_text("\n".join(lines) + "\n")
    return number


def break_refund(company: Path) -> int:
    return replace_line(company / "workflows" / "refund.py", "def run(", "def run(ctx, input: RefundInput:")


def test_the_example_company_passes(tmp_path):
    status, output = check(REPO / "company", tmp_path)
    assert status == 0, output
    assert "System check identified no issues" in output


def test_a_workflow_with_a_syntax_error_fails_naming_its_file_and_line(company, tmp_path):
    line = break_refund(company)
    status, output = check(company, tmp_path)
    assert status != 0
    assert (f"{company}/workflows/refund.py:{line}: (sanoma.E002) "
            "workflows/refund.py does not import: SyntaxError") in output
    assert "System check identified 1 issue" in output


def test_each_broken_workflow_is_its_own_error_with_the_line_that_raised(company, tmp_path):
    refund = break_refund(company)
    authoring = "from runs.authoring import"
    reprice = replace_line(company / "workflows" / "reprice.py", authoring, f"{authoring} no_such_name")
    status, output = check(company, tmp_path)
    assert status != 0
    assert f"{company}/workflows/refund.py:{refund}: (sanoma.E002)" in output
    assert (f"{company}/workflows/reprice.py:{reprice}: (sanoma.E002) workflows/reprice.py does not import: "
            "ImportError: cannot import name 'no_such_name' from 'runs.authoring'") in output
    assert "System check identified 2 issues" in output


def test_a_policy_that_does_not_parse_names_its_file_and_line(company, tmp_path):
    policy = company / "policies" / "shop.cedar"
    lines = len(policy.read_text().splitlines())
    policy.write_text(policy.read_text() + "\npermit (principal, action == , resource);\n")
    status, output = check(company, tmp_path)
    assert status != 0
    assert f"{policy}:{lines + 2}: (sanoma.E003) invalid policy: " in output


def test_a_broken_workflow_does_not_hide_a_broken_policy(company, tmp_path):
    refund = break_refund(company)
    policy = company / "policies" / "shop.cedar"
    lines = len(policy.read_text().splitlines())
    policy.write_text(policy.read_text() + "\nforbid (principal, action, resource) when { ;\n")
    status, output = check(company, tmp_path)
    assert status != 0
    assert f"{company}/workflows/refund.py:{refund}: (sanoma.E002)" in output
    assert f"{policy}:{lines + 2}: (sanoma.E003)" in output
    assert "System check identified 2 issues" in output


def test_a_config_that_does_not_import_names_sanoma_config_and_the_line(company, tmp_path):
    config = company / "sanoma_config.py"
    lines = len(config.read_text().splitlines())
    config.write_text(config.read_text() + "\nimport company.no_such_module\n")
    status, output = check(company, tmp_path)
    assert status != 0
    assert f"{config}:{lines + 2}: (sanoma.E004) sanoma_config.py: ModuleNotFoundError" in output


def test_a_missing_root_is_named(tmp_path):
    status, output = check(tmp_path / "nowhere", tmp_path)
    assert status != 0
    assert f"(sanoma.E001) the config root {tmp_path / 'nowhere'} is not a folder" in output


def test_other_commands_refuse_a_broken_config_too(company, tmp_path):
    break_refund(company)
    done = manage("migrate", "--plan", SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path))
    assert done.returncode != 0
    assert "(sanoma.E002)" in done.stderr


def test_a_config_running_only_on_fakes_is_a_warning_in_development_and_an_error_in_production(company, tmp_path):
    replace_line(company / "vendors" / "shop" / "__init__.py", "with_setup(shop, ", "with_setup(shop, fake=make_fake)")

    status, output = check(company, tmp_path)
    assert status == 0, output  # scenarios run on the fakes
    assert "(sanoma.W005) shop.order.get has no driver (a worker on real drivers refuses the config" in output
    assert output.count("shop.order.get has no driver") == 1  # once, however many workflows use it

    on_fakes = manage("check", SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path), SANOMA_FAKES="instance")
    assert on_fakes.returncode == 0 and "no issues" in on_fakes.stdout, on_fakes.stderr

    production = manage(
        "check", SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path),
        DJANGO_ENV="production", DJANGO_SECRET_KEY=PRODUCTION_KEY, DJANGO_ALLOWED_HOSTS="sanoma.example.com",
    )
    assert production.returncode != 0
    assert "(sanoma.E005) shop.order.get has no driver" in production.stderr
