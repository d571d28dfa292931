"""What the sweep counts: its passes' duration, and each run it takes over from a worker whose lease
expired (`sanoma_sweep_duration_seconds`, `sanoma_lease_takeovers_total`). Real commits."""
from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta

import pytest
from django_q.models import OrmQ
from prometheus_client import REGISTRY

from runs.engine import clock
from runs.models import Run, RunStatus
from wakeups import sweep as sweep_module
from wakeups.sweep import sweep

pytestmark = pytest.mark.django_db(transaction=True)
VERSION = "w@1"


@pytest.fixture(autouse=True)
def clean() -> Iterator[None]:
    sweep_module._next_resend = 0.0
    yield
    OrmQ.objects.all().delete()


def sample(name: str) -> float:
    return REGISTRY.get_sample_value(name) or 0.0


def test_each_pass_is_timed_and_each_takeover_counted():
    now = clock.now()
    for run_id, until in (("gone-1", now - timedelta(seconds=2)), ("gone-2", now - timedelta(seconds=1)),
                          ("held", now + timedelta(seconds=30))):
        Run.objects.create(id=run_id, workflow="w", app_version=VERSION, input={}, started_by="alice",
                           status=RunStatus.RUNNING, created_at=now, updated_at=now, queued_at=now,
                           lease_owner="w:1", lease_until=until)
    passes, takeovers = sample("sanoma_sweep_duration_seconds_count"), sample("sanoma_lease_takeovers_total")
    assert sweep(versions=[VERSION], cluster="sanoma").taken_over == 2
    assert sweep(versions=[VERSION], cluster="sanoma").taken_over == 0  # nothing left to take
    assert sample("sanoma_sweep_duration_seconds_count") - passes == 2
    assert sample("sanoma_lease_takeovers_total") - takeovers == 2
