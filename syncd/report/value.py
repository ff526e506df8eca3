"""The report of one run, as plain values: what every renderer reads.

Pure: no database and no HTTP here (``syncd.run.runs`` loads the rows). ``RunReport.as_dict()``
is the JSON record (documented in the README as a stable shape); ``from_dict`` reads it
back. ``departments`` maps the department source ids that the items' fields name to their
name paths, so that renderers can show "Acme/R&D/Backend", not an id.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

from syncd.logs import redact
from syncd.plan import SHOWN_ORDER, Note, Scheduled, field_diff, fields_departments

SCHEMA = 1  # of the JSON record; a key removed or changing meaning makes it 2
ACTIONS = SHOWN_ORDER
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


def iso_time(ms: int | None) -> str | None:
    """A time as ISO 8601 in this host's zone, with its offset: 2026-11-23T14:10:32.120+01:00."""
    if not ms:
        return None
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="milliseconds")


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

    def department_ids(self) -> set[str]:
        """The source ids of departments its fields name: positions, a department's parent."""
        return fields_departments(self.kind, self.before) | fields_departments(
            self.kind, self.after
        )

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
    departments: Mapping[str, str] = field(default_factory=dict)  # source id -> name path
    # What the clock will do (start and end dates), not done: {"count": n, "items": [...]}.
    scheduled: Mapping[str, Any] = field(default_factory=dict)

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
        data = {"schema": SCHEMA, **asdict(self)}
        data["run"].update(run_times(self.run))
        for point in data["history"]:
            point["started"] = iso_time(point["started_at"])
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
            departments=dict(data.get("departments") or {}),
            scheduled=dict(data.get("scheduled") or {}),
        )

    def redacted(self) -> RunReport:
        return RunReport.from_dict(redact_tree(self.as_dict()))


def run_times(run: RunInfo) -> dict[str, Any]:
    """The derived time keys of a run's JSON: its duration, and its times with their zone."""
    return {
        "duration_ms": run.duration_ms,
        "started": iso_time(run.started_at),
        "finished": iso_time(run.finished_at),
    }


def _build(cls: Any, data: Mapping[str, Any]) -> Any:
    """A dataclass from a mapping that may hold more keys than it has fields."""
    names = {f.name for f in fields(cls)}
    return cls(**{k: v for k, v in data.items() if k in names})


def redact_tree(value: Any) -> Any:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, Mapping):
        return {redact(str(k)): redact_tree(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_tree(v) for v in value]
    return value


_NOT_STATS = ("source", "guards", "notes", "error", "scheduled")
SHOWN_SCHEDULED = 1000  # a run's summary keeps the soonest; the count is of them all


def scheduled_summary(items: Sequence[Scheduled]) -> dict[str, Any]:
    """What the clock will do, for a run's summary: the count, and the soonest items."""
    return {
        "count": len(items),
        "items": [
            {
                "key": s.key,
                "display": s.display,
                "action": s.action,
                "at": iso_time(s.at_ms),
                "at_ms": s.at_ms,
                "message": s.message,
            }
            for s in items[:SHOWN_SCHEDULED]
        ],
    }


def build_report(
    run: Mapping[str, Any],
    items: Iterable[Mapping[str, Any]],
    rejected: Iterable[Mapping[str, Any]],
    counts: Iterable[Mapping[str, Any]],
    *,
    history: Sequence[HistoryPoint] = (),
    failed_only: bool = False,
    departments: Mapping[str, str] | None = None,
) -> RunReport:
    """A report from stored rows: the run (summary as JSON text), its items and rejected rows."""
    info = run_info(run)
    summary = _json_object(run.get("summary"))
    stats = {k: v for k, v in summary.items() if k not in _NOT_STATS}
    loaded = tuple(_item(i) for i in items)
    return RunReport(
        run=info,
        source=dict(summary.get("source") or {}),
        guards=tuple(_build(Guard, g) for g in summary.get("guards") or ()),
        notes=tuple(_build(Note, n) for n in summary.get("notes") or ()),
        counts=tuple(_build(Count, c) for c in counts),
        items=loaded,
        rejected=tuple(_build(Rejected, r) for r in rejected),
        stats=stats,
        error=summary.get("error"),
        history=tuple(history),
        failed_only=failed_only,
        departments=named_departments(loaded, departments or {}),
        scheduled=dict(summary.get("scheduled") or {}),
    )


def named_departments(items: Iterable[Item], known: Mapping[str, str]) -> dict[str, str]:
    """Name paths of the departments the items name: from ``known`` (the snapshot's), else
    from the items themselves (a department created or deleted in these runs)."""
    paths: dict[str, str] = {}
    wanted: set[str] = set()
    for item in items:
        if item.kind == "department":
            paths[item.key] = item.display
        wanted.update(item.department_ids())
    return {k: known.get(k) or paths[k] for k in sorted(wanted) if k in known or k in paths}


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


@dataclass(frozen=True)
class PersonEvent:
    """One item of one run about one person."""

    run: RunInfo
    item: Item


@dataclass(frozen=True)
class PersonHistory:
    """What the recorded runs did to one person (by username, and the source ids it had)."""

    username: str
    keys: tuple[str, ...] = ()
    events: tuple[PersonEvent, ...] = ()  # oldest first
    departments: Mapping[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        events = []
        for event in self.events:
            entry = asdict(event)
            entry["run"].update(run_times(event.run))
            events.append(entry)
        return {
            "schema": SCHEMA,
            "username": self.username,
            "keys": list(self.keys),
            "events": events,
            "departments": dict(self.departments),
        }


def person_history(
    username: str,
    rows: Iterable[tuple[Mapping[str, Any], Mapping[str, Any]]],
    departments: Mapping[str, str] | None = None,
) -> PersonHistory:
    """A person's history from stored (run row, item row) pairs, oldest first."""
    events = tuple(PersonEvent(run_info(run), _item(item)) for run, item in rows)
    items = [e.item for e in events]
    keys = tuple(sorted({i.key for i in items}))
    return PersonHistory(username, keys, events, named_departments(items, departments or {}))
