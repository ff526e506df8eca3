"""Applies a Plan to the platform, batch by batch, journaled so a crash loses nothing.

Before a batch is sent its items are marked ``sent``, and that mark is committed; when the
answer comes, one transaction marks each item ``ok`` or ``failed`` (with the platform's
text) and writes the snapshot rows of the successes. The commits are made by a writer
thread (``writer``) while the next batches are on the wire: a batch's mark may be written
while the batches before it are in flight, and the batch leaves only once its mark is
committed (``Pipeline._release``). A process killed in between leaves items ``sent``:
``syncd.run.recovery`` resolves them against the platform at the next start, by serial_no
for departments and by username for people, so nothing is created twice or forgotten.

One failed item never stops the others. A run-level failure (the platform unreachable
after retries, credentials refused) stops sending; what was done stays recorded.

The package's rooms: ``pipeline`` (the state the phases share, and the one send path),
``writer`` (the journal writer's thread), ``departments``, ``employees`` and ``photos``
(their phases: an object each, holding the one ``Pipeline``).
"""

from __future__ import annotations

import functools
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
    Lease,
    NoProgress,
    NotSent,
    Pipeline,
    Progress,
    item_rows,
    lease_lost,
)
from syncd.model import Kind, Photo
from syncd.plan import Action, Change, Plan, Snapshot

__all__ = [
    "ITEM_FAILURES",
    "ApplyResult",
    "Executor",
    "Item",
    "Lease",
    "NoProgress",
    "NotSent",
    "Pipeline",
    "Progress",
    "birthday_ms",
    "item_rows",
    "lease_lost",
]


def _phase(c: Change) -> str:
    return _phase_of(c.kind, c.action, bool(c.frees))  # 100,000 times on a first sync


@functools.cache
def _phase_of(kind: Kind, action: Action, frees: bool) -> str:
    if kind is Kind.DEPARTMENT:
        if action is Action.CREATE:
            return "create departments"
        return "delete departments" if action is Action.DELETE else "update departments"
    if frees:  # all settled before any value is set again (plan.unique_values)
        return "free unique values"
    if action in (Action.CREATE, Action.UPDATE):
        return "create and update employees"
    if action is Action.PHOTO:
        return "set photos"
    return {
        Action.UNLOCK: "unlock employees",
        Action.LOCK: "lock employees",
        Action.FORGET: "forget employees",
    }.get(action, "remove employees")


class Executor:
    """Applies a plan, phase by phase, through the one journaled pipeline.

    Each kind's phases are an object of their own (``departments``, ``employees``,
    ``photos``); what they share is the ``Pipeline`` each holds, and only that.
    """

    def __init__(
        self,
        run: Pipeline,
        snapshot: Snapshot,
        photos: Callable[[Photo], tuple[Photo, bytes]] | None = None,
    ) -> None:
        """``run``: the pipeline the phases send through; ``snapshot``: as syncd left
        everyone (the employees' phases read their lock states and known problems)."""
        self.run = run
        self.departments = Departments(self.run)
        self.employees = Employees(self.run, snapshot)
        self.photos = Photos(self.run, photos)

    @property
    def result(self) -> ApplyResult:
        return self.run.result

    def apply(self, plan: Plan) -> ApplyResult:
        """Send the plan's changes in order; their journal rows must already exist."""
        run = self.run
        phases = itertools.groupby(enumerate(plan.changes), key=lambda sc: _phase(sc[1]))
        handlers: dict[str, Callable[[list[Item]], None]] = {
            "create departments": self.departments.create,
            "update departments": self.departments.update,
            "free unique values": self.employees.upsert,
            "create and update employees": self.employees.upsert,
            "set photos": self.photos.set,
            "unlock employees": lambda items: self.employees.set_locks(items, lock=False),
            "lock employees": lambda items: self.employees.set_locks(items, lock=True),
            "remove employees": self.employees.remove,
            "forget employees": self.employees.forget,
            "delete departments": self.departments.delete,
        }
        run.pending_creates = {
            c.key for c in plan.changes if c.kind is Kind.DEPARTMENT and c.action is Action.CREATE
        }
        with run.journaling():  # every write handed to the writer is committed at its end
            try:
                for name, group in phases:
                    if run.stop.is_set():
                        run.result.interrupted = True
                        break
                    items = [Item(seq, change) for seq, change in group]
                    run.progress.phase(name, len(items))
                    handlers[name](items)
            except (PlatformUnavailable, TokenError) as exc:
                run.result.error = exc
        return run.result
