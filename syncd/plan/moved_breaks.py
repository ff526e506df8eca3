"""Statuses a moved line break may have made: a lock or an unlock that waits for the rows.

Where a CSV file has the status at a row's edge and one status value is another of the
other meaning with text at that edge ("inactive" is "in" + "active", the status first;
"Active - left" is "Active" + " - left", the status last), a line break moved across the
edge of two rows turns one into the other: "…,Lin" + "inactive,…" reads as "…,Linin" +
"active,…" (a former employee back), "…,Lin" + "active,…" as "…,L" + "inactive,…"
(someone active gone), "…,Active - left" + "E2,…" as "…,Active" + "- leftE2,…"; each row
reads well. The reader notes each row whose status may be so (``Directory.moved_statuses``,
syncd.sources.csv.moved_breaks). Where what syncd wrote for the row beside's field at the
edge (a department's path: the departments of its positions) is what the read gives
with the text moved back ("Lin" written, "Linin" or "L" read), the unlock or the lock
waits, and the run is partial and says why; the row beside's own create or update waits
with it (made, it would write the field as the break left it, and the next run would find
the rows as syncd wrote them). An unlock waits too where nothing can tell (syncd holds
nobody under that row, or its field at the edge is one syncd does not write as read: the
id, a field a mapping rule makes the same of either way); a lock waits where the row
beside reads with a department the file does not have that the text moved back makes one
it has ("adm" + "in": "admin"). A row beside that reads as syncd wrote it ("Lin", then
"active") shows nothing moved. A row beside whose field shows the text moved waits
whatever the status's own change (a departure the break hid, a status row the row filter
leaves out), its departure too when the filter left it out as the break left the field.
A join of several sources carries every source's notes, the row beside under its joined
key; a note weighs the status's own change only where its source decides that status
(syncd.plan.join).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from syncd.model import DEPARTMENT_PATH, EXTRA, Employee, Kind, MovedStatus
from syncd.plan.actions import Action
from syncd.plan.fields import fields_departments
from syncd.plan.values import ACCESS_KEPT, Change, Note
from syncd.spelling import nfc

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner


def spare_moved_statuses(planner: EmployeePlanner) -> None:
    """The locks, unlocks and accounts made planned for rows whose status may be what a
    moved line break made, taken back, and the rows beside's own creates and updates with
    them: each is said."""
    if not planner.directory.moved_statuses:
        return  # as a rule
    beside: dict[str, str] = {}  # rows beside whose field at the edge may hold the move
    planner.locks = [c for c in planner.locks if not _waits(planner, c, beside)]
    planner.unlocks = [c for c in planner.unlocks if not _waits(planner, c, beside)]
    # An account made for someone syncd never synced, who may have left before it did.
    made = [c for c in planner.upserts if c.action is Action.CREATE]
    if waiting := {c.key for c in made if _waits(planner, c, beside)}:
        planner.upserts = [c for c in planner.upserts if c.key not in waiting]
        planner.untouched.update(waiting)
    _beside_moved(planner, beside)
    if beside:
        _hold_beside(planner, beside)


def _beside_moved(planner: EmployeePlanner, beside: dict[str, str]) -> None:
    """The rows beside a status whose field at the edge shows the text moved, whatever the
    status's own change (none: its row as syncd holds it, or one the row filter leaves
    out): their own changes wait too. Made, they would write the field as the break left
    it, or the row filter would judge it so ("Berlin" read "- leftBerlin", left out: a
    departure)."""
    for key, found in planner.directory.moved_statuses.items():
        if found.beside not in beside and _moved(planner, found, unlock=False) is not None:
            beside[found.beside] = f"the status of source id {key}"


def _waits(planner: EmployeePlanner, change: Change, beside: dict[str, str]) -> bool:
    found = planner.directory.moved_statuses.get(change.key)
    if found is None or found.same or not isinstance(change.record, Employee):
        return False  # a status that reads the same either way makes its own change
    # An account made waits as a lock does, but for a row beside syncd holds nobody under:
    # an initial sync would hold back everyone after a name that ends as a status starts.
    unlock = change.action is Action.UNLOCK
    why = _moved(planner, found, unlock)
    if why is None:
        return False
    beside[found.beside] = f"the {change.action.value} of {change.record.username}"
    planner.notes.append(
        Note(
            ACCESS_KEPT,
            change.key,
            f"{change.record.username}: the row's status may be another's that a line break "
            f"moved across the edge with the row {'after' if found.after else 'before'} made "
            f"so ({why}): the {change.action.value} waits until the rows read as syncd "
            "wrote them",
        )
    )
    return True


def _moved(planner: EmployeePlanner, found: MovedStatus, unlock: bool) -> str | None:
    """Why the row beside shows the text moved, or None when it reads as syncd wrote it."""
    beside, field, read, was, text, gained, after = found[:7]
    if field == "department":  # read as none the departments file has, and not as written
        return f"source id {beside}'s department {read!r} is unknown, {was!r} is known"
    if field.startswith(EXTRA) and field[len(EXTRA) :] not in planner.policy.extended_fields:
        field = ""  # an extra attribute syncd does not write
    if not field:  # a field syncd does not write at the edge (the id): no evidence
        return _unwritten(text, gained, after)
    if beside not in planner.snapshot.employees:
        # Nothing to tell by: a former employee's access waits, a departure goes ahead.
        return f"source id {beside} is not synced yet" if unlock else None
    fields = planner.snapshot.written(Kind.EMPLOYEE, beside) or {}
    written = _written(fields, field, planner.policy.extended_fields)
    if nfc(was) not in written or nfc(read) in written:
        return None
    where = "before" if after else "after"
    how = f"with {text!r} {where} it" if gained else f"without its {text!r} {where} it"
    return f"source id {beside}'s {field} is read {read!r} {how}, written {was!r}"


def _written(fields: Mapping[str, Any], field: str, extended: Mapping[str, str]) -> set[Any]:
    """What syncd last wrote for the field ("" for none): a text as written; a department's
    path as the departments of the positions, or none (the positions may have had no
    department at the edge); an extra attribute as the extended field it maps to."""
    if field == DEPARTMENT_PATH:
        return {"", *fields_departments(Kind.EMPLOYEE.value, fields)}
    if field.startswith(EXTRA):
        return {(fields.get("extended") or {}).get(extended[field[len(EXTRA) :]]) or ""}
    return {fields.get(field) or ""}


def _hold_beside(planner: EmployeePlanner, beside: Mapping[str, str]) -> None:
    """The changes of the rows beside, whose field at the edge may hold or lack the text
    the status moved: a create or update would write the field as the break left it (and
    the next run would find the row as syncd wrote it, the lock or the unlock let go), or
    make an account the row's true field says nobody should have (a row the row filter
    leaves out: "contractor" read "contractorin"); a departure, of someone active the row
    filter leaves out as the break left the field ("Berlin" read "Berl"), would lock them.
    They wait with it (nothing sent through their accounts, not even a photo)."""
    held = [c for c in planner.upserts if c.key in beside]
    gone = [
        c
        for c in (*planner.locks, *planner.removes)
        if c.key in beside and _left_active(planner, c)
    ]
    if not (held or gone):
        return
    planner.upserts = [c for c in planner.upserts if c.key not in beside]
    waiting = {id(c) for c in gone}
    planner.locks = [c for c in planner.locks if id(c) not in waiting]
    planner.removes = [c for c in planner.removes if id(c) not in waiting]
    for change in (*held, *gone):
        planner.untouched.add(change.key)
        planner.notes.append(
            Note(
                "conflict" if change.record is not None else ACCESS_KEPT,  # a departure
                change.key,
                f"{change.display}: the {change.action.value} waits with {beside[change.key]} "
                "beside it: a line break moved across the edge of their rows may have moved "
                "text between this row's field at the edge and that row's status",
            )
        )


def _left_active(planner: EmployeePlanner, change: Change) -> bool:
    """Whether a lock or removal is a departure of someone active: absent from the read (a
    row filter may have left them out), their account not locked."""
    if change.record is not None:
        return False
    synced = planner.snapshot.employees.get(change.key)
    return synced is not None and not synced.locked


def _unwritten(text: str, gained: bool, after: bool) -> str:
    """Why a status beside a field syncd does not write waits: nothing tells."""
    if gained:
        edge = "starts" if after else "ends"
        return f"the row beside {edge} with {text!r} in a field syncd does not write as read"
    edge = "first" if after else "last"
    return f"the row beside's {edge} field, not written as read, may have lost {text!r}"
