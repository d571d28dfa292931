"""`define_workflow(..., approval_sla=...)`: a positive duration, or refused naming the workflow and the field."""
from __future__ import annotations

from datetime import timedelta

import pytest

from runs.authoring import define_workflow


def run(ctx, input):
    return {}


def test_an_sla_is_a_timedelta_or_an_interval():
    assert define_workflow(name="a", run=run, approval_sla=timedelta(hours=4)).approval_sla == timedelta(hours=4)
    assert define_workflow(name="b", run=run, approval_sla="2d").approval_sla == timedelta(days=2)
    assert define_workflow(name="c", run=run, approval_sla="90m").approval_sla == timedelta(minutes=90)
    assert define_workflow(name="d", run=run).approval_sla is None


@pytest.mark.parametrize("bad", [timedelta(0), timedelta(hours=-1), "soon", "", 3600, True])
def test_anything_else_is_refused_naming_the_workflow_and_the_field(bad):
    with pytest.raises(ValueError) as refused:
        define_workflow(name="refund", run=run, approval_sla=bad)
    assert str(refused.value) == (f'Workflow "refund": approval_sla {bad!r} is not a positive duration '
                                  "(a timedelta, or '30m', '4h', '2d')")
