"""Run reports: one value built from plain data (``value``), rendered as text, JSON, CSV or
HTML, one renderer per module. Pure: no database, HTTP or LDAP here (``syncd.run.runs`` loads
the rows). Every value is redacted before it is shown, and every rendered page once more.
"""

from __future__ import annotations

from collections.abc import Callable

from syncd.plan import Note
from syncd.report.csv import CSV_COLUMNS, FORMULA_STARTS, neutralise, render_csv, render_person_csv
from syncd.report.json import render_json, render_person_json, render_run_list_json
from syncd.report.notification import (
    NOTIFY_LINE,
    email_body,
    email_subject,
    render_notification,
    webhook_payload,
)
from syncd.report.run_list import run_table
from syncd.report.text import render_person_text, render_text
from syncd.report.value import (
    ACTIONS,
    LIST_COLUMNS,
    PROBLEM_OUTCOMES,
    Count,
    Guard,
    HistoryPoint,
    Item,
    PersonEvent,
    PersonHistory,
    Rejected,
    RunInfo,
    RunLine,
    RunReport,
    Totals,
    build_report,
    history_point,
    person_history,
    run_info,
    totals,
)
from syncd.report.wording import SYMBOLS, UNSAFE, printable, shown


def render_html(report: RunReport) -> str:
    """The report as one self-contained page (Jinja2 is loaded only when a page is made)."""
    from syncd.report.html import render_html as page

    return page(report)


RENDERERS: dict[str, Callable[[RunReport], str]] = {
    "text": render_text,
    "json": render_json,
    "csv": render_csv,
    "html": render_html,
}
PERSON_RENDERERS: dict[str, Callable[[PersonHistory], str]] = {
    "text": render_person_text,
    "json": render_person_json,
    "csv": render_person_csv,
}


def render(report: RunReport, fmt: str, limit: int | None = None) -> str:
    """The report in one of ``RENDERERS``' formats (KeyError for any other); the text lists
    up to ``limit`` changes of each action and rejected rows (None: all)."""
    if fmt == "text":
        return render_text(report, limit)
    return RENDERERS[fmt](report)


__all__ = [
    "ACTIONS",
    "CSV_COLUMNS",
    "FORMULA_STARTS",
    "LIST_COLUMNS",
    "NOTIFY_LINE",
    "PERSON_RENDERERS",
    "PROBLEM_OUTCOMES",
    "RENDERERS",
    "SYMBOLS",
    "UNSAFE",
    "Count",
    "Guard",
    "HistoryPoint",
    "Item",
    "Note",
    "PersonEvent",
    "PersonHistory",
    "Rejected",
    "RunInfo",
    "RunLine",
    "RunReport",
    "Totals",
    "build_report",
    "email_body",
    "email_subject",
    "history_point",
    "neutralise",
    "person_history",
    "printable",
    "render",
    "render_csv",
    "render_html",
    "render_json",
    "render_notification",
    "render_person_csv",
    "render_person_json",
    "render_person_text",
    "render_run_list_json",
    "run_info",
    "run_table",
    "shown",
    "totals",
    "webhook_payload",
]
