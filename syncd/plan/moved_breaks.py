"""Statuses a moved line break may have made: a departure that waits for the rows.

Where a CSV file has the status first in each row and one status value is another of the
other meaning with text before it ("inactive" is "in" + "active"), a line break moved
across the edge of two rows reads "…,Lin" + "active,…" as "…,L" + "inactive,…": someone
active reads as departed, the row before as a name changed. The reader notes each row
whose status may be such a value (``Directory.moved_statuses``: the row before's id, its
last field as read and the text that may be its lost end); when what syncd wrote for that
field is what the read gives with that text after it, the departure waits, and the run is
partial and says why. (The other way, "…,Lin" + "inactive,…" read as "…,Linin" +
"active,…", is the reader's to refuse: syncd.sources.csv.rows.)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from syncd.model import Employee, Kind
from syncd.plan.values import ACCESS_KEPT, Note
from syncd.spelling import nfc

if TYPE_CHECKING:
    from syncd.plan.employees import EmployeePlanner


def spare_moved_statuses(planner: EmployeePlanner) -> None:
    """The locks planned for departed rows whose status may be what a moved line break
    made, taken back: each is said."""
    moved = planner.directory.moved_statuses
    if not moved:
        return  # as a rule
    planner.locks = [
        c
        for c in planner.locks
        if c.key not in moved
        or not isinstance(c.record, Employee)
        or not status_moved(planner, c.record)
    ]


def status_moved(planner: EmployeePlanner, e: Employee) -> bool:
    """Whether this departed row's status may be another's with the lost end of the row
    before: then a note says why nothing is locked."""
    found = planner.directory.moved_statuses.get(e.id)
    if found is None or found[0] not in planner.snapshot.employees:
        return False
    before, field, read, lost = found
    written = (planner.snapshot.written(Kind.EMPLOYEE, before) or {}).get(field)
    if written is None or written != nfc(read.strip() + lost):
        return False
    planner.notes.append(
        Note(
            ACCESS_KEPT,
            e.id,
            f"{e.username}: the row's status may be another with the end of the row before "
            f"(source id {before}'s {field}, written {written!r}, read {read.strip()!r} "
            f"without {lost!r}): a line break moved across the rows' edge reads them so; the "
            "departure waits until the rows read as syncd wrote them",
        )
    )
    return True
