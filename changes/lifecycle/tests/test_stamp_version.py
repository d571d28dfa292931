"""Stamping change runs onto the version a deploy brought, so the new worker finishes them."""
from __future__ import annotations

import threading

import pytest
from django.db import connection

from changes.lifecycle.services import stamp_version
from runs.engine import clock
from runs.models import Run, RunStatus


def make_run(run_id: str, workflow: str, status: str, version: str = "acme@A") -> Run:
    now = clock.now()
    return Run.objects.create(id=run_id, workflow=workflow, app_version=version, input={}, started_by="alice",
                              status=status, created_at=now, updated_at=now)


@pytest.mark.django_db(transaction=True)
def test_stamping_change_runs_onto_a_new_version_stamps_each_once():
    make_run("r1", "change", RunStatus.WAITING)
    make_run("r2", "change", RunStatus.QUEUED)
    make_run("r3", "refund", RunStatus.WAITING)
    make_run("r4", "change", RunStatus.FINISHED)
    results: list = []

    def stamp():
        try:
            results.append(stamp_version(run_ids=["r1", "r2", "r3", "r4"], version="acme@B"))
        finally:
            connection.close()

    threads = [threading.Thread(target=stamp) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stamped = sorted((s.run_id, s.pending) for batch in results for s in batch)
    assert stamped == [("r1", True), ("r2", False)]
    versions = dict(Run.objects.values_list("pk", "app_version"))
    assert versions == {"r1": "acme@B", "r2": "acme@B", "r3": "acme@A", "r4": "acme@A"}
