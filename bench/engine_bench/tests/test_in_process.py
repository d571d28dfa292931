"""bench/engine.py's (a)/(b): the bare insert is measured once a round, alternating with the
round's steps (before them in even rounds, after them in odd ones), and the ratios are the
median of each round's own."""
from __future__ import annotations

import pytest

from engine_bench.common import BENCH_ROOT, VERSION
from engine_bench.in_process import in_process
from runs.models import Run, RunStatus

pytestmark = pytest.mark.django_db


def test_the_reference_alternates_with_the_rounds_and_ratios_are_paired() -> None:
    from runs.config.registry import set_config
    from runs.config.resolution import load_config
    from runs.testing import make_user

    config = load_config(BENCH_ROOT, fakes="instance", app_version=VERSION)
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])
    finished_when_called: list[int] = []
    references = iter([1.0, 1e-9, 1.0])  # seconds per row: round 1's is tiny, so its ratio is huge

    def reference() -> float:
        finished_when_called.append(Run.objects.filter(status=RunStatus.FINISHED, id__startswith="b").count())
        return next(references)

    found = in_process(config, 2, 1, 3, None, reference=reference)
    # Each round finishes 2 full and 2 empty runs: round 0's reference comes before its runs,
    # round 1's after its runs, round 2's before its runs.
    assert finished_when_called == [0, 8, 8]
    assert found["reference"] == [1.0, 1e-9, 1.0]
    # The median of the three pairs is one of the two rounds with a 1 s reference: that round's
    # per_step / 1 s, within the rounds' range; the absurd pair (per_step / 1 ns) is not it.
    fastest, slowest = found["range"]
    assert fastest <= found["ratio"] <= slowest
    assert found["cpu"] > 0


def test_without_a_reference_there_is_no_ratio() -> None:
    from runs.config.registry import set_config
    from runs.config.resolution import load_config
    from runs.testing import make_user

    config = load_config(BENCH_ROOT, fakes="instance", app_version=VERSION)
    set_config(config)
    make_user("bench", perms=["runs.start_workflow"])
    found = in_process(config, 1, 1, 1, None)
    assert found["reference"] == [] and found["ratio"] != found["ratio"]  # nan
