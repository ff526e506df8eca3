"""Run reports: one value built from plain data, rendered as text, JSON, CSV or HTML.

Pure: no database and no HTTP here (``syncd.runs`` loads the data). Every renderer reads
the same ``RunReport``; the JSON form is ``RunReport.as_dict()``, and ``from_dict`` reads
it back. Every value is redacted before it is rendered and every rendered string once
more at the end, so a report never carries a secret even if one reached the database.
"""

from __future__ import annotations

import csv
import html
import io
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from rich import box
from rich.table import Table
from rich.text import Text

from syncd.logs import redact
from syncd.plan import Note, field_diff

ACTIONS = ("create", "adopt", "update", "move", "unlock", "lock", "remove", "delete")
SYMBOLS = {
    "create": "+",
    "adopt": "=",
    "update": "~",
    "move": ">",
    "unlock": "^",
    "lock": "!",
    "remove": "-",
    "delete": "-",
}
# The run list's count columns, by the actions each one adds up.
LIST_COLUMNS: dict[str, tuple[str, ...]] = {
    "created": ("create",),
    "updated": ("update", "move", "unlock"),
    "locked": ("lock",),
    "removed": ("remove",),
    "deleted": ("delete",),
}
ITEM_OUTCOMES = ("ok", "failed", "recovered", "sent", "planned", "skipped")
PROBLEM_OUTCOMES = (  # runs that need someone
    "partial",
    "failed",
    "blocked",
    "interrupted",
)
CSV_COLUMNS = (
    "run_id",
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
EXAMPLES = 10  # items named under each failure group in text and HTML
NOTIFY_REASONS = 3
NOTIFY_LINE = 200  # characters: a push message is read on a phone


# ---------------------------------------------------------------- the value


@dataclass(frozen=True)
class RunInfo:
    id: int
    trigger: str
    mode: str  # apply or dry_run
    read: str  # full or incremental
    source: str
    started_at: int  # ms
    finished_at: int | None
    outcome: str  # running, ok, partial, failed, blocked, interrupted
    exit_code: int | None
    host: str | None = None
    pid: int | None = None

    @property
    def duration_ms(self) -> int | None:
        return None if self.finished_at is None else self.finished_at - self.started_at

    @property
    def applied(self) -> bool:
        """Whether this run went on to send: counts are then what was done, not what was planned."""
        return self.mode == "apply" and self.outcome != "blocked"


@dataclass(frozen=True)
class Item:
    seq: int
    kind: str
    key: str
    display: str
    action: str
    message: str = ""
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    outcome: str = "planned"
    status: int | None = None
    error: str | None = None
    attempts: int = 0

    @property
    def name(self) -> str | None:
        """The record's display name from its fields, when it has one."""
        for values in (self.after, self.before):
            if values and isinstance(values.get("name"), str) and values["name"]:
                return str(values["name"])
        return None

    def field_changes(self) -> list[tuple[str, Any, Any]]:
        """(field, before, after): every field set on a create, the changed ones otherwise."""
        if self.before is None and self.after is not None:
            return [(k, None, v) for k, v in self.after.items() if v not in (None, "", [], {})]
        if self.before is None or self.after is None:
            return []
        return [(k, b, a) for k, (b, a) in field_diff(self.before, self.after).items()]


@dataclass(frozen=True)
class Rejected:
    seq: int
    kind: str
    where: str  # file:line or DN
    key: str | None
    reason: str


@dataclass(frozen=True)
class Guard:
    name: str
    passed: bool
    message: str
    overridden: bool = False


@dataclass(frozen=True)
class Count:
    kind: str
    action: str
    outcome: str
    n: int


@dataclass(frozen=True)
class Totals:
    """What a run did per action (or planned, when it sent nothing), and how many failed."""

    by_action: Mapping[str, int]
    failed: int
    applied: bool

    def column(self, name: str) -> int:
        return sum(self.by_action.get(a, 0) for a in LIST_COLUMNS[name])


def totals(run: RunInfo, counts: Iterable[Count]) -> Totals:
    by_action: Counter[str] = Counter()
    failed = 0
    for c in counts:
        if c.outcome == "failed":
            failed += c.n
        elif not run.applied or c.outcome == "ok":
            by_action[c.action] += c.n
    return Totals(dict(by_action), failed, run.applied)


@dataclass(frozen=True)
class HistoryPoint:
    """One bar of the history chart."""

    run_id: int
    started_at: int
    outcome: str
    mode: str
    by_action: Mapping[str, int]
    failed: int
    applied: bool

    @property
    def total(self) -> int:
        return sum(self.by_action.values()) + self.failed


def history_point(run: RunInfo, counts: Iterable[Count]) -> HistoryPoint:
    t = totals(run, counts)
    return HistoryPoint(
        run.id, run.started_at, run.outcome, run.mode, t.by_action, t.failed, t.applied
    )


@dataclass(frozen=True)
class RunLine:
    """One row of ``syncd reports list``."""

    run: RunInfo
    totals: Totals
    rejected: int


@dataclass(frozen=True)
class FailureGroup:
    error: str
    items: tuple[Item, ...]

    @property
    def count(self) -> int:
        return len(self.items)


@dataclass(frozen=True)
class RunReport:
    run: RunInfo
    source: Mapping[str, Any] = field(default_factory=dict)  # kind, where, read, counts read
    guards: tuple[Guard, ...] = ()
    notes: tuple[Note, ...] = ()
    counts: tuple[Count, ...] = ()  # every item of the run, by kind, action and outcome
    items: tuple[Item, ...] = ()  # all of them, or only the failed ones (failed_only)
    rejected: tuple[Rejected, ...] = ()
    stats: Mapping[str, Any] = field(default_factory=dict)  # the rest of the stored summary
    error: str | None = None
    history: tuple[HistoryPoint, ...] = ()  # this run and those before it, oldest first
    failed_only: bool = False

    @property
    def totals(self) -> Totals:
        return totals(self.run, self.counts)

    @property
    def failures(self) -> list[FailureGroup]:
        """Failed items grouped by error text, most frequent first."""
        groups: dict[str, list[Item]] = {}
        for item in self.items:
            if item.outcome == "failed":
                groups.setdefault(item.error or "unknown error", []).append(item)
        ordered = sorted(groups.items(), key=lambda g: (-len(g[1]), g[0]))
        return [FailureGroup(error, tuple(items)) for error, items in ordered]

    @property
    def blocked_by(self) -> list[Guard]:
        return [g for g in self.guards if not g.passed]

    def by_action(self) -> list[tuple[str, list[Item]]]:
        """The items grouped by action, in the order changes are applied."""
        grouped: dict[str, list[Item]] = {}
        for item in self.items:
            grouped.setdefault(item.action, []).append(item)
        order = {a: n for n, a in enumerate(ACTIONS)}
        return sorted(grouped.items(), key=lambda g: (order.get(g[0], len(order)), g[0]))

    def as_dict(self) -> dict[str, Any]:
        """The full record as plain JSON values, with the derived totals and failure groups."""
        data = asdict(self)
        data["run"]["duration_ms"] = self.run.duration_ms
        data["totals"] = asdict(self.totals)
        data["failures"] = [
            {"error": g.error, "count": g.count, "seqs": [i.seq for i in g.items]}
            for g in self.failures
        ]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunReport:
        """Read back ``as_dict()`` (derived keys are recomputed, not read)."""
        return cls(
            run=_build(RunInfo, data["run"]),
            source=dict(data.get("source") or {}),
            guards=tuple(_build(Guard, g) for g in data.get("guards", ())),
            notes=tuple(_build(Note, n) for n in data.get("notes", ())),
            counts=tuple(_build(Count, c) for c in data.get("counts", ())),
            items=tuple(_build(Item, i) for i in data.get("items", ())),
            rejected=tuple(_build(Rejected, r) for r in data.get("rejected", ())),
            stats=dict(data.get("stats") or {}),
            error=data.get("error"),
            history=tuple(_build(HistoryPoint, h) for h in data.get("history", ())),
            failed_only=bool(data.get("failed_only", False)),
        )

    def redacted(self) -> RunReport:
        return RunReport.from_dict(_redact_tree(self.as_dict()))


def _build(cls: Any, data: Mapping[str, Any]) -> Any:
    """A dataclass from a mapping that may hold more keys than it has fields."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def _redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(str(k)): _redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_tree(v) for v in value]
    return value


def build_report(
    run: Mapping[str, Any],
    items: Iterable[Mapping[str, Any]],
    rejected: Iterable[Mapping[str, Any]],
    counts: Iterable[Mapping[str, Any]],
    *,
    history: Sequence[HistoryPoint] = (),
    failed_only: bool = False,
) -> RunReport:
    """A report from stored rows: the run (summary as JSON text), its items and rejected rows."""
    info = run_info(run)
    summary = _json_object(run.get("summary"))
    stats = {k: v for k, v in summary.items() if k not in ("source", "guards", "notes", "error")}
    return RunReport(
        run=info,
        source=dict(summary.get("source") or {}),
        guards=tuple(_build(Guard, g) for g in summary.get("guards") or ()),
        notes=tuple(_build(Note, n) for n in summary.get("notes") or ()),
        counts=tuple(_build(Count, c) for c in counts),
        items=tuple(_item(i) for i in items),
        rejected=tuple(_build(Rejected, r) for r in rejected),
        stats=stats,
        error=summary.get("error"),
        history=tuple(history),
        failed_only=failed_only,
    )


def run_info(row: Mapping[str, Any]) -> RunInfo:
    info: RunInfo = _build(RunInfo, row)
    return info


def _item(row: Mapping[str, Any]) -> Item:
    values = dict(row)
    values["before"] = _json_object(values.get("before")) if values.get("before") else None
    values["after"] = _json_object(values.get("after")) if values.get("after") else None
    values["message"] = values.get("message") or ""
    values["attempts"] = values.get("attempts") or 0
    item: Item = _build(Item, values)
    return item


def _json_object(text: Any) -> dict[str, Any]:
    """A stored JSON object; anything else (absent, damaged) is kept visible under "raw"."""
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return {"raw": str(text)}
    return value if isinstance(value, dict) else {"raw": value}


# ---------------------------------------------------------------- shared formatting

# C0/C1 controls, line and paragraph separators, bidi overrides and lone surrogates: a value
# must not start a new line, move the cursor, or reorder the text around it.
UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(value: Any) -> str:
    """A value as one line of visible text: unsafe characters shown as escapes."""
    text = "" if value is None else str(value)
    return UNSAFE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


def field_value(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, str):
        return value if value else '""'
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def when(ms: int | None) -> str:
    if not ms:
        return "—"
    return time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(ms / 1000))


def duration(ms: int | None) -> str:
    if ms is None:
        return "—"
    if ms < 1_000:
        return f"{ms} ms"
    if ms < 60_000:
        return f"{ms / 1000:.1f} s"
    minutes, seconds = divmod(round(ms / 1000), 60)
    return f"{minutes} min {seconds} s"


def outcome_line(run: RunInfo) -> str:
    label = "dry run" if run.mode == "dry_run" else "run"
    code = "" if run.exit_code is None else f" (exit {run.exit_code})"
    return f"{label} {run.id}: {run.outcome}{code}"


def totals_line(t: Totals) -> str:
    parts = [f"{t.column(c)} {c}" for c in LIST_COLUMNS if t.column(c)]
    adopted = t.by_action.get("adopt", 0)
    if adopted:
        parts.append(f"{adopted} adopted")
    if t.failed:
        parts.append(f"{t.failed} failed")
    text = ", ".join(parts) or "no changes"
    return text if t.applied else f"planned: {text}"


def item_state(item: Item, run: RunInfo) -> str:
    """How an item ended, in words; empty for a run that sent nothing."""
    if not run.applied:
        return ""
    if item.outcome == "failed":
        status = f" (status {item.status})" if item.status is not None else ""
        return f"failed{status}: {item.error or 'unknown error'}"
    words = {"planned": "not sent", "sent": "sent, answer unknown"}
    text = words.get(item.outcome, item.outcome)
    return f"{text}: {item.error}" if item.error else text


def _record(item: Item) -> str:
    name = item.name
    shown = f"{item.kind} {item.display}"
    if name and name != item.display and not item.display.endswith("/" + name):
        shown += f" ({name})"
    return f"{shown} [{item.key}]"


def _source_line(source: Mapping[str, Any]) -> str:
    if not source:
        return "—"
    return (
        f"{source.get('departments', 0)} departments, {source.get('employees', 0)} employees, "
        f"{source.get('rejected', 0)} rejected rows ({source.get('read', '?')} read)"
    )


def _platform_line(stats: Mapping[str, Any]) -> str:
    calls = stats.get("calls") or {}
    total = sum(v for v in calls.values() if isinstance(v, int)) if isinstance(calls, dict) else 0
    return (
        f"{total} calls, {stats.get('retries', 0)} retries, "
        f"{stats.get('recovered', 0)} items of an earlier run recovered"
    )


# ---------------------------------------------------------------- text


def render_text(report: RunReport) -> str:
    r = report.redacted()
    sections = (
        _text_header(r),
        _text_failures(r),
        _text_changes(r),
        _text_notes(r),
        _text_guards(r),
        _text_rejected(r),
    )
    lines = [line for section in sections for line in (*section, "")]
    return redact("\n".join(lines).rstrip("\n") + "\n")


def _text_header(r: RunReport) -> list[str]:
    run = r.run
    p = printable
    lines = [
        outcome_line(run),
        f"  trigger   {p(run.trigger)}, mode {p(run.mode)}, {p(run.read)} read",
        f"  source    {p(run.source) or '—'}",
        f"  read      {p(_source_line(r.source))}",
        f"  started   {when(run.started_at)}   finished {when(run.finished_at)}   "
        f"took {duration(run.duration_ms)}",
        f"  host      {p(run.host or '—')} (pid {run.pid if run.pid is not None else '—'})",
        f"  result    {totals_line(r.totals)}",
    ]
    if r.stats.get("calls") is not None:
        lines.append(f"  platform  {p(_platform_line(r.stats))}")
    if r.error and not r.blocked_by:  # a block's reasons are the guards, listed below
        lines.append(f"  error     {p(r.error)}")
    if r.counts:
        lines.append("  counts")
        lines += [f"    {p(k)} {p(a)}: {p(o)}" for (k, a), o in _count_lines(r.counts)]
    return lines


def _count_lines(counts: Iterable[Count]) -> list[tuple[tuple[str, str], str]]:
    grouped: dict[tuple[str, str], list[str]] = {}
    order = {a: n for n, a in enumerate(ACTIONS)}
    ends = {o: n for n, o in enumerate(ITEM_OUTCOMES)}

    def rank(c: Count) -> tuple[int, str, int, str]:
        return (order.get(c.action, 99), c.kind, ends.get(c.outcome, 99), c.outcome)

    for c in sorted(counts, key=rank):
        grouped.setdefault((c.kind, c.action), []).append(f"{c.n} {c.outcome}")
    return [(key, ", ".join(parts)) for key, parts in grouped.items()]


def _text_failures(r: RunReport) -> list[str]:
    p = printable
    lines = ["failures"]
    lines += [f"  blocked by guard {p(g.name)}: {p(g.message)}" for g in r.blocked_by]
    if r.run.outcome == "interrupted":
        lines.append("  interrupted: items not sent are planned again by the next run")
    for group in r.failures:
        lines.append(f"  {group.count} × {p(group.error)}")
        lines += [f"      {p(_record(i))}" for i in group.items[:EXAMPLES]]
        if group.count > EXAMPLES:
            lines.append(f"      … and {group.count - EXAMPLES} more")
    if len(lines) == 1:
        lines.append("  none")
    return lines


def _text_changes(r: RunReport) -> list[str]:
    p = printable
    lines = ["failed changes" if r.failed_only else "changes"]
    for action, items in r.by_action():
        lines.append(f"  {p(action)} ({len(items)})")
        for item in items:
            state = item_state(item, r.run)
            suffix = f"  — {p(state)}" if state else ""
            lines.append(f"    {SYMBOLS.get(item.action, '*')} {p(item.message)}{suffix}")
            if item.before is not None:  # a create's fields are the whole record: not repeated
                lines += [
                    f"        {p(k)}: {p(field_value(b))} → {p(field_value(a))}"
                    for k, b, a in item.field_changes()
                ]
    if len(lines) == 1:
        lines.append("  none")
    return lines


def _text_notes(r: RunReport) -> list[str]:
    p = printable
    lines = ["notes"]
    lines += [
        f"  {p(n.kind)}: " + (f"{p(n.key)}: " if n.key else "") + p(n.message) for n in r.notes
    ]
    return lines if r.notes else [*lines, "  none"]


def _text_guards(r: RunReport) -> list[str]:
    p = printable
    lines = ["guards"]
    for g in r.guards:
        verdict = "passed" if g.passed else "BLOCKED"
        extra = " (overridden)" if g.overridden else ""
        lines.append(f"  {p(g.name)}: {verdict}{extra}: {p(g.message)}")
    return lines if r.guards else [*lines, "  none"]


def _text_rejected(r: RunReport) -> list[str]:
    p = printable
    lines = [f"rejected rows ({len(r.rejected)})"]
    for row in r.rejected:
        key = f" {p(row.key)}" if row.key else ""
        lines.append(f"  {p(row.where)}: {p(row.kind)}{key}: {p(row.reason)}")
    return lines if r.rejected else [*lines, "  none"]


# ---------------------------------------------------------------- JSON


def render_json(report: RunReport) -> str:
    data = _redact_tree(report.as_dict())
    return redact(json.dumps(data, ensure_ascii=False, indent=2, sort_keys=True) + "\n")


# ---------------------------------------------------------------- CSV


def neutralise(cell: str) -> str:
    """A cell a spreadsheet will not run as a formula (OWASP: prefix a single quote)."""
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def csv_rows(report: RunReport) -> Iterator[list[str]]:
    yield list(CSV_COLUMNS)
    for item in report.items:
        values: dict[str, Any] = {
            **asdict(item),
            "run_id": report.run.id,
            "before": _compact(item.before),
            "after": _compact(item.after),
        }
        yield [neutralise(redact(_cell(values[c]))) for c in CSV_COLUMNS]


def _cell(value: Any) -> str:
    return "" if value is None else str(value)


def _compact(value: Mapping[str, Any] | None) -> str | None:
    return None if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)


def render_csv(report: RunReport) -> str:
    buffer = io.StringIO()
    # Every cell quoted: the final redaction pass can then never run across a delimiter.
    writer = csv.writer(buffer, quoting=csv.QUOTE_ALL)
    writer.writerows(csv_rows(report))
    return redact(buffer.getvalue())


# ---------------------------------------------------------------- notification


def render_notification(report: RunReport, command: str = "syncd reports show") -> str:
    """A short text message for administrators' phones."""
    r = report.redacted()
    run = r.run
    lines = [f"syncd {outcome_line(run)} on {run.host or 'unknown host'}", totals_line(r.totals)]
    lines += [f"blocked by {g.name}: {g.message}" for g in r.blocked_by]
    if r.error and not r.blocked_by:
        lines.append(f"error: {r.error}")
    lines += [f"{g.count} × {g.error}" for g in r.failures[:NOTIFY_REASONS]]
    lines.append(f"report: {command} {run.id}")
    return redact("\n".join(_shorten(printable(line), NOTIFY_LINE) for line in lines))


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---------------------------------------------------------------- the run list


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
        Text(when(run.started_at)[:16]),
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


# ---------------------------------------------------------------- HTML


def h(value: Any) -> str:
    """Any value as HTML text: redacted, made visible, then escaped (quotes included)."""
    return html.escape(printable(redact("" if value is None else str(value))), quote=True)


_CSS = """
:root { color-scheme: light; --ok: #1a7f37; --bad: #c62828; --warn: #9a6700; --muted: #57606a; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "Noto Sans", sans-serif;
  color: #1f2328; margin: 0 auto; padding: 1.5rem; max-width: 80rem; }
h1 { font-size: 1.5rem; margin: 0 0 .5rem; }
h2 { font-size: 1.15rem; margin: 2rem 0 .5rem; border-bottom: 1px solid #d0d7de; }
h3 { font-size: 1rem; margin: 1.2rem 0 .3rem; }
.outcome { padding: .1rem .5rem; border-radius: .3rem; color: #fff; background: var(--muted); }
.outcome-ok { background: var(--ok); }
.outcome-partial, .outcome-interrupted { background: var(--warn); }
.outcome-failed, .outcome-blocked { background: var(--bad); }
dl.summary { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0; }
dl.summary dt { color: var(--muted); }
dl.summary dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; margin: .3rem 0; }
table.counts { width: auto; }
th, td { text-align: left; vertical-align: top; padding: .25rem .5rem;
  border-bottom: 1px solid #eaeef2; overflow-wrap: break-word; }
th { background: #f6f8fa; }
td.n, th.n { text-align: right; white-space: nowrap; }
.failed { color: var(--bad); font-weight: 600; }
.blocked { color: var(--bad); }
.muted { color: var(--muted); }
ul.fields { margin: 0; padding-left: 1rem; }
del { color: var(--bad); } ins { color: var(--ok); text-decoration: none; }
.chart svg { max-width: 100%; height: auto; }
caption { text-align: left; white-space: nowrap; }
.legend { list-style: none; padding: 0; display: flex; flex-wrap: wrap; gap: .3rem 1rem; }
.swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem;
  vertical-align: middle; }
.a-create { fill: #2da44e; background: #2da44e; } .a-adopt { fill: #8c959f; background: #8c959f; }
.a-update { fill: #0969da; background: #0969da; } .a-move { fill: #54aeff; background: #54aeff; }
.a-unlock { fill: #8250df; background: #8250df; } .a-lock { fill: #bf8700; background: #bf8700; }
.a-remove { fill: #e16f24; background: #e16f24; } .a-delete { fill: #6e4c2a; background: #6e4c2a; }
.a-failed { fill: #cf222e; background: #cf222e; }
.planned { opacity: .45; }
.current rect.frame { fill: none; stroke: #1f2328; stroke-width: 1.5; }
svg text { font: 10px system-ui, sans-serif; fill: #57606a; }
@media print {
  body { padding: 0; max-width: none; font-size: 11px; }
  * { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  h2 { break-after: avoid; } tr, li, figure { break-inside: avoid; }
}
"""


def render_html(report: RunReport) -> str:
    r = report.redacted()
    title = h(outcome_line(r.run))
    body = [
        _html_summary(r),
        _html_failures(r),
        _html_changes(r),
        _html_rejected(r),
        _html_notes(r),
        _html_guards(r),
        _html_history(r),
    ]
    page = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        # Nothing may load or run, even if some value slipped through unescaped.
        '<meta http-equiv="Content-Security-Policy" '
        "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>syncd {title}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n"
        + "\n".join(body)
        + '\n<footer class="muted"><p>Written by syncd. '
        f"Same report in the shell: <code>syncd reports show {r.run.id}</code></p></footer>\n"
        "</body>\n</html>\n"
    )
    return redact(page)


def _html_summary(r: RunReport) -> str:
    run = r.run
    rows = [
        ("trigger", f"{run.trigger}, mode {run.mode}, {run.read} read"),
        ("source", run.source or "—"),
        ("read", _source_line(r.source)),
        ("started", when(run.started_at)),
        ("finished", when(run.finished_at)),
        ("took", duration(run.duration_ms)),
        ("host", f"{run.host or '—'} (pid {run.pid if run.pid is not None else '—'})"),
        ("result", totals_line(r.totals)),
    ]
    if r.stats.get("calls") is not None:
        rows.append(("platform", _platform_line(r.stats)))
    if r.error and not r.blocked_by:
        rows.append(("error", r.error))
    items = "".join(f"<dt>{h(k)}</dt><dd>{h(v)}</dd>" for k, v in rows)
    label = "Dry run" if run.mode == "dry_run" else "Run"
    code = "" if run.exit_code is None else f" (exit {h(run.exit_code)})"
    return (
        f'<header><h1>{label} {h(run.id)}: <span class="outcome outcome-{h(run.outcome)}">'
        f'{h(run.outcome)}</span>{code}</h1>\n<dl class="summary">{items}</dl>\n'
        f"{_html_counts(r)}</header>"
    )


def _html_counts(r: RunReport) -> str:
    if not r.counts:
        return ""
    rows = "".join(
        f"<tr><td>{h(k)}</td><td>{h(a)}</td><td>{h(text)}</td></tr>"
        for (k, a), text in _count_lines(r.counts)
    )
    return (
        '<table class="counts"><caption class="muted">items by kind, action and outcome'
        f"</caption><tr><th>kind</th><th>action</th><th>items</th></tr>{rows}</table>"
    )


def _section(anchor: str, title: str, content: str) -> str:
    return f'<section id="{anchor}">\n<h2>{title}</h2>\n{content}\n</section>'


def _html_failures(r: RunReport) -> str:
    parts = [
        f'<p class="blocked">Blocked by guard <strong>{h(g.name)}</strong>: {h(g.message)}</p>'
        for g in r.blocked_by
    ]
    if r.run.outcome == "interrupted":
        parts.append("<p>Interrupted: items not sent are planned again by the next run.</p>")
    groups = r.failures
    if groups:
        rows = "".join(_html_failure_row(g) for g in groups)
        parts.append(
            f'<table><tr><th class="n">items</th><th>error</th><th>records</th></tr>{rows}</table>'
        )
    if not parts:
        parts.append('<p class="muted">None.</p>')
    return _section("failures", "Failures", "\n".join(parts))


def _html_failure_row(group: FailureGroup) -> str:
    names = ", ".join(h(_record(i)) for i in group.items[:EXAMPLES])
    if group.count > EXAMPLES:
        names += f" … and {group.count - EXAMPLES} more"
    return (
        f'<tr><td class="n failed">{group.count} ×</td><td>{h(group.error)}</td>'
        f"<td>{names}</td></tr>"
    )


def _html_changes(r: RunReport) -> str:
    groups = r.by_action()
    if not groups:
        return _section("changes", "Changes", '<p class="muted">None.</p>')
    parts = []
    for action, items in groups:
        rows = "".join(_html_item(i, r.run) for i in items)
        parts.append(
            f'<h3>{h(action)} ({len(items)})</h3>\n<table><tr><th class="n">#</th>'
            "<th>record</th><th>name</th><th>fields (before → after)</th><th>outcome</th></tr>"
            f"{rows}</table>"
        )
    title = "Failed changes" if r.failed_only else "Changes"
    return _section("changes", title, "\n".join(parts))


def _html_item(item: Item, run: RunInfo) -> str:
    state = item_state(item, run) or "planned"
    css = ' class="failed"' if item.outcome == "failed" else ""
    attempts = (
        f' <span class="muted">({item.attempts} attempts)</span>' if item.attempts > 1 else ""
    )
    return (
        f'<tr><td class="n">{h(item.seq)}</td>'
        f'<td>{h(item.kind)} {h(item.display)}<br><span class="muted">{h(item.key)}</span></td>'
        f"<td>{h(item.name or '')}</td><td>{_html_fields(item)}</td>"
        f"<td{css}>{h(state)}{attempts}</td></tr>"
    )


def _html_fields(item: Item) -> str:
    changes = item.field_changes()
    if not changes:
        return '<span class="muted">—</span>'
    if item.before is None:
        lines = [f"<li>{h(k)}: <ins>{h(field_value(a))}</ins></li>" for k, _, a in changes]
    else:
        lines = [
            f"<li>{h(k)}: <del>{h(field_value(b))}</del> → <ins>{h(field_value(a))}</ins></li>"
            for k, b, a in changes
        ]
    return f'<ul class="fields">{"".join(lines)}</ul>'


def _html_rejected(r: RunReport) -> str:
    if not r.rejected:
        return _section("rejected", "Rejected rows (0)", '<p class="muted">None.</p>')
    rows = "".join(
        f"<tr><td>{h(x.where)}</td><td>{h(x.kind)}</td><td>{h(x.key or '')}</td>"
        f"<td>{h(x.reason)}</td></tr>"
        for x in r.rejected
    )
    table = f"<table><tr><th>where</th><th>kind</th><th>key</th><th>reason</th></tr>{rows}</table>"
    return _section("rejected", f"Rejected rows ({len(r.rejected)})", table)


def _html_notes(r: RunReport) -> str:
    if not r.notes:
        return _section("notes", "Notes", '<p class="muted">None.</p>')
    rows = "".join(
        f"<tr><td>{h(n.kind)}</td><td>{h(n.key)}</td><td>{h(n.message)}</td></tr>" for n in r.notes
    )
    table = f"<table><tr><th>kind</th><th>key</th><th>message</th></tr>{rows}</table>"
    return _section("notes", "Notes: conflicts, drift, skipped", table)


def _html_guards(r: RunReport) -> str:
    if not r.guards:
        return _section("guards", "Guards", '<p class="muted">None checked.</p>')
    rows = "".join(
        f'<tr><td>{h(g.name)}</td><td class="{"" if g.passed else "failed"}">'
        f"{'passed' if g.passed else 'BLOCKED'}{' (overridden)' if g.overridden else ''}</td>"
        f"<td>{h(g.message)}</td></tr>"
        for g in r.guards
    )
    table = f"<table><tr><th>guard</th><th>decision</th><th>message</th></tr>{rows}</table>"
    return _section("guards", "Guards", table)


# ---------------------------------------------------------------- the history chart

SERIES = (*ACTIONS, "failed")
BAR, GAP, PLOT_H, LEFT, TOP, BOTTOM = 18, 8, 160, 36, 12, 30


def _html_history(r: RunReport) -> str:
    points = r.history
    if not points:
        return _section("history", "Last runs", '<p class="muted">No history.</p>')
    legend = (
        "".join(f'<li><span class="swatch a-{s}"></span>{s}</li>' for s in SERIES)
        + '<li><span class="swatch a-create planned"></span>planned, not applied</li>'
    )
    content = (
        f'<figure class="chart">{chart_svg(points, r.run.id)}'
        f'<figcaption><ul class="legend">{legend}</ul></figcaption></figure>\n'
        f"{_history_table(points)}"
    )
    return _section("history", f"Last {len(points)} runs: changes and failures", content)


def chart_svg(points: Sequence[HistoryPoint], current: int | None = None) -> str:
    """Stacked bars of changes per action and failures, one bar per run, as inline SVG."""
    top = max((p.total for p in points), default=0) or 1
    width = LEFT + len(points) * (BAR + GAP) + GAP
    height = TOP + PLOT_H + BOTTOM
    bars = "".join(_bar(n, p, top, p.run_id == current) for n, p in enumerate(points))
    base = TOP + PLOT_H
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" '
        'aria-labelledby="chart-title chart-desc">'
        f'<title id="chart-title">Changes per action and failures, last {len(points)} runs'
        '</title><desc id="chart-desc">One stacked bar per run, oldest on the left; the '
        "height is the number of items. Each bar has its own title with the counts.</desc>"
        f'<line x1="{LEFT}" y1="{base}" x2="{width}" y2="{base}" stroke="#8c959f"/>'
        f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{top}</text>'
        f'<text x="{LEFT - 4}" y="{base}" text-anchor="end">0</text>'
        f"{bars}</svg>"
    )


def _bar(n: int, point: HistoryPoint, top: int, current: bool) -> str:
    x = LEFT + GAP + n * (BAR + GAP)
    y = float(TOP + PLOT_H)
    rects = []
    for series in SERIES:
        value = point.failed if series == "failed" else point.by_action.get(series, 0)
        if not value:
            continue
        size = max(1.0, value / top * PLOT_H)
        y -= size
        rects.append(
            f'<rect class="a-{series}" x="{x}" y="{y:.1f}" width="{BAR}" height="{size:.1f}"/>'
        )
    frame = (
        f'<rect class="frame" x="{x - 1}" y="{TOP}" width="{BAR + 2}" height="{PLOT_H}"/>'
        if current
        else ""
    )
    classes = " ".join(
        c for c in ("current" if current else "", "" if point.applied else "planned") if c
    )
    label = TOP + PLOT_H + 14
    return (
        f'<g class="{classes}"><title>{h(_bar_title(point))}</title>{frame}{"".join(rects)}'
        f'<text x="{x + BAR / 2}" y="{label}" text-anchor="middle">{point.run_id}</text></g>'
    )


def _bar_title(point: HistoryPoint) -> str:
    parts = [f"{point.by_action[a]} {a}" for a in ACTIONS if point.by_action.get(a)]
    if point.failed:
        parts.append(f"{point.failed} failed")
    planned = "" if point.applied else " (planned, not applied)"
    counts = ", ".join(parts) or "no changes"
    return f"run {point.run_id}, {when(point.started_at)}, {point.outcome}: {counts}{planned}"


def _history_table(points: Sequence[HistoryPoint]) -> str:
    head = "".join(f'<th class="n">{s}</th>' for s in SERIES)
    rows = "".join(
        f'<tr><td class="n">{p.run_id}</td><td>{h(when(p.started_at))}</td>'
        f"<td>{h(p.outcome)}{'' if p.applied else ' (planned)'}</td>"
        + "".join(
            f'<td class="n">{p.failed if s == "failed" else p.by_action.get(s, 0)}</td>'
            for s in SERIES
        )
        + "</tr>"
        for p in reversed(points)
    )
    return (
        '<details><summary>The chart\'s numbers</summary><table><tr><th class="n">run</th>'
        f"<th>started</th><th>outcome</th>{head}</tr>{rows}</table></details>"
    )


RENDERERS: dict[str, Callable[[RunReport], str]] = {
    "text": render_text,
    "json": render_json,
    "csv": render_csv,
    "html": render_html,
}


def render(report: RunReport, fmt: str) -> str:
    """The report in one of ``RENDERERS``' formats (KeyError for any other)."""
    return RENDERERS[fmt](report)
