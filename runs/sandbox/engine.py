"""What the engine asks about a sandbox run as it advances one (`runs.engine.segment`).

A sandbox run's id begins with `sandbox-` (`services.start_sandbox` makes it; its child runs'
`<parent>.<seq>` and its reruns' `<run>~<n>` keep it), so an ordinary run costs the engine no read
(a child run or a rerun, one: it may have been given an id of its own).
The run's `SandboxRun` row is the truth: a run with the prefix and a row advances on fakes. A child
run, rerun or fork of a sandbox run gets a row of its own (its scenario, and its origin's books as
they are) before its first call, so it too never reaches a real driver.
"""
from __future__ import annotations

from typing import Any

from django.db import transaction

from runs.config.resolution import ResolvedConfig
from runs.models import Run
from runs.sandbox.fakes import SandboxFakes
from runs.sandbox.models import SandboxRun

PREFIX = "sandbox-"


def is_sandbox_id(run_id: str) -> bool:
    return run_id.startswith(PREFIX)


def row_of(run: Run) -> SandboxRun | None:
    """The run's sandbox row, made from its origin's (parent, or the run it reruns) when it has none yet.

    Read only for a run that may be one: its id has the prefix, or it has an origin (a child run
    given an id of its own by `ctx.start_run(run_id=...)` is a sandbox run if its parent is)."""
    if not (is_sandbox_id(run.pk) or run.parent_id or run.source_run):
        return None
    row = SandboxRun.objects.filter(pk=run.pk).first()
    if row is not None:
        return row
    for origin in (run.parent_id, run.source_run):
        if not origin:
            continue
        source = SandboxRun.objects.filter(pk=origin).first()
        if source is not None:
            return adopt(run_id=run.pk, source=source, books=source.books)
    return None


def adopt(*, run_id: str, source: SandboxRun, books: dict[str, Any]) -> SandboxRun:
    """A sandbox row for `run_id` (a child, rerun or fork of `source`'s run), on these books."""
    row, _ = SandboxRun.objects.get_or_create(
        run_id=run_id, defaults={"scenario": source.scenario, "file": source.file, "books": books,
                                 "calls_before": {}})
    return row


class SandboxAdvance:
    """One advance of a sandbox run: its fakes, loaded from the row; saved as steps are written."""

    def __init__(self, row: SandboxRun, config: ResolvedConfig) -> None:
        self.row = row
        self.fakes = SandboxFakes(config, row.books)
        self.config = self.fakes.config(config)

    def save(self) -> None:
        """The fakes' books into the row, inside the step's transaction: they commit with it (a
        write tried again after a dropped connection writes them again)."""
        changed = self.fakes.changed()
        if changed is None:
            return
        texts, books = changed
        SandboxRun.objects.filter(pk=self.row.pk).update(books=books)
        self.row.books = books
        transaction.on_commit(lambda: self.fakes.saved(texts))

    def adopt_child(self, child: Run) -> None:
        """A child run started by this one: a sandbox run on the fakes as they are now."""
        adopt(run_id=child.pk, source=self.row, books=self.fakes.books())

    def close(self) -> None:
        self.fakes.close()


def sandbox_advance(run: Run, config: ResolvedConfig) -> SandboxAdvance | None:
    row = row_of(run)
    return SandboxAdvance(row, config) if row is not None else None
