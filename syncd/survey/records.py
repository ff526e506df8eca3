"""The platform's employee records as people drift reads them: plain dicts from the
employee list (G), made into ``PlatformEmployee`` values and judged against what syncd
last wrote, part by part, so that only the records that differ are kept."""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from syncd import snapshot as store
from syncd.model import identifying
from syncd.plan import PlatformEmployee, SyncedEmployee
from syncd.plan.drift import differs
from syncd.plan.values import PlatformMark

# The list form's profile fields that people drift compares (see syncd.plan.drift).
COMPARED = ("name", "email", "mobile", "sn", "gender", "sort_order", "senior", "properties")


def newest(stamps: Iterable[int | None]) -> int | None:
    """The latest of these ``last_modified`` stamps: the next read's ``refresh_time``."""
    return max((s for s in stamps if s is not None), default=None)


class Judge:
    """Which records of syncd's people differ from what syncd last wrote (people drift's
    comparison, ``syncd.plan.drift.differs``), made as each part of a listing is read so
    that only those are kept: a whole listing of 100,000 people holds one part at a time.

    ``named``: the usernames the users list named, whose stamps move the people's cursor.
    ``marked``: the records it judged that carry a source id under a username syncd does
    not hold, or under one it holds for another person and another account (``mark``),
    gathered for the continuity check (``syncd.run.rebuild.behind``).
    """

    _MANY = 256  # more usernames than this in one call: everyone's index, made once

    def __init__(self, ours: store.Held, root_id: int, named: set[str] | None):
        self._ours = ours
        self._root_id = root_id
        self._named = named
        self._lock = threading.Lock()
        self._index: dict[str, SyncedEmployee] | None = None
        self._nodes: dict[str, int] | None = None
        self.marked: list[PlatformMark] = []

    def __call__(
        self, records: Iterable[Mapping[str, Any]]
    ) -> tuple[list[PlatformEmployee], int | None]:
        """The records that differ, and the newest stamp of those the users list named."""
        records = list(records)
        people = list(employees(records))
        if not people:
            return [], None
        held = self._held([p.username for p in people])
        marked = [m for r in records if (m := mark(r)) is not None and _foreign(r, m, held)]
        if marked:
            with self._lock:
                self.marked += marked
        written = store.written(self._ours.fields, [s.source_id for s in held.values()])
        nodes = self._departments()
        differing = [
            p
            for p in people
            if (s := held.get(p.username)) is not None
            and differs(written.get(s.source_id), s.locked, p, nodes.get, self._root_id)
        ]
        named = self._named
        stamp = newest(p.last_modified for p in people if named is None or p.username in named)
        return differing, stamp

    def _held(self, usernames: list[str]) -> dict[str, SyncedEmployee]:
        if len(usernames) <= self._MANY and self._index is None:
            return store.by_username(self._ours.employees, usernames)
        with self._lock:
            if self._index is None:
                self._index = {e.username: e for e in self._ours.employees.values()}
        index = self._index
        return {u: index[u] for u in usernames if u in index}

    def _departments(self) -> dict[str, int]:
        if self._nodes is None:
            self._nodes = {k: d.node_id for k, d in self._ours.departments.items()}
        return self._nodes


def _foreign(
    record: Mapping[str, Any], mark: PlatformMark, held: Mapping[str, SyncedEmployee]
) -> bool:
    """Whether the record is an account syncd does not know it holds: under a username it
    does not hold, or under one it holds for another source id in another account (the
    username given again while the database was behind: the account it knows is gone).
    Its own account with a hand-edited ``extension_id`` is the holder's: drift weighs it."""
    holder = held.get(mark.username)
    return holder is None or holder.another_account(record.get("id"), mark.extension_id)


def mark(record: Mapping[str, Any]) -> PlatformMark | None:
    """The record as evidence of a source id on the platform, if it carries one."""
    extension_id, username = record.get("extension_id"), record.get("username")
    if not isinstance(extension_id, str) or not extension_id or not isinstance(username, str):
        return None
    if record.get("deleted") is True:
        return None
    org_ids = tuple(
        p["org_id"]
        for p in record.get("positions") or ()
        if isinstance(p, dict) and isinstance(p.get("org_id"), int)
    )
    stamp = record.get("last_modified")
    stamped = stamp if isinstance(stamp, int) else None
    return PlatformMark(extension_id, username, org_ids, stamped, identifying(record))


def present(records: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The records of employees, those a platform keeps with their deleted flag left out."""
    return [r for r in records if r.get("deleted") is not True]


def employees(records: Iterable[Mapping[str, Any]]) -> Iterator[PlatformEmployee]:
    """The records as drift compares them."""
    for record in records:
        found = platform_employee(record)
        if found is not None:
            yield found


def usernames(users: Iterable[Mapping[str, Any]]) -> list[str]:
    return [u["username"] for u in users if isinstance(u.get("username"), str)]


def platform_employee(record: Mapping[str, Any]) -> PlatformEmployee | None:
    """A list-form record as drift compares it; None for one without id or username, or
    deleted (a hundred thousand of them are read after a big run: no model is built)."""
    employee_id, username = record.get("id"), record.get("username")
    if not isinstance(employee_id, int) or not isinstance(username, str):
        return None
    if record.get("deleted") is True:  # a removed employee, where a platform keeps the record
        return None
    positions = []
    for p in record.get("positions") or ():
        org_id = p.get("org_id") if isinstance(p, dict) else None
        if isinstance(org_id, int):
            title = p.get("job_title") or ""
            positions.append((org_id, p.get("primary") is True, p.get("chief") is True, title))
    stamp, mark = record.get("last_modified"), record.get("extension_id")
    return PlatformEmployee(
        employee_id,
        username,
        record.get("locked") is True or record.get("disabled") is True,
        {name: record[name] for name in COMPARED if name in record},
        tuple(positions),
        stamp if isinstance(stamp, int) else None,
        mark if isinstance(mark, str) and mark else None,
    )
