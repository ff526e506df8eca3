"""Departures in rows set aside: never held up by what else the row could not give.

A row is set aside for many reasons. Some say nothing of who the person is or whether they
left: no name, a birthday or an end date that is not a date, a department nobody knows or
one set aside itself (its id given twice, a '/' in its name, an unknown parent, a cycle),
two primary positions, the row given again (an export with a line per position). When
such a row gives its id, username and status plainly, and every row that gives that id or
username gives both alike and says so too (``Directory.departed_aside``), its person is
the one syncd holds under that very id and username, and a departure it says needs
nothing else: that person is locked where they are, and nothing else is written for them
until the row is read whole, as Entra Connect disables an account whatever else of it
failed to export. HR typing a leaving date that does not exist never keeps a former
employee signed in.

Rows that name the person and disagree (one says they left, another under the same id or
username does not, or gives another id or username) lock nobody either: the run says the
person keeps their access, and is partial, until the source agrees with itself.

A row that gives another username than the account under its id locks nobody (which
account is the person's is the question a rename answers, ``syncd.plan.usernames``, and
the row is not read whole): while that account is unlocked the run says they keep their
access, and is partial.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.plan.actions import Action
from syncd.plan.values import (
    ACCESS_KEPT,
    DEPARTED,
    Note,
    PlatformEmployee,
    SyncedEmployee,
    departures_held,
    matches_any,
    renamed_kept,
)
from syncd.spelling import nfc

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner

REASON = "departed in the source; their row is set aside for another field"


def lock_departed_aside(planner: EmployeePlanner) -> None:
    """Lock the people the source says departed in rows set aside for what does not say
    who they are; tell who keeps access because such a row gives another username."""
    kept = 0
    held = planner.snapshot.employees
    for key, username in planner.directory.departed_aside().items():
        synced = held.get(key)
        if synced is None:
            continue
        found = planner.drift.found(synced) if planner.view.changed else None
        if nfc(synced.username) != username:
            kept += not (synced.locked if found is None else found.locked)
            continue
        _lock(planner, synced, found)
    if kept:
        planner.notes.append(Note(ACCESS_KEPT, "", renamed_kept(kept)))
    held_up = _held_up(planner)
    if held_up:
        planner.notes.append(Note(ACCESS_KEPT, "", departures_held(held_up)))


def _held_up(planner: EmployeePlanner) -> int:
    """The people syncd holds unlocked whom a row set aside says departed, their departure
    held up because the rows that name them disagree (``RejectedRow.departure_held``)."""
    held, locking = planner.snapshot.employees, {c.key for c in planner.locks}
    return sum(
        (synced := held.get(key)) is not None and not synced.locked and key not in locking
        for key in planner.directory.departures_held()
    )


def _lock(planner: EmployeePlanner, synced: SyncedEmployee, found: PlatformEmployee | None) -> None:
    """Lock this person (again, when unlocked on the platform: ``found``, their account as
    it is there when it changed), unless the account is not theirs, gone, or one syncd
    leaves alone, or a row under another id may be theirs under a new id."""
    excluded = planner.policy.exclude_usernames
    if (excluded and matches_any(synced.username, excluded)) or planner.drift.gone(synced):
        return
    if found is not None and planner.not_theirs(synced, found):
        return
    if synced.locked and (found is None or found.locked):
        return
    if planner.renumbered(synced, synced.locked if found is None else found.locked):
        return  # a row under another id may be theirs under a new id: said
    reason = REASON
    if synced.locked:
        reason += "; unlocked on the platform"
        planner.relocking(synced.source_id, synced.username)
    planner.locks.append(
        planner.change(Action.LOCK, None, synced, reason=reason, lock_reason=DEPARTED)
    )
