"""The report as CSV: one row per item, with its run's id and start time (ISO 8601 with the
zone), every cell quoted, and cells a spreadsheet would run as a formula neutralised."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict
from typing import Any

from syncd.logs import redact
from syncd.report.value import Item, PersonHistory, RunInfo, RunReport, iso_time

CSV_COLUMNS = (
    "run_id",
    "run_started",
    "seq",
    "kind",
    "key",
    "display",
    "action",
    "outcome",
    "status",
    "error",
    "message",
    "before",
    "after",
)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def neutralise(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula (OWASP: prefix a single quote)."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def csv_rows(items: Iterable[tuple[RunInfo, Item]]) -> Iterator[list[str]]:
    yield list(CSV_COLUMNS)
    for run, item in items:
        values: dict[str, Any] = {
            **asdict(item),
            "run_id": run.id,
            "run_started": iso_time(run.started_at),
            "before": _compact(item.before),
            "after": _compact(item.after),
        }
        yield [neutralise(redact(_cell(values[c]))) for c in CSV_COLUMNS]


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _compact(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _write(rows: Iterator[list[str]]) -> str:
    buffer = io.StringIO()
    # Every cell quoted: the final redaction pass can then never run across a delimiter.
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)
    writer.writerows(rows)
    return redact(buffer.getvalue())


def render_csv(report: RunReport) -> str:
    return _write(csv_rows((report.run, item) for item in report.items))


def render_person_csv(history: PersonHistory) -> str:
    return _write(csv_rows((e.run, e.item) for e in history.events))
