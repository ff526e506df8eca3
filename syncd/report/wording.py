"""Words every renderer shares: visible text for any value, times, totals, item states,
and field values as people read them (departments by name path, positions with titles)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from syncd.logs import redact
from syncd.plan.tags import tags_text
from syncd.report.value import ACTIONS, ITEM_OUTCOMES, LIST_COLUMNS, Count, Item, RunInfo, Totals
from syncd.spelling import looks_the_same, spelled

SYMBOLS = {
    "create": "+",
    "adopt": "=",
    "update": "~",
    "move": ">",
    "photo": "*",
    "unlock": "^",
    "lock": "!",
    "remove": "-",
    "delete": "-",
}
EXAMPLES = 10  # items named under each failure group in text and HTML

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


def shown(value: Any) -> str:
    """A value as it may be shown anywhere: redacted, then made one line of visible text."""
    return printable(redact("" if value is None else str(value)))


def _escape(match: re.Match[str]) -> str:
    ch = match.group()
    if ch in _NAMED:
        return _NAMED[ch]
    return f"\\x{ord(ch):02x}" if ord(ch) < 0x100 else f"\\u{ord(ch):04x}"


# ---------------------------------------------------------------- field values


def field_value(name: str, value: Any, departments: Mapping[str, str]) -> str:
    """A field's value as a person reads it: departments by name path, not by id."""
    if value is None:
        return "—"
    if name == "positions" and isinstance(value, list):
        return positions_text(value, departments) or "none"
    if name == "parent" and isinstance(value, str):
        return departments.get(value, value)
    if name == "tags" and isinstance(value, list):
        return tags_text(value)
    if name == "extended" and isinstance(value, Mapping):
        return ", ".join(f"{k}={v}" for k, v in value.items()) or "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return value if value else '""'
    if isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def positions_text(positions: Iterable[Any], departments: Mapping[str, str]) -> str:
    """``Acme/R&D/Backend (Engineer, head); Acme/Sales (Advisor)``."""
    parts = position_parts(positions, departments)
    return "; ".join(f"{where} ({notes})" if notes else where for where, notes in parts)


def position_parts(
    positions: Iterable[Any], departments: Mapping[str, str]
) -> list[tuple[str, str]]:
    """Each position as (department name path, notes: the job title, head, primary)."""
    listed = [p for p in positions if isinstance(p, Mapping)]
    parts = []
    for p in listed:
        department = p.get("department")
        where = departments.get(department, department) if isinstance(department, str) else None
        notes = [str(p["job_title"])] if p.get("job_title") else []
        if p.get("chief"):
            notes.append("head")
        if p.get("primary") and len(listed) > 1:
            notes.append("primary")
        parts.append((where or "root", ", ".join(notes)))
    return parts


V = TypeVar("V")


def detail_lines(item: Item, show: Callable[[str, Any], V]) -> list[tuple[str, V | None, V]]:
    """What an item changes, each value as ``show(field, value)`` makes it: a create's
    positions, an update's changed fields, the reason for a lock, unlock, removal or deletion.
    The value before is None where none is shown."""
    if item.before is None and item.after is not None:
        positions = item.after.get("positions")
        if item.kind == "employee" and positions:
            return [("positions", None, show("positions", positions))]
        return []
    if item.before is not None and item.after is not None:
        return [(k, *_seen(k, b, a, show)) for k, b, a in item.field_changes()]
    reason = item_reason(item)
    return [("reason", None, show("reason", reason))] if reason else []


def _seen(name: str, before: Any, after: Any, show: Callable[[str, Any], V]) -> tuple[V, V]:
    """A field's before and after; two spellings that look the same written out, so that
    the change shows (``jose\\u0301`` → ``josé``: syncd.spelling)."""
    if isinstance(before, str) and isinstance(after, str) and looks_the_same(before, after):
        before, after = spelled(before), spelled(after)
    return show(name, before), show(name, after)


def readable(departments: Mapping[str, str]) -> Callable[[str, Any], str]:
    """``show`` for ``detail_lines``: values as text, departments by name path."""
    return lambda name, value: field_value(name, value, departments)


def item_reason(item: Item) -> str:
    """The reason the plan gave (``lock employee x: missing from the source`` -> the rest)."""
    said = f"{item.action} {item.kind} {item.display}: "
    return item.message[len(said) :] if item.message.startswith(said) else ""


# ---------------------------------------------------------------- runs and items


# The way out a blocked guard names (syncd.plan.guards): said only while the guard blocks.
_RERUN = re.compile(r"[:;] rerun with --allow-[a-z]+ [\d,]+ if this is intended$")


def guard_message(message: str, overridden: bool) -> str:
    """A guard's message as shown: once overridden (``--allow-*``, or a reviewed plan
    applied), the "rerun with ..." it says while blocking is left out, since this run did
    go ahead; the verdict then says ``ok (overridden)``."""
    return _RERUN.sub("", message) if overridden else message


def guard_verdict(passed: bool, overridden: bool) -> str:
    """``ok``, ``ok (overridden)`` or ``BLOCKED``: the one word for a guard's decision."""
    if not passed:
        return "BLOCKED"
    return "ok (overridden)" if overridden else "ok"


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
    parts = [f"{t.column(c):,} {c}" for c in LIST_COLUMNS if t.column(c)]
    adopted = t.by_action.get("adopt", 0)
    if adopted:
        parts.append(f"{adopted:,} adopted")
    if t.failed:
        parts.append(f"{t.failed:,} failed")
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


def record(item: Item) -> str:
    """``employee bob (Bob Li) [E2]``: kind, display, name when it adds something, key."""
    name = item.name
    label = f"{item.kind} {item.display}"
    if name and name != item.display and not item.display.endswith("/" + name):
        label += f" ({name})"
    return f"{label} [{item.key}]"


def failed_record(item: Item) -> str:
    """``employee bob (Bob Li) [E2]: mobile 13800000002``: the record, and the value of each
    field its error names (``mobile already used by another employee``), as it was sent."""
    error, after = (item.error or "").casefold(), item.after or {}
    named = [
        f"{field} {after[field]}"
        for field in sorted(after)
        if isinstance(after[field], str | int) and re.search(rf"\b{re.escape(field)}\b", error)
    ]
    return record(item) + (f": {', '.join(named)}" if named else "")


def source_line(source: Mapping[str, Any]) -> str:
    if not source:
        return "—"
    return (
        f"{source.get('departments', 0)} departments, {source.get('employees', 0)} employees, "
        f"{source.get('rejected', 0)} rejected rows ({source.get('read', '?')} read)"
    )


def platform_line(stats: Mapping[str, Any]) -> str:
    calls = stats.get("calls") or {}
    total = sum(v for v in calls.values() if isinstance(v, int)) if isinstance(calls, dict) else 0
    return (
        f"{total:,} calls, {stats.get('retries', 0):,} retries, "
        f"{stats.get('recovered', 0):,} items of an earlier run recovered"
    )


def steps_line(stats: Mapping[str, Any]) -> str | None:
    """Where a run's time went, step by step ("read 0.7 s, plan 0.7 s, send 3.0 s"),
    leaving out the steps under a twentieth of a second; None when none is left (a run
    recorded before steps were timed has none)."""
    taken = stats.get("steps_ms")
    if not isinstance(taken, Mapping):
        return None
    shown = [
        f"{step} {_seconds(ms)}"
        for step, ms in taken.items()
        if isinstance(step, str) and isinstance(ms, int) and ms >= 50
    ]
    return ", ".join(shown) or None


def _seconds(ms: int) -> str:
    """Seconds with a tenth, as a step's time reads beside the others; minutes past one."""
    return f"{ms / 1000:.1f} s" if ms < 60_000 else duration(ms)


def count_lines(counts: Iterable[Count]) -> list[tuple[tuple[str, str], str]]:
    """((kind, action), "9 ok, 3 failed"), in the order changes are applied."""
    grouped: dict[tuple[str, str], list[str]] = {}
    order = {a: n for n, a in enumerate(ACTIONS)}
    ends = {o: n for n, o in enumerate(ITEM_OUTCOMES)}

    def rank(c: Count) -> tuple[int, str, int, str]:
        return (order.get(c.action, 99), c.kind, ends.get(c.outcome, 99), c.outcome)

    for c in sorted(counts, key=rank):
        grouped.setdefault((c.kind, c.action), []).append(f"{c.n:,} {c.outcome}")
    return [(key, ", ".join(parts)) for key, parts in grouped.items()]
