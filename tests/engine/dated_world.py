"""Support for the effective-dates planner tests (test_dates_*_plan.py, test_dates_plan.py):
a simulated platform that applies each plan as the runner would, the instants and dates
they are written with, and the zones whose clocks do odd things. The clock is a number each
plan is given, never the wall clock."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from zoneinfo import ZoneInfo

from syncd.model import Department, Directory, Employee, Kind, Position, build_directory
from syncd.plan import (
    Action,
    Change,
    DatePolicy,
    Plan,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    plan,
)
from syncd.spelling import look_alike

ROOT = 1
UTC = dt.UTC
# Zones whose clocks jump at midnight, skip a day, move by 30 minutes or 2 hours, or never.
ZONES = (
    "UTC",
    "Europe/Paris",
    "America/New_York",
    "America/Santiago",
    "America/Havana",
    "America/Asuncion",
    "America/Sao_Paulo",
    "Asia/Beirut",
    "Asia/Shanghai",
    "Australia/Lord_Howe",
    "Pacific/Apia",
    "Pacific/Kiritimati",
    "Antarctica/Troll",
)
MAX_REPEAT = dt.timedelta(hours=3)  # no zone sets its clocks back by more than this


def at(text: str) -> int:
    """An instant, written in UTC ("2026-10-25T22:59"), as ms."""
    moment = dt.datetime.fromisoformat(text).replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def local_date(now_ms: int, zone: str) -> dt.date:
    moment = dt.datetime.fromtimestamp(now_ms / 1000, tz=UTC)
    return moment.astimezone(ZoneInfo(zone)).date()


def day(text: str | None) -> dt.date | None:
    return dt.date.fromisoformat(text) if text else None


def person(id: str = "e1", username: str = "ann", **kw: Any) -> Employee:
    return Employee(id, username, username.title(), (Position("rd", primary=True),), **kw)


def directory(rows: list[Employee]) -> Directory:
    return build_directory(
        [("departments.csv:2", Department("rd", "R&D"))],
        [(f"employees.csv:{n}", e) for n, e in enumerate(rows, 2)],
    )


# ---------------------------------------------------------------- a simulated platform


@dataclass
class World:
    """What syncd holds after each applied plan: its people and the end dates it recorded."""

    policy: Policy
    people: dict[str, SyncedEmployee] = field(default_factory=dict)
    end_dates: dict[str, str] = field(default_factory=dict)
    start_dates: dict[str, str] = field(default_factory=dict)
    next_id: int = 1000

    def snapshot(self) -> Snapshot:
        departments = {"rd": SyncedDepartment("rd", 100, "Acme/R&D", "")}
        return Snapshot(
            departments,
            dict(self.people),
            end_dates=dict(self.end_dates),
            start_dates=dict(self.start_dates),
        )

    def view(self) -> PlatformView:
        nodes = {ROOT: PlatformNode(ROOT, "Acme", None), 100: PlatformNode(100, "R&D", ROOT, "rd")}
        people = {
            look_alike(s.username): PlatformPerson(s.employee_id or 0, s.username, s.locked)
            for s in self.people.values()
        }
        return PlatformView(ROOT, "Acme", nodes, True, people)

    def plan(self, rows: list[Employee], now: int, *, complete: bool = True) -> Plan:
        d = build_directory(
            [("departments.csv:2", Department("rd", "R&D"))],
            [(f"employees.csv:{n}", e) for n, e in enumerate(rows, 2)],
            complete=complete,
        )
        return plan(d, self.snapshot(), self.view(), self.policy, now)

    def apply(self, p: Plan, now: int) -> None:
        for c in p.changes:
            if c.kind is Kind.EMPLOYEE:
                self._apply_change(c, now)
        self._record_dates(p.dates)

    def _apply_change(self, c: Change, now: int) -> None:
        held = self.people.get(c.key)
        if c.action is Action.CREATE:
            self.people[c.key] = SyncedEmployee(
                c.key, c.display, self.next_id, c.hash, lock_reason=c.lock_reason
            )
            self.next_id += 1
        elif c.action is Action.REMOVE:
            self.people.pop(c.key, None)
        elif held is not None:
            self._change_held(c, held, now)

    def _change_held(self, c: Change, held: SyncedEmployee, now: int) -> None:
        """An update, a lock or an unlock of someone syncd holds."""
        if c.action is Action.UPDATE:
            self.people[c.key] = held._replace(hash=c.hash)
        elif c.action is Action.LOCK:
            reason = c.lock_reason or ("departed" if c.record is not None else "missing")
            since = held.locked_since if held.locked else now
            self.people[c.key] = held._replace(locked=True, lock_reason=reason, locked_since=since)
        elif c.action is Action.UNLOCK:
            self.people[c.key] = held._replace(locked=False, lock_reason=None, locked_since=None)

    def _record_dates(self, dates: Mapping[str, tuple[str | None, str | None]]) -> None:
        """The start and end dates the plan reports, kept for the people still held."""
        for key, (start, end) in dates.items():
            for kept, value in ((self.start_dates, start), (self.end_dates, end)):
                if value is None or key not in self.people:
                    kept.pop(key, None)
                else:
                    kept[key] = value
        self.end_dates = {k: v for k, v in self.end_dates.items() if k in self.people}
        self.start_dates = {k: v for k, v in self.start_dates.items() if k in self.people}

    def sync(self, rows: list[Employee], now: int, *, complete: bool = True) -> Plan:
        p = self.plan(rows, now, complete=complete)
        self.apply(p, now)
        return p


def actions(p: Plan, key: str = "e1") -> list[str]:
    return [c.action.value for c in p.changes if c.kind is Kind.EMPLOYEE and c.key == key]


def paris(
    days_before: int = 0, before_start: Literal["locked", "not_created"] = "locked"
) -> Policy:
    return Policy(
        leaver_policy="lock",
        dates=DatePolicy("Europe/Paris", days_before, before_start),
    )
