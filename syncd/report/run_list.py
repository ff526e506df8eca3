"""``syncd reports list`` on a terminal: one row per run, newest first (a rich table)."""

from __future__ import annotations

import time
from collections.abc import Sequence

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


def run_table(lines: Sequence[RunLine]) -> Table:
    """``syncd reports list``: one row per run, newest first.

    On a narrow terminal only trigger, mode, read and duration give up width: the id,
    start, outcome and counts are what the list is read for.
    """
    table = Table(
        box=box.SIMPLE_HEAD,
        show_edge=False,
        padding=(0, 0),  # the box's blank column divider is the one space between columns
        caption="counts: done, or planned (dim) for dry runs and blocked runs",
        caption_justify="left",
    )
    rows = [_table_cells(line) for line in lines]
    widths = [max((len(r[n].plain) for r in rows), default=0) for n in range(len(LIST_HEADERS))]
    for n, name in enumerate(LIST_HEADERS):
        keep = name not in ("trigger", "mode", "read", "took")
        table.add_column(
            name,
            no_wrap=True,
            justify="left" if name in LEFT_ALIGNED else "right",
            min_width=max(widths[n], len(name)) if keep else None,
        )
    for row in rows:
        table.add_row(*row)
    return table


LIST_HEADERS = (
    "id",
    "started",
    "trigger",
    "mode",
    "read",
    "outcome",
    "exit",
    "took",
    *LIST_COLUMNS,
    "failed",
    "rejected",
)
LEFT_ALIGNED = ("started", "trigger", "mode", "read", "outcome")


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
        *counts,
        Text(str(t.failed), style="red" if t.failed else ""),
        Text(str(line.rejected), style="yellow" if line.rejected else ""),
    ]
