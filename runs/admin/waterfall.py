"""A run's steps on one time axis: each step a bar from when it began to when it ended, under one
another, so what ran when, and what the run waited for and how long, reads at a glance.

Idle time is compressed: a stretch longer than `GAP_MS` in which no step begins or ends is drawn
as a short break labelled with its length ("… 3 d 2 h …"), so a run that waited three days for an
approval still shows its calls, which took milliseconds. A bar crossing a break (the approval
waited for) is drawn through it.

Consecutive calls of one operation (a drift of 21 imports) are one line with their count, spanning
the first to the last; the line opens to the calls themselves.

Positions are percentages of the axis, for the template's inline `left`/`width`; the page's live
refresh redraws them, and an open bar (a wait not over) reaches to the moment of the read. A
message the run waits for now is such an open bar, as an approval not yet decided is: the ledger
has no record of it until the message is read, so `open_message_wait` reads it from the wait's own
step for `run_time(records, waiting=...)`.
"""
from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass, field

from runs.display import duration, moment
from runs.engine import clock
from runs.models import Run, RunStatus, Step, StepKind
from runs.timing import OpenWait, RunTime, StepTime

GAP_MS = 60_000  # a stretch with nothing beginning or ending longer than this is drawn compressed
GAP_SHARE = 8.0  # the percentage of the axis one compressed stretch takes
GAPS_SHARE = 40.0  # at most, all compressed stretches together
MIN_WIDTH = 0.6  # a bar is at least this wide (a 3 ms call still shows)
FOLD_AT = 2  # this many consecutive calls of one operation are one line


@dataclass
class Bar:
    label: str
    kind: str
    outcome: str
    left: float
    width: float
    took: str  # "850 ms", "3 d 2 h", "3 d 2 h so far"
    began: str
    detail: str = ""
    effect: str = ""
    open: bool = False  # not over yet
    count: int = 1  # a folded line: how many calls
    calls: list[Bar] = field(default_factory=list)  # a folded line's calls

    @property
    def style(self) -> str:
        return f"left: {self.left:.2f}%; width: {self.width:.2f}%"


@dataclass
class Gap:
    left: float
    width: float
    label: str  # "… 3 d 2 h …"

    @property
    def style(self) -> str:
        return f"left: {self.left:.2f}%; width: {self.width:.2f}%"


@dataclass
class Waterfall:
    bars: list[Bar]
    gaps: list[Gap]
    began: str
    ended: str  # the end's moment, or "now" while the run goes on
    took: str


class Axis:
    """Time (epoch ms) to a percentage of the axis, stretches with nothing happening compressed."""

    def __init__(self, start: int, end: int, moments: list[int]) -> None:
        points = sorted({start, end, *(min(max(m, start), end) for m in moments)})
        spans = list(zip(points, points[1:], strict=False))
        long = [(a, b) for a, b in spans if b - a > GAP_MS]
        linear = sum(b - a for a, b in spans if b - a <= GAP_MS)
        gap_share = 0.0
        if long:
            gap_share = 100.0 / len(long) if linear == 0 else min(GAP_SHARE, GAPS_SHARE / len(long))
        scale = (100.0 - gap_share * len(long)) / linear if linear else 0.0
        self.starts: list[int] = []
        self.segments: list[tuple[int, int, float, float]] = []  # (from, to, x from, x to)
        self.gaps: list[Gap] = []
        x = 0.0
        for a, b in spans:
            width = gap_share if b - a > GAP_MS else (b - a) * scale
            self.starts.append(a)
            self.segments.append((a, b, x, x + width))
            if b - a > GAP_MS:
                self.gaps.append(Gap(x, width, f"… {duration(b - a)} …"))
            x += width

    def at(self, ms: int) -> float:
        if not self.segments:
            return 0.0
        index = max(0, bisect_right(self.starts, ms) - 1)
        a, b, x_a, x_b = self.segments[index]
        if ms >= b:
            return x_b
        if ms <= a:
            return x_a
        return x_a + (ms - a) / (b - a) * (x_b - x_a)


def _label(step: StepTime) -> tuple[str, str]:
    """What the line says, and a detail."""
    if step.kind == "call":
        detail = ", ".join(x for x in (step.verdict if step.verdict not in ("", "allow") else "",
                                       f"attempt {step.attempts}" if step.attempts > 1 else "",
                                       "; ".join(step.approvers),
                                       f"{step.error.get('code') or 'error'}: {step.error.get('message', '')}"
                                       if step.error else "") if x)
        return step.name, detail
    if step.kind == "approval":
        held = step.input.get("op") if isinstance(step.input, dict) else ""
        return f"waits for approval: {step.name}", "; ".join([*step.approvers, *([f"holds {held}"] if held else [])])
    if step.kind == "sleep":
        return "sleeps", ""
    if step.kind == "message":
        return f"waits for a message on “{step.name}”", "; ".join(step.approvers)
    if step.kind == "child":
        return f"child run of {step.name}", ""
    if step.kind == "tag":
        tags = step.input if isinstance(step.input, dict) else {}
        return "tagged", ", ".join(f"{k}={v}" for k, v in tags.items())
    return step.name, "; ".join(step.approvers)


def _bar(step: StepTime, axis: Axis, now_ms: int) -> Bar:
    end = step.end_ms if step.end_ms is not None else now_ms
    left = axis.at(step.start_ms)
    width = max(MIN_WIDTH, axis.at(end) - left)
    left = min(left, 100.0 - MIN_WIDTH)
    took = duration(max(0, end - step.start_ms))
    label, detail = _label(step)
    if step.group:
        detail = ", ".join(x for x in (step.group, detail) if x)
    return Bar(label, step.kind, step.outcome, left, min(width, 100.0 - left),
               took if step.end_ms is not None else f"{took} so far", moment(step.start_ms, ago=False),
               detail=detail, effect=step.effect, open=step.end_ms is None)


def _folded(bars: list[tuple[StepTime, Bar]]) -> Bar:
    """Consecutive calls of one operation as one line: their span, their count, their outcomes."""
    first = bars[0][1]
    outcomes: dict[str, int] = {}
    for _, bar in bars:
        outcomes[bar.outcome] = outcomes.get(bar.outcome, 0) + 1
    right = max(bar.left + bar.width for _, bar in bars)
    start = bars[0][0].start_ms
    ends = [step.end_ms for step, _ in bars]
    end = max(e for e in ends if e is not None) if any(e is not None for e in ends) else start
    outcome = "failed" if "failed" in outcomes else "denied" if "denied" in outcomes else first.outcome
    return Bar(first.label, "call", outcome, first.left, right - first.left, duration(max(0, end - start)),
               first.began, detail=", ".join(f"{n} {o}" for o, n in outcomes.items()), effect=first.effect,
               open=any(bar.open for _, bar in bars), count=len(bars), calls=[bar for _, bar in bars])


def fold(pairs: list[tuple[StepTime, Bar]]) -> list[Bar]:
    """Runs of `FOLD_AT` or more consecutive calls of one operation (not held for an approval, in
    the same lane) become one line."""
    out: list[Bar] = []
    index = 0
    while index < len(pairs):
        step = pairs[index][0]
        end = index + 1
        if step.kind == "call" and not step.held:
            while end < len(pairs):
                other = pairs[end][0]
                if other.kind != "call" or other.held or (other.name, other.group) != (step.name, step.group):
                    break
                end += 1
        if end - index >= FOLD_AT:
            out.append(_folded(pairs[index:end]))
        else:
            out.extend(bar for _, bar in pairs[index:end])
        index = end
    return out


def open_message_wait(run: Run) -> OpenWait | None:
    """The message `run` waits for now (its topic, from the wait's step), or None."""
    if run.status != RunStatus.WAITING or run.waiting_for != "message":
        return None
    began = Step.objects.filter(run=run, kind=StepKind.WAIT).order_by("-seq").first()
    if began is None:
        return None
    return OpenWait(began.name, began.seq, clock.to_ms(began.created_at))


def waterfall(timeline: RunTime, *, now_ms: int) -> Waterfall | None:
    """The waterfall of a run's steps; None for a run with nothing recorded yet."""
    if timeline.start_ms is None:
        return None
    start = timeline.start_ms
    end = max(start, timeline.end_ms if timeline.end_ms is not None else now_ms)
    moments = [m for step in timeline.steps for m in (step.start_ms, step.end_ms if step.end_ms is not None else end)]
    axis = Axis(start, end, moments)
    pairs = [(step, _bar(step, axis, end)) for step in timeline.steps]
    return Waterfall(fold(pairs), axis.gaps, moment(start, ago=False),
                     moment(timeline.end_ms, ago=False) if timeline.end_ms is not None else "now",
                     duration(end - start) if timeline.end_ms is not None else f"{duration(end - start)} so far")
