"""`manage.py sandbox` as the sandbox guide runs it: listing a workflow's scenarios (each one no
sandbox run can be seeded from said so, with why), and an unknown workflow refused by name."""
from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from runs.models import Run

pytestmark = pytest.mark.django_db


def test_an_unknown_workflow_is_refused_naming_it_and_the_closest(company):
    for typed, meant in (("nosuch", ""), ("refnd", " Did you mean refund?")):
        out = StringIO()
        with pytest.raises(CommandError) as refused:
            call_command("sandbox", workflow=typed, stdout=out)
        said = str(refused.value)
        assert said.startswith(f"No workflow '{typed}'.{meant} The workflows are ")
        assert ", refund, " in said and said.endswith("[invalid_input]")
        assert out.getvalue() == ""
    with pytest.raises(CommandError, match="No workflow 'refnd'. Did you mean refund?"):
        call_command("sandbox", "finance approves a refund", workflow="refnd", user="alice", stdout=StringIO())
    assert not Run.objects.exists()


def test_the_listing_says_which_scenarios_cannot_start_and_why(company):
    out = StringIO()
    call_command("sandbox", workflow="refund", stdout=out)
    lines = out.getvalue().splitlines()
    at = lines.index(f"{'refund':<24} the refund that would pass the budget is held for finance  "
                     "(scenarios/budget.feature:37)")
    assert lines[at + 1] == (f"{'':<24} cannot start: The scenario's step 'Given shop.order.refund has spent 90000 "
                             "today' (scenarios/budget.feature:38) cannot seed a sandbox run: the spend it seeds "
                             "would count as the company's real shop.order.refund spend today")
    assert f"{'refund':<24} finance approves a refund  (scenarios/refund.feature:10)" in lines
    with pytest.raises(CommandError) as refused:
        call_command("sandbox", "the refund that would pass the budget is held for finance", user="alice",
                     stdout=StringIO())
    assert str(refused.value) == lines[at + 1].split("cannot start: ", 1)[1] + " [invalid_input]"
    assert not Run.objects.exists()
