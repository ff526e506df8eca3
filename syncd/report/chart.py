"""The history chart's geometry: runs on a time axis, bar heights on a log scale, each run's
outcome as a coloured marker, dry runs in a band of their own. Drawn by the HTML template.

A log scale lets a 50-item run stand next to a 100,000-item first sync. Nothing is stacked
on it (20 failures on top of 20,167 creates would be a pixel): a run's actions and its
failures stand side by side, each as tall as its own count. A run whose counts were only
planned (a guard blocked it) is drawn in outline; a dry run is its outcome's mark in the
band below the dates, sized by what it planned.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from syncd.report.value import ACTIONS, HistoryPoint
from syncd.report.wording import when

SERIES = (*ACTIONS, "failed")
WIDTH = 720
LEFT, RIGHT = 60, 12
MARKS = 14  # the outcome markers' row, above the plot
TOP = MARKS + 12
PLOT_H = 150
AXIS = TOP + PLOT_H
DRY_TOP = AXIS + 26  # the dry runs' band, below the dates
DRY_H = 22
HEIGHT = DRY_TOP + DRY_H + 6
MAX_BAR = 16
LABEL_GAP = 64  # pixels between two date labels (the first one is a full date)
# Each outcome's marker: the shape, and the class that colours it.
MARKERS = {
    "ok": "circle",
    "partial": "triangle",
    "interrupted": "triangle",
    "failed": "cross",
    "blocked": "square",
    "running": "ring",
}


@dataclass(frozen=True)
class Segment:
    """One action's (or the failures') column within a run's bar."""

    series: str
    x: float  # the column's left edge
    y: float
    width: float
    height: float
    count: int


@dataclass(frozen=True)
class Bar:
    run_id: int
    x: float  # the bar's centre
    width: float
    segments: tuple[Segment, ...]
    outcome: str
    marker: str
    title: str
    current: bool
    dry: bool
    planned: bool = False  # counts planned, not done (a blocked run): drawn in outline
    radius: float = 0.0  # dry runs: the outcome's mark, sized on the same log scale


@dataclass(frozen=True)
class Tick:
    position: float
    label: str


@dataclass(frozen=True)
class Chart:
    bars: tuple[Bar, ...]
    y_ticks: tuple[Tick, ...]
    x_ticks: tuple[Tick, ...]
    top: int
    runs: int
    dry_runs: int
    width: int = WIDTH
    height: int = HEIGHT
    left: int = LEFT
    marks: int = MARKS
    plot_top: int = TOP
    axis: int = AXIS
    dry_top: int = DRY_TOP
    dry_height: int = DRY_H


def history_chart(points: Sequence[HistoryPoint], current: int | None = None) -> Chart:
    ordered = sorted(points, key=lambda p: (p.started_at, p.run_id))
    top = _scale_top(max((p.total for p in ordered), default=0))
    xs, width = _positions([p.started_at for p in ordered])
    bars = tuple(
        _bar(p, x, width, top, p.run_id == current) for p, x in zip(ordered, xs, strict=True)
    )
    dry = sum(1 for b in bars if b.dry)
    return Chart(bars, _y_ticks(top), _x_ticks(ordered, xs), top, len(bars) - dry, dry)


def _scale_top(largest: int) -> int:
    """The scale's top: the power of ten at or above the largest run (at least 10)."""
    return int(10 ** max(1, math.ceil(math.log10(max(largest, 1)))))


def _log_share(n: int, top: int) -> float:
    return math.log10(1 + n) / math.log10(1 + top)


def _positions(times: Sequence[int]) -> tuple[list[float], float]:
    """Each run's x on the time axis, and the bar width; runs too close are nudged apart,
    keeping their order, so none hides another."""
    n = len(times)
    lo, hi = LEFT + MAX_BAR / 2 + 2, WIDTH - RIGHT - MAX_BAR / 2
    if n == 0:
        return [], MAX_BAR
    span = (times[-1] - times[0]) or 1
    xs = [lo + (t - times[0]) / span * (hi - lo) if n > 1 else (lo + hi) / 2 for t in times]
    gap = min(MAX_BAR + 3, (hi - lo) / max(n - 1, 1))
    for i in range(1, n):
        xs[i] = max(xs[i], xs[i - 1] + gap)
    if xs[-1] > hi:
        xs[-1] = hi
        for i in range(n - 2, -1, -1):
            xs[i] = min(xs[i], xs[i + 1] - gap)
    return xs, max(2.0, min(MAX_BAR, gap - 3))


def _bar(point: HistoryPoint, x: float, width: float, top: int, current: bool) -> Bar:
    dry = point.mode == "dry_run"
    values = [(s, point.failed if s == "failed" else point.by_action.get(s, 0)) for s in SERIES]
    values = [(s, v) for s, v in values if v]
    share = _log_share(sum(v for _, v in values), top)
    segments = []
    if not dry and values:
        column = width / len(values)
        for n, (series, value) in enumerate(values):
            size = max(1.0, _log_share(value, top) * PLOT_H)
            left = x - width / 2 + n * column
            segments.append(
                Segment(
                    series,
                    round(left, 1),
                    round(AXIS - size, 1),
                    round(column, 1),
                    round(size, 1),
                    value,
                )
            )
    return Bar(
        run_id=point.run_id,
        x=round(x, 1),
        width=round(width, 1),
        segments=tuple(segments),
        outcome=point.outcome,
        marker=MARKERS.get(point.outcome, "ring"),
        title=bar_title(point),
        current=current,
        dry=dry,
        planned=not dry and not point.applied,
        radius=round(2 + 5 * share, 1) if dry else 0.0,
    )


def bar_title(point: HistoryPoint) -> str:
    parts = [f"{point.by_action[a]:,} {a}" for a in ACTIONS if point.by_action.get(a)]
    if point.failed:
        parts.append(f"{point.failed:,} failed")
    planned = "" if point.applied else " (planned, not applied)"
    counts = ", ".join(parts) or "no changes"
    kind = "dry run" if point.mode == "dry_run" else "run"
    return f"{kind} {point.run_id}, {when(point.started_at)}, {point.outcome}: {counts}{planned}"


def _y_ticks(top: int) -> tuple[Tick, ...]:
    ticks = []
    n = 1
    while n <= top:
        y = AXIS - _log_share(n, top) * PLOT_H
        ticks.append(Tick(round(y, 1), _short_number(n)))
        n *= 10
    return tuple(ticks)  # no "0": the axis is the baseline, and 1 sits just above it


def _short_number(n: int) -> str:
    for size, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= size:
            return f"{n // size}{suffix}"
    return str(n)


def _x_ticks(points: Sequence[HistoryPoint], xs: Sequence[float]) -> tuple[Tick, ...]:
    """Dates under the runs where the day changes (times of day, when all are on one day)."""
    if not points:
        return ()
    days = {_day(p.started_at) for p in points}
    ticks: list[Tick] = []
    last_day = ""
    for point, x in zip(points, xs, strict=True):
        day = _day(point.started_at)
        if len(days) > 1 and day == last_day:
            continue
        if ticks and x - ticks[-1].position < LABEL_GAP:
            continue
        stamp = time.localtime(point.started_at / 1000)
        label = day if not ticks else time.strftime("%H:%M" if len(days) == 1 else "%m-%d", stamp)
        if ticks and label == ticks[-1].label:  # runs in the same minute: one label says it
            continue
        ticks.append(Tick(x, label))
        last_day = day
    return tuple(ticks)


def _day(ms: int) -> str:
    return time.strftime("%Y-%m-%d", time.localtime(ms / 1000))
