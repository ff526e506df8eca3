"""Statuses a moved line break may have made: a lock or an unlock that waits for the rows.

Where a CSV file has the status first in each row and one status value is another of the
other meaning with text before it ("inactive" is "in" + "active"), a line break moved
across the edge of two rows turns one into the other: "…,Lin" + "inactive,…" reads as
"…,Linin" + "active,…" (a former employee back) and "…,Lin" + "active,…" as "…,L" +
"inactive,…" (someone active gone); each row reads well. The reader notes each row whose
status may be so (``Directory.moved_statuses``). Where what syncd wrote for the row
before's last field is what the read gives with the text moved back ("Lin" written,
"Linin" or "L" read), the unlock or the lock waits, and the run is partial and says why;
an unlock waits too where nothing can tell (syncd holds nobody under that row, or its last
field is one syncd does not write, such as the id); a lock waits where the row before
reads with a department the file does not have that the text moved back makes one it has
("adm" + "in": "admin", the department last). A row before that reads as syncd wrote
it ("Lin", then "active") shows nothing moved. A join of several sources does not carry
these notes (its keys are not the file's ids): there the status is taken as it reads.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.model import Employee, Kind, MovedStatus
from syncd.plan.values import ACCESS_KEPT, Change, Note
from syncd.spelling import nfc

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner


def spare_moved_statuses(planner: EmployeePlanner) -> None:
    """The locks and unlocks planned for rows whose status may be what a moved line break
    made, taken back: each is said."""
    if not planner.directory.moved_statuses:
        return  # as a rule
    planner.locks = [c for c in planner.locks if not _waits(planner, c)]
    planner.unlocks = [c for c in planner.unlocks if not _waits(planner, c)]


def _waits(planner: EmployeePlanner, change: Change) -> bool:
    found = planner.directory.moved_statuses.get(change.key)
    if found is None or not isinstance(change.record, Employee):
        return False
    why = _moved(planner, found)
    if why is None:
        return False
    what = "unlock" if found.gained else "lock"
    planner.notes.append(
        Note(
            ACCESS_KEPT,
            change.key,
            f"{change.record.username}: the row's status may be another's that a line break "
            f"moved across the edge with the row before made so ({why}): the {what} waits "
            "until the rows read as syncd wrote them",
        )
    )
    return True


def _moved(planner: EmployeePlanner, found: MovedStatus) -> str | None:
    """Why the row before shows the text moved, or None when it reads as syncd wrote it."""
    before, field, read, text, gained = found
    if field == "department":  # read as none the departments file has, and not as written
        return f"source id {before}'s department {read!r} is unknown, {read + text!r} is known"
    if not field:  # a last field syncd does not write (the id, the department): no evidence
        return f"the row before ends with {text!r} in a field syncd does not write"
    if before not in planner.snapshot.employees:
        # Nothing to tell by: a former employee's access waits, a departure goes ahead.
        return f"source id {before} is not synced yet" if gained else None
    written = (planner.snapshot.written(Kind.EMPLOYEE, before) or {}).get(field)
    was = read[: len(read) - len(text)] if gained else read + text
    if written is None or written != nfc(was):
        return None
    how = f"with {text!r} after it" if gained else f"without its last {text!r}"
    return f"source id {before}'s {field} is read {read!r} {how}, written {written!r}"
