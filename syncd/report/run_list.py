"""``syncd reports list`` on a terminal: one row per run, newest first (a rich table)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

from rich import box
from rich.table import Table
from rich.text import Text

from syncd.report.value import LIST_COLUMNS, RunLine
from syncd.report.wording import duration, printable


def list_time(ms: int | None) -> str:
    """``2026-11-23 14:10+0100``: to the minute, with the zone, in as few columns as that takes."""
    if not ms:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M%z", time.localtime(ms / 1000))


OUTCOME_STYLES = {
    "ok": "green",
    "partial": "yellow",
    "interrupted": "yellow",
    "failed": "red",
    "blocked": "red",
    "running": "cyan",
}


def run_table(lines: Sequence[RunLine], width: int | None = None) -> Table:
    """``syncd reports list``: one row per run, newest first.

    Columns are never squeezed: on a terminal narrower than the whole table (``width``),
    the least needed ones are left out whole, and the caption names them. The id, start,
    mode, outcome and counts are what the list is read for.
    """
    rows = [_table_cells(line) for line in lines]
    widths = [
        max([len(name), *(len(r[n].plain) for r in rows)]) for n, name in enumerate(LIST_HEADERS)
    ]
    shown = _fitting(widths, width)
    caption = "counts: done, or planned and not done (dry runs and blocked runs)"
    left_out = [name for n, name in enumerate(LIST_HEADERS) if n not in shown]
    if left_out:
        caption += f"; too narrow for: {', '.join(left_out)} (--output json has all)"
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0),  # the box's blank column divider is the one space between columns
        caption=caption,
        caption_justify="left",
    )
    for n in shown:
        name = LIST_HEADERS[n]
        justify: Literal["left", "right"] = "left" if name in LEFT_ALIGNED else "right"
        table.add_column(name, no_wrap=True, justify=justify, min_width=widths[n])
    for row in rows:
        table.add_row(*(row[n] for n in shown))
    return table


def _fitting(widths: Sequence[int], width: int | None) -> list[int]:
    """The columns to show, in their order: by ``PRIORITY`` while they fit in ``width``."""
    if width is None or sum(w + 1 for w in widths) <= width:
        return list(range(len(widths)))
    chosen: set[int] = set()
    used = 0
    for name in PRIORITY:
        n = LIST_HEADERS.index(name)
        if used + widths[n] + 1 <= width:
            chosen.add(n)
            used += widths[n] + 1
    return sorted(chosen)


LIST_HEADERS = (
    "id",
    "started",
    "trigger",
    "mode",
    "read",
    "outcome",
    "exit",
    "took",
    "counts",
    *LIST_COLUMNS,
    "failed",
    "rejected",
)
LEFT_ALIGNED = ("started", "trigger", "mode", "read", "outcome")
# What a narrow terminal keeps first: what a run is, then what it took away from people
# (locks, removals, deletions: the counts an admin checks first), its failures, then the rest.
PRIORITY = (
    "id",
    "started",
    "mode",
    "outcome",
    "locked",
    "removed",
    "deleted",
    "failed",
    "counts",
    "created",
    "updated",
    "exit",
    "rejected",
    "took",
    "read",
    "trigger",
)


def _table_cells(line: RunLine) -> list[Text]:
    run, t = line.run, line.totals
    style = "" if t.applied else "dim"
    counts = [Text(str(t.column(c)), style=style) for c in LIST_COLUMNS]
    return [
        Text(str(run.id)),
        Text(list_time(run.started_at)),
        Text(printable(run.trigger)),
        Text(printable(run.mode)),
        Text(printable(run.read)),
        Text(printable(run.outcome), style=OUTCOME_STYLES.get(run.outcome, "")),
        Text("" if run.exit_code is None else str(run.exit_code)),
        Text(duration(run.duration_ms)),
        Text("done" if t.applied else "planned", style=style),
        *counts,
        Text(str(t.failed), style="red" if t.failed else ""),
        Text(str(line.rejected), style="yellow" if line.rejected else ""),
    ]
