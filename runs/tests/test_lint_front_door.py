"""The lint on a workflow file that imports from the front door: everything a workflow needs is
allowed; a vendor's driver and fake halves are refused from `runs.authoring` as from `connectors`."""
from __future__ import annotations

import textwrap

from runs.config.lint.workflows import Allowed, lint_workflow

ALLOWED = Allowed(package="acme", module="acme.workflows.flow")


def lint(source: str) -> list[str]:
    return [f"{p.line}:{p.column}: {p.message}" for p in lint_workflow("workflows/flow.py",
                                                                      textwrap.dedent(source), ALLOWED)]


def test_a_workflow_taking_what_it_needs_from_the_front_door_is_clean():
    assert lint('''
        from runs.authoring import Ctx, Every, SanomaError, define_workflow, error_code


        def run(ctx: Ctx, input):
            try:
                ctx.wait_message("done", timeout=60)
            except SanomaError as err:
                if error_code(err) != "wait_timed_out":
                    raise
            return {}


        flow = define_workflow(name="flow", run=run, trigger=Every("1h"))
    ''') == []


def test_the_vendor_halves_are_refused_from_the_front_door_too():
    found = lint('''
        from runs.authoring import define_fake, define_workflow, with_setup
    ''')
    assert found == [
        "2:28: `from runs.authoring import define_fake` belongs to a vendor's driver or fake, which the worker calls: "
        "a workflow calls the vendor through ctx",
        "2:58: `from runs.authoring import with_setup` belongs to a vendor's driver or fake, which the worker calls: "
        "a workflow calls the vendor through ctx"]
