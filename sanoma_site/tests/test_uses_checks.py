"""`manage.py check` and `manage.py lint`, run as the docs say, on a copy of the example company:
a workflow that lists `uses` and calls something the list lacks is refused at the call's line; a
trigger written as the older dict is refused with the value to write instead."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from sanoma_site.tests.support import REPO, manage


@pytest.fixture
def company(tmp_path: Path) -> Path:
    root = tmp_path / "copy" / "company"
    shutil.copytree(REPO / "company", root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def rewrite(file: Path, old: str, new: str) -> None:
    text = file.read_text()
    assert old in text, old
    file.write_text(text.replace(old, new, 1))


def line_of(file: Path, starting: str) -> int:
    return next(i for i, line in enumerate(file.read_text().splitlines(), 1) if line.strip().startswith(starting))


def test_a_call_the_given_uses_lacks_is_refused_by_check_and_lint_at_its_line(company, tmp_path):
    refund = company / "workflows" / "refund.py"
    rewrite(refund, "    run=run,\n", "    uses=[Ctx.approval, shop.op(\"shop.order.get\")],\n    run=run,\n")
    for command in ("check", "lint"):
        done = manage(command, SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path / command))
        output = done.stdout + done.stderr
        assert done.returncode != 0, output
        refunded = line_of(refund, "refund = ctx.shop.order.refund(")
        prefix = "(sanoma.E005) " if command == "check" else f"workflows/refund.py:{refunded}:14: "
        assert (prefix + f'Workflow "refund" calls ctx.shop.order.refund at workflows/refund.py:{refunded}:14, '
                "which its `uses` does not list: add shop.order.refund to uses, or leave uses out (it is then "
                "derived from the calls)") in output, output
        for call in ("shop.customer.notify", "data.notes.put"):
            assert f'Workflow "refund" calls ctx.{call} at workflows/refund.py:' in output
        assert "calls ctx.shop.order.get" not in output  # listed


def test_a_trigger_written_as_a_dict_stops_the_check_with_the_value_to_write(company, tmp_path):
    report = company / "workflows" / "refunds_report.py"
    rewrite(report, 'trigger=Schedule(cron="0 8 * * 1-5", timezone="Europe/Helsinki", overlap="skip"),',
            'trigger={"schedule": "0 8 * * 1-5", "timezone": "Europe/Helsinki"},')
    done = manage("check", SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path))
    assert done.returncode != 0
    assert ("workflows/refunds_report.py does not import: ValueError: Workflow \"refunds-report\": a trigger is a "
            "value now, not a dict: write trigger=Schedule(cron='0 8 * * 1-5', timezone='Europe/Helsinki') "
            "(Schedule and Every come from runs.authoring)") in done.stdout + done.stderr


def test_a_call_no_connector_declares_is_refused_by_check_and_lint_at_its_line(company, tmp_path):
    """A typo in an operation's name: at the workflow's line (not sanoma_config.py), with the
    operation meant."""
    refund = company / "workflows" / "refund.py"
    rewrite(refund, "refund = ctx.shop.order.refund(", "refund = ctx.shop.order.refnd(")
    refunded = line_of(refund, "refund = ctx.shop.order.refnd(")
    message = (f'Workflow "refund" calls shop.order.refnd (workflows/refund.py:{refunded}), which no connector in '
               "the config declares: did you mean shop.order.refund?")
    for command in ("check", "lint"):
        done = manage(command, SANOMA_ROOT=str(company), SANOMA_VAR_DIR=str(tmp_path / command))
        output = done.stdout + done.stderr
        assert done.returncode != 0, output
        where = (f"{refund}:{refunded}: (sanoma.E005) " if command == "check"
                 else f"workflows/refund.py:{refunded}:14: ")
        assert where + message in output, output
