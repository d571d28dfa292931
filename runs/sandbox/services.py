"""Starting a sandbox run, and checking it once it has ended."""
from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from connectors.errors import InvalidInput, IssueCode, SanomaError
from runs import services
from runs.approvals.permissions import Principal, check_can_view, principal_of
from runs.config.registry import get_config
from runs.config.resolution import ResolvedConfig
from runs.engine import clock
from runs.errors import RunCode
from runs.models import ENDED_STATUSES, Run
from runs.sandbox.engine import PREFIX, is_sandbox_id
from runs.sandbox.fakes import SandboxFakes
from runs.sandbox.models import SandboxRun
from runs.sandbox.scenarios import Chosen, reader
from runs.sandbox.selectors import sandbox_of


def start_sandbox(*, scenario: str, started_by: str | Principal | Any, workflow: str | None = None,
                  config: ResolvedConfig | None = None) -> Run:
    """Start the workflow of the company's scenario `scenario` (its name) as a sandbox run.

    Fresh fakes are seeded by the scenario's `Given` steps; the run starts with its `When`'s input,
    as `started_by` (who must be allowed to start the workflow, as for any run), with an id
    beginning `sandbox-`; its row (the scenario, the fakes' books) is written in the same
    transaction as the run's, so no worker advances it before knowing it is a sandbox.
    `workflow`, when given, must be the scenario's. Anything wrong is `invalid_input` (or
    `permission_denied`), and nothing is written."""
    config = config or get_config()
    if not isinstance(scenario, str) or not scenario.strip():
        raise InvalidInput("Name the scenario to seed the sandbox run from",
                           data={"issues": [{"path": ["scenario"], "code": IssueCode.REQUIRED, "message": "required"}]})
    chosen = reader().find(config, name=scenario, workflow=workflow)
    fakes = SandboxFakes(config)
    try:
        seeded = fakes.config(config)
        # The starter's checks before seeding: a refusal costs nothing.
        services.check_start(config=config, workflow=chosen.workflow, input=chosen.input, started_by=started_by)
        reader().seed(seeded, chosen)
        books, calls_before = fakes.books(), fakes.calls_seen()
    finally:
        fakes.close()
    run_id = f"{PREFIX}{chosen.workflow}-{uuid.uuid4().hex[:20]}"
    with transaction.atomic():
        run = services.start(workflow=chosen.workflow, input=chosen.input, started_by=started_by, run_id=run_id,
                             config=config)
        SandboxRun.objects.create(run=run, scenario=chosen.name, file=chosen.file, books=books,
                                  calls_before=calls_before)
    return run


def check(*, run_id: str, viewer: str | Principal | Any, config: ResolvedConfig | None = None) -> SandboxRun:
    """The sandbox run's checks: its scenario's `Then` steps against how it ended and its fakes,
    evaluated once when it has ended and kept (later calls read them). A run not ended has none yet
    (`checks` None), nor has a child run (its scenario is its parent's, checked on the parent). A
    run that is not a sandbox is `invalid_input`; one the viewer may not see, `run_not_found`."""
    config = config or get_config()
    principal = viewer if isinstance(viewer, Principal) else principal_of(viewer)
    with transaction.atomic():
        run = Run.objects.filter(pk=run_id).first()
        if run is None or not check_can_view(principal, run, raise_error=False):
            raise SanomaError(f"No run {run_id}", code=RunCode.RUN_NOT_FOUND, data={"run_id": run_id})
        row = SandboxRun.objects.select_for_update().filter(pk=run_id).first()
        if row is None:
            raise InvalidInput(f"Run {run_id} is not a sandbox run: it has no scenario checks",
                               data={"run_id": run_id})
        if row.checks is not None or run.status not in ENDED_STATUSES or run.parent_id:
            return row  # a child run's scenario is its parent's: the checks are the parent's
        row.checks = evaluate(row, config)
        row.checked_at = clock.now()
        row.save(update_fields=["checks", "checked_at"])
        return row


def evaluate(row: SandboxRun, config: ResolvedConfig) -> list[dict[str, Any]]:
    """The scenario's checks against the run of `row` and its fakes' books (writes nothing)."""
    try:
        chosen: Chosen = reader().find(config, name=row.scenario)
    except InvalidInput as err:
        return [{"step": f'scenario "{row.scenario}"', "line": 0, "ok": False,
                 "detail": f"the scenario could not be read, so nothing was checked: {err}"}]
    fakes = SandboxFakes(config, row.books)
    try:
        return reader().checks(fakes.config(config), chosen, run_id=row.pk, calls_before=row.calls_before)
    finally:
        fakes.close()


def checks_of(run: Run, *, viewer: Any) -> SandboxRun | None:
    """For a page or an answer about `run` (which the viewer may see): its sandbox row, checked
    when it has ended; None for a run on real drivers."""
    row = sandbox_of(run)
    if row is None:
        return None
    if row.checks is None and run.status in ENDED_STATUSES and not run.parent_id:
        return check(run_id=run.pk, viewer=viewer)
    return row


def check_if_ended(*, run_id: str, viewer: Any) -> None:
    """Before a page about the run reads it: a sandbox run that has ended and has no checks yet gets
    them (one write, outside the page's read-only snapshot). Anything else is left alone."""
    if not is_sandbox_id(run_id):
        return
    if SandboxRun.objects.filter(pk=run_id, checks__isnull=True, run__status__in=ENDED_STATUSES).exists():
        try:
            check(run_id=run_id, viewer=viewer)
        except SanomaError:
            pass  # a run the viewer may not see: the page says so itself
