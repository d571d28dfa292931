"""What the bench scripts share to turn measures into figures: percentiles, ratios of alternating
pairs, an aim's verdict (MET / MISSED / n/a), and the CPU a process (or a group of them) has spent,
read from /proc. Pure functions: the tests in `engine_bench/tests/` check them without a database."""
from __future__ import annotations

import math
import os
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path


def percentile(values: Sequence[float], fraction: float) -> float:
    """The nearest-rank percentile (0 < fraction <= 1): the smallest value with at least that
    fraction of the values at or below it. p95 of 20 values is the 19th smallest."""
    if not values:
        raise ValueError("no values")
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1]: {fraction}")
    ordered = sorted(values)
    return ordered[max(0, math.ceil(fraction * len(ordered)) - 1)]


def p95(values: Sequence[float]) -> float:
    return percentile(values, 0.95)


def paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float:
    """The median of numerator/denominator over pairs measured side by side (round i's figure over
    round i's reference), so a reference that drifts between rounds moves both halves of a pair."""
    if len(numerators) != len(denominators) or not numerators:
        raise ValueError(f"need as many numerators as denominators, at least one: {len(numerators)}, "
                         f"{len(denominators)}")
    return statistics.median(n / d for n, d in zip(numerators, denominators, strict=True))


@dataclass(frozen=True)
class Aim:
    """One aim of the issue's table: its figure against a bound. `at_most` says which side is good
    (True: the figure must be at most `bound`; False: at least). A figure of None was not measured."""

    name: str
    figure: float | None
    bound: float
    at_most: bool
    shown: str  # the figure as printed, e.g. "1.42x (marginal 1.10x)"
    unit: str = ""  # printed after the bound, e.g. "x", " ms"

    @property
    def met(self) -> bool | None:
        if self.figure is None or math.isnan(self.figure):
            return None
        return self.figure <= self.bound if self.at_most else self.figure >= self.bound

    @property
    def verdict(self) -> str:
        return {None: "n/a", True: "MET", False: "MISSED"}[self.met]

    @property
    def wanted(self) -> str:
        bound = f"{self.bound:g}{self.unit}"
        return f"<= {bound}" if self.at_most else f">= {bound}"


def aim_lines(aims: Iterable[Aim]) -> list[str]:
    """One line per aim: `aim: <name> <MET|MISSED|n/a> <figure> (aim <= bound)`, names aligned."""
    aims = list(aims)
    width = max((len(a.name) for a in aims), default=0)
    return [f"aim: {a.name.ljust(width)}  {a.verdict.ljust(6)} {a.shown}  (aim {a.wanted})" for a in aims]


# ---- CPU spent by processes, from /proc ------------------------------------------------------

CLOCK_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def parse_stat_cpu(stat: str) -> float:
    """User + system CPU seconds from the text of /proc/<pid>/stat. The command name (2nd field,
    in parentheses) may hold spaces, so fields are counted after its last ')'."""
    fields = stat[stat.rindex(")") + 2 :].split()
    # after the name: state(0) ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime(11) stime(12)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def process_cpu(pid: int, proc: Path = Path("/proc")) -> float | None:
    """CPU seconds the live process `pid` has spent so far (user + system), or None when it is gone."""
    try:
        return parse_stat_cpu((proc / str(pid) / "stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def processes_cpu(pids: Iterable[int], proc: Path = Path("/proc")) -> dict[int, float]:
    """CPU seconds of each live process among `pids` (those gone are left out)."""
    found = {}
    for pid in pids:
        spent = process_cpu(pid, proc)
        if spent is not None:
            found[pid] = spent
    return found


def cpu_between(before: dict[int, float], after: dict[int, float]) -> dict[int, float]:
    """CPU each process spent between two readings; a process that appeared meanwhile counts whole
    (it started during the interval), one that ended meanwhile is lost (the caller says so)."""
    return {pid: spent - before.get(pid, 0.0) for pid, spent in after.items()}
