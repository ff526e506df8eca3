"""The report as one self-contained web page, built from Jinja2 templates (autoescaped).

A page must stay small and quick at 100,000 changes: the summary, the failures grouped by
reason and the first rows of each group of changes are HTML; every change is also in one
compact JSON block that a small script (allowed by its hash in the page's
Content-Security-Policy, nothing else may load or run) searches and pages through. With
scripts off the page still shows all of the above, and names the command that lists the rest.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

import jinja2
from markupsafe import Markup

from syncd.logs import redact
from syncd.report.chart import SERIES, history_chart
from syncd.report.value import HistoryPoint, Item, RunReport
from syncd.report.wording import (
    EXAMPLES,
    count_lines,
    detail_lines,
    duration,
    failed_record,
    field_value,
    guard_message,
    item_state,
    outcome_line,
    platform_line,
    position_parts,
    readable,
    shown,
    source_line,
    steps_line,
    totals_line,
    when,
)

SHOWN = 20  # rows of each group of changes shown at first
FOLDED = 180  # more rows of each group, folded (in the page even with scripts off)
# Bytes a page may take, however many changes: the search data gets what the rest leaves.
PAGE_BUDGET = 4_900_000


@dataclass(frozen=True)
class Row:
    display: str
    name: str
    lines: tuple[tuple[str, str | None, str], ...]  # field, before (None: not shown), after
    state: str
    failed: bool


@dataclass(frozen=True)
class Group:
    """The changes of one action on one kind of record: ``create employee (100000)``."""

    index: int
    action: str
    kind: str
    items: tuple[Item, ...] = field(repr=False)
    rows: tuple[Row, ...]  # the first SHOWN + FOLDED, as HTML

    @property
    def count(self) -> int:
        return len(self.items)

    @property
    def shown(self) -> tuple[Row, ...]:
        return self.rows[:SHOWN]

    @property
    def folded(self) -> tuple[Row, ...]:
        return self.rows[SHOWN:]

    @property
    def rest(self) -> int:
        return self.count - len(self.rows)


def _finalize(value: Any) -> Any:
    """Every value a template prints: redacted and made visible, then escaped by Jinja."""
    if isinstance(value, Markup):
        return value
    return shown(value)


@cache
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("syncd.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # Compact, and non-ASCII kept as it is: the data block is most of a large page.
    env.filters["guard_message"] = guard_message
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    return env


@cache
def _asset(name: str) -> tuple[Markup, str]:
    """A static file of the page (its style sheet, its script) and its CSP hash source."""
    text = resources.files("syncd.report").joinpath("templates", name).read_text("utf-8")
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")
    return Markup(text), f"'sha256-{digest}'"  # noqa: S704 - our own file, not a value


def render_html(report: RunReport) -> str:
    css, style_hash = _asset("report.css")
    script, script_hash = _asset("report.js")
    groups = change_groups(report)
    changes = sum(g.count for g in groups)
    template = _environment().get_template("report.html.j2")
    context = {
        "r": report,
        "css": css,
        "script": script,
        "csp": (
            "default-src 'none'; base-uri 'none'; form-action 'none'; "
            f"style-src {style_hash}; script-src {script_hash}"
        ),
        "title": outcome_line(report.run),
        "summary": _summary(report),
        "counts": count_lines(report.counts),
        "failures": _failures(report),
        "groups": groups,
        "changes": changes,
        "chart": history_chart(report.history, report.run.id) if report.history else None,
        "series": SERIES,
        "history": _history_rows(report.history),
    }
    # The page without its search data first: the data may have what that leaves.
    rest = template.render(**context, data={}, held=0)  # its note "holds the first" counted
    data, held = search_data(report, groups, PAGE_BUDGET - len(rest.encode("utf-8")))
    return redact(template.render(**context, data=data, held=held))


def _summary(r: RunReport) -> list[tuple[str, str]]:
    run = r.run
    rows = [
        ("trigger", f"{run.trigger}, mode {run.mode}, {run.read} read"),
        ("source", run.source or "—"),
        ("read", source_line(r.source)),
        ("started", when(run.started_at)),
        ("finished", when(run.finished_at)),
        ("took", duration(run.duration_ms)),
        ("steps", steps_line(r.stats) or "—"),
        ("host", f"{run.host or '—'} (pid {run.pid if run.pid is not None else '—'})"),
        ("result", totals_line(r.totals)),
    ]
    if r.stats.get("calls") is not None:
        rows.append(("platform", platform_line(r.stats)))
    if r.error and not r.blocked_by:
        rows.append(("error", r.error))
    return rows


def _failures(r: RunReport) -> list[dict[str, Any]]:
    return [
        {
            "count": g.count,
            "error": g.error,
            "records": [failed_record(i) for i in g.items[:EXAMPLES]],
            "more": max(0, g.count - EXAMPLES),
        }
        for g in r.failures
    ]


def change_groups(r: RunReport) -> list[Group]:
    """The items by action and kind, in the order changes are applied."""
    grouped: dict[tuple[str, str], list[Item]] = {}
    for action, items in r.by_action():
        for item in items:
            grouped.setdefault((action, item.kind), []).append(item)
    return [
        Group(n, action, kind, tuple(items), tuple(_row(i, r) for i in items[: SHOWN + FOLDED]))
        for n, ((action, kind), items) in enumerate(grouped.items())
    ]


def _row(item: Item, r: RunReport) -> Row:
    lines = tuple(
        (shown(k), None if b is None else shown(b), shown(a))
        for k, b, a in detail_lines(item, readable(r.departments))
    )
    return Row(shown(item.display), _name(item), lines, *_state(item, r))


def search_data(r: RunReport, groups: Sequence[Group], budget: int) -> tuple[dict[str, Any], int]:
    """Every change, compactly, for the page's script; and how many it holds.

    Per group a flat list, four values a change: display, name, detail, state. Details
    and states are indexes into shared tables, since most repeat ("ok"; a department and
    a title), and the strings in details into a table of words, a department's name path
    apart from the title after it. Past ``budget`` bytes the rest is left out, and the
    page says so.
    """
    packer = _Packer(r, budget)
    out = []
    held = 0
    for group in groups:
        flat: list[Any] = []
        for item in group.items:
            row = packer.row(item)
            if row is None:
                break
            flat += row
            held += 1
        out.append({"action": group.action, "kind": group.kind, "rows": flat})
    data = {
        "groups": out,
        "words": list(packer.words),
        "details": list(packer.details),
        "states": [list(s) for s in packer.states],
        "step": 100,
    }
    return data, held


Value = int | tuple[int, ...]  # a word, or positions: (path, notes, path, notes, ...)
Line = tuple[int, Value | None, Value]


class _Packer:
    """Interns the words, details and states of the search data, counting its bytes."""

    def __init__(self, r: RunReport, budget: int) -> None:
        self.report = r
        self.words: dict[str, int] = {}
        self._raw: dict[str, int] = {}  # words by their text before ``shown``: most repeat
        self.details: dict[tuple[Line, ...], int] = {}
        self.states: dict[tuple[str, bool], int] = {}  # (text, failed)
        self.left = budget - 200  # the tables' brackets and keys
        self.full = False

    def row(self, item: Item) -> list[Any] | None:
        """[display, name, detail, state], or None once the budget is spent."""
        if self.full:
            return None
        display = shown(item.display)
        name = _name(item)
        lines = tuple((self.word(k), b, a) for k, b, a in detail_lines(item, self.value))
        detail = self.details.get(lines)
        if detail is None:
            detail = self.details[lines] = len(self.details)
            self.left -= len(json.dumps(lines, separators=(",", ":"))) + 1
        state = _state(item, self.report)
        state_id = self.states.get(state)
        if state_id is None:
            state_id = self.states[state] = len(self.states)
            self.left -= _size([*state]) + 1
        # Exactly what the row adds to the JSON: two strings, two numbers, four commas.
        self.left -= _size(display) + _size(name) + len(str(detail)) + len(str(state_id)) + 4
        if self.left < 0:
            self.full = True
            return None
        return [display, name, detail, state_id]

    def word(self, raw: str) -> int:
        found = self._raw.get(raw)
        if found is None:
            text = shown(raw)
            found = self.words.get(text)
            if found is None:
                found = self.words[text] = len(self.words)
                self.left -= _size(text) + 1
            self._raw[raw] = found
        return found

    def value(self, name: str, value: Any) -> Value:
        departments = self.report.departments
        if name == "positions" and isinstance(value, list) and value:
            parts = position_parts(value, departments)
            return tuple(self.word(t) for part in parts for t in part)
        return self.word(field_value(name, value, departments))


def _size(value: Any) -> int:
    """Bytes of a value in the page's JSON."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def _state(item: Item, r: RunReport) -> tuple[str, bool]:
    """How the item ended, in words, and whether it failed."""
    attempts = f" ({item.attempts} attempts)" if item.attempts > 1 else ""
    return shown((item_state(item, r.run) or "planned") + attempts), item.outcome == "failed"


def _name(item: Item) -> str:
    """The record's name where it adds to its display (a department's path ends with it)."""
    name = item.name or ""
    if name == item.display or item.display.endswith("/" + name):
        return ""
    return shown(name)


def _history_rows(points: Sequence[HistoryPoint]) -> list[dict[str, Any]]:
    return [
        {
            "run_id": p.run_id,
            "started": when(p.started_at),
            "mode": "dry run" if p.mode == "dry_run" else "run",
            "outcome": p.outcome + ("" if p.applied else " (planned)"),
            "values": [p.failed if s == "failed" else p.by_action.get(s, 0) for s in SERIES],
        }
        for p in reversed(points)
    ]
