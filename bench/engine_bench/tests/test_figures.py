"""The bench's figure helpers: percentiles, alternating pairs' ratios, aims' verdicts, CPU from /proc."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import pytest

from engine_bench.figures import (
    CLOCK_TICKS,
    Aim,
    aim_lines,
    cpu_between,
    p95,
    paired_ratio,
    parse_stat_cpu,
    percentile,
    process_cpu,
    processes_cpu,
)


def test_p95_is_the_nearest_rank() -> None:
    values = list(range(1, 21))  # 20 values: p95 is the 19th
    assert p95(values) == 19
    assert p95(list(reversed(values))) == 19
    assert p95([7.0]) == 7.0
    assert percentile(list(range(1, 101)), 0.5) == 50
    assert percentile([3, 1, 2], 1.0) == 3


def test_percentile_refuses_nothing_and_bad_fractions() -> None:
    with pytest.raises(ValueError):
        p95([])
    with pytest.raises(ValueError):
        percentile([1.0], 0)
    with pytest.raises(ValueError):
        percentile([1.0], 1.5)


def test_paired_ratio_is_the_median_of_each_pairs_ratio() -> None:
    # The reference drifts from 1 to 3 between rounds; each pair's ratio is 2 except one outlier.
    assert paired_ratio([2.0, 6.0, 4.0, 100.0, 4.4], [1.0, 3.0, 2.0, 10.0, 2.0]) == 2.0
    # Not the ratio of medians (which a drifting reference skews): median(num)/median(den) = 1.
    assert paired_ratio([2.0, 3.0, 12.0], [1.0, 3.0, 4.0]) == 2.0


def test_paired_ratio_needs_pairs() -> None:
    with pytest.raises(ValueError):
        paired_ratio([1.0, 2.0], [1.0])
    with pytest.raises(ValueError):
        paired_ratio([], [])


def test_aims_say_met_missed_or_not_measured() -> None:
    at_most = Aim("step / bare insert", 1.4, 1.5, True, "1.40x", "x")
    over = Aim("step / bare insert", 1.6, 1.5, True, "1.60x", "x")
    edge = Aim("step / bare insert", 1.5, 1.5, True, "1.50x", "x")
    at_least = Aim("workers / DBOS", 3.9, 4, False, "3.90x", "x")
    enough = Aim("workers / DBOS", 4.2, 4, False, "4.20x", "x")
    missing = Aim("workers / DBOS", None, 4, False, "not measured", "x")
    nan = Aim("workers / DBOS", math.nan, 4, False, "nan", "x")
    assert [a.verdict for a in (at_most, over, edge, at_least, enough, missing, nan)] == [
        "MET", "MISSED", "MET", "MISSED", "MET", "n/a", "n/a"]
    assert at_most.wanted == "<= 1.5x" and at_least.wanted == ">= 4x"


def test_aim_lines_align_names_and_print_verdict_figure_and_bound() -> None:
    lines = aim_lines([Aim("short", 1.0, 2.0, True, "1.00 ms", " ms"),
                       Aim("a much longer name", 5.0, 2.0, True, "5.00 ms", " ms")])
    assert lines == [
        "aim: short               MET    1.00 ms  (aim <= 2 ms)",
        "aim: a much longer name  MISSED 5.00 ms  (aim <= 2 ms)",
    ]


def test_parse_stat_cpu_counts_after_a_name_with_spaces_and_parentheses() -> None:
    # pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    stat = f"123 (qcluster (worker) 1) S 1 123 123 0 -1 4194560 10 0 0 0 {3 * CLOCK_TICKS} {CLOCK_TICKS} 0 0 20"
    assert parse_stat_cpu(stat) == 4.0


def test_this_process_cpu_grows_and_a_gone_process_is_none(tmp_path: Path) -> None:
    before = process_cpu(os.getpid())
    assert before is not None
    ends = time.process_time() + 0.05
    while time.process_time() < ends:
        pass
    after = process_cpu(os.getpid())
    assert after is not None and after >= before
    assert process_cpu(0, proc=tmp_path) is None  # no such /proc entry
    assert processes_cpu([os.getpid(), -1]).keys() == {os.getpid()}


def test_cpu_between_counts_new_processes_whole_and_drops_ended_ones() -> None:
    assert cpu_between({1: 2.0, 2: 5.0}, {1: 3.5, 3: 0.25}) == {1: 1.5, 3: 0.25}
