"""bench/scale.py's claim phase, in this process on the test database: every claim of the bench's
own `claimed` runs is timed inside the engine's advance, the worker's backlog is kept, and the
engine's `claim` is itself again afterwards. (The worker series and the long transaction need real
processes and PostgreSQL: bench/scale.py is run to show them.)"""
from __future__ import annotations

from pathlib import Path

import pytest

from engine_bench.common import BENCH_ROOT, VERSION
from engine_bench.long_read import claim_config, dead_tuples, run_phase
from runs.engine import advance as advancing
from runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db


@pytest.fixture
def configs(tmp_path: Path) -> tuple[object, object]:
    from runs.config.registry import set_config
    from runs.config.resolution import load_config
    from runs.testing import make_user

    config = load_config(BENCH_ROOT, fakes="instance", app_version=VERSION)
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])
    return config, claim_config(config, tmp_path)


def test_claimed_is_a_version_no_bench_worker_owns(configs: tuple[object, object]) -> None:
    feed, mine = configs
    assert "claimed" in mine.workflows and "claimed" not in feed.workflows  # type: ignore[attr-defined]
    assert mine.workflow_versions["claimed"] not in feed.owned_versions  # type: ignore[attr-defined]


def test_a_phase_times_each_claim_and_keeps_the_backlog(configs: tuple[object, object]) -> None:
    feed, mine = configs
    original = advancing.claim
    phase = run_phase("probe", 0.5, mine, feed, "t-", backlog=5)
    assert advancing.claim is original
    claimed = Run.objects.filter(id__startswith="t-mine-")
    assert len(phase.claims) == len(phase.dequeues) == claimed.count() >= 1
    assert set(claimed.values_list("status", flat=True)) == {RunStatus.FINISHED}
    assert all(0 < seconds < 5 for seconds in phase.claims + phase.dequeues)
    # No worker here: the fed runs stay queued, fed 20 at a time while fewer than 5 were queued.
    assert phase.fed == 20 == Run.objects.filter(workflow="steps", id__startswith="t-",
                                                 status=RunStatus.QUEUED).count()
    assert "claims, p50" in phase.line()
    from django.db import connection

    dead = dead_tuples()
    if connection.vendor == "postgresql":
        assert set(dead) == {"django_q_ormq", "runs_run", "runs_step"}
    else:
        assert dead == {}  # PostgreSQL's statistics only
