"""Applies a Plan to the platform, batch by batch, journaled so a crash loses nothing.

Before a batch is sent its items are marked ``sent``; when the answer comes, one
transaction marks each item ``ok`` or ``failed`` (with the platform's text) and writes
the snapshot rows of the successes. A process killed in between leaves items ``sent``:
``syncd.recovery`` resolves them against the platform at the next start, by serial_no
for departments and by username for people, so nothing is created twice or forgotten.

One failed item never stops the others. A run-level failure (the platform unreachable
after retries, credentials refused) stops sending; what was done stays recorded.

The package's rooms: ``pipeline`` (the run's state, the journal and the one send path),
``departments``, ``employees`` and ``photos`` (their phases, as parts of ``Executor``).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from syncd.errors import PlatformUnavailable, TokenError
from syncd.executor.departments import Departments
from syncd.executor.employees import Employees, birthday_ms
from syncd.executor.photos import Photos
from syncd.executor.pipeline import (
    ITEM_FAILURES,
    ApplyResult,
    Item,
    NoProgress,
    NotSent,
    Progress,
    item_rows,
)
from syncd.model import Kind
from syncd.plan import Action, Change, Plan

__all__ = [
    "ITEM_FAILURES",
    "ApplyResult",
    "Executor",
    "Item",
    "NoProgress",
    "NotSent",
    "Progress",
    "birthday_ms",
    "item_rows",
]


def _phase(c: Change) -> str:
    if c.kind is Kind.DEPARTMENT:
        if c.action is Action.CREATE:
            return "create departments"
        return "delete departments" if c.action is Action.DELETE else "update departments"
    if c.frees:  # all settled before any value is set again (plan.unique_values)
        return "free unique values"
    if c.action in (Action.CREATE, Action.UPDATE):
        return "create and update employees"
    if c.action is Action.PHOTO:
        return "set photos"
    return {
        Action.UNLOCK: "unlock employees",
        Action.LOCK: "lock employees",
        Action.FORGET: "forget employees",
    }.get(c.action, "remove employees")


class Executor(Departments, Employees, Photos):
    """Applies a plan, phase by phase, through the one journaled pipeline."""

    def apply(self, plan: Plan) -> ApplyResult:
        """Send the plan's changes in order; their journal rows must already exist."""
        phases = itertools.groupby(enumerate(plan.changes), key=lambda sc: _phase(sc[1]))
        handlers: dict[str, Callable[[list[Item]], None]] = {
            "create departments": self._create_departments,
            "update departments": self._update_departments,
            "free unique values": self._upsert_employees,
            "create and update employees": self._upsert_employees,
            "set photos": self._set_photos,
            "unlock employees": lambda items: self._set_locks(items, lock=False),
            "lock employees": lambda items: self._set_locks(items, lock=True),
            "remove employees": self._remove_employees,
            "forget employees": self._forget_employees,
            "delete departments": self._delete_departments,
        }
        self.pending_creates = {
            c.key for c in plan.changes if c.kind is Kind.DEPARTMENT and c.action is Action.CREATE
        }
        try:
            for name, group in phases:
                if self.stop.is_set():
                    self.result.interrupted = True
                    break
                items = [Item(seq, change) for seq, change in group]
                self.progress.phase(name, len(items))
                handlers[name](items)
        except (PlatformUnavailable, TokenError) as exc:
            self.result.error = exc
        return self.result
