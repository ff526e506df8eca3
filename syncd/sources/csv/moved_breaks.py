"""Statuses a line break moved across two rows' edge may have made: what the reader notes.

A status at a row's edge (its first column or its last) shares that edge with the row
beside it, and some vocabularies hold a value that is another of the other meaning with
text at that edge: in the defaults, "inactive" is "in" + "active" (status first); in one
of an HR system's, "Active - left" is "Active" + " - left" (status last). A line break
moved across the edge turns one into the other, and both rows read well: "…,Lin" +
"inactive,…" reads as "…,Linin" + "active,…" (a former employee back), and "…,Active -
left" + "E2,…" as "…,Active" + " - leftE2,…". One of the same meaning ("已离职" is "已" +
"离职") reads the status right and the row beside wrong. The reader notes each row whose
status may be so, with what the row beside shows at that edge (``MovedStatus``); the
plan weighs it against what syncd wrote for that row (syncd.plan.moved_breaks). A break
that leaves the status in neither list sets the row beside aside too (``StatusAcross``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from syncd.config.source import status_key
from syncd.model import MovedStatus, State, moved_back
from syncd.sources._text import shown, split_list

# The text fields syncd writes as read: one at the edge of a row may lose text to the next.
WRITTEN_TEXTS = ("username", "name", "en_name", "email", "mobile", "tel", "sn", "job_title")


# A status value's move: the text moved (as compared, trimmed), whether the row beside
# gained it, whether the value read makes the person active, and whether the value it was
# means the same (then only the row beside is changed).
Move = tuple[str, bool, bool, bool]


def edge_statuses(statuses: Mapping[str, State], first: bool) -> dict[str, list[Move]]:
    """Each status value (as compared) that a moved line break can make of another, with
    its moves, those from a value of the other meaning first. First in its row, a status's
    start moves to or from the row before: "active" is "inactive" whose "in" the row before
    gained, "inactive" is "active" with the row before's lost end; "离职" is "已离职" whose
    "已" it gained (the status right, the row before not). Last, its end moves to or from
    the row after."""
    found: dict[str, list[Move]] = {}
    for value, state in statuses.items():
        for other, meaning in statuses.items():
            moved = _moved_text(value, other, first) if len(other) != len(value) else None
            if moved is not None:
                found.setdefault(value, []).append(
                    (*moved, state is State.ACTIVE, meaning is state)
                )
    for moves in found.values():
        moves.sort(key=lambda move: move[3])  # of the other meaning first
    return found


def _moved_text(value: str, other: str, first: bool) -> tuple[str, bool] | None:
    """The text between ``value`` read and ``other`` written, and whether the row beside
    gained it (``value`` the shorter), when one is the other with text at the edge."""
    shorter, longer = sorted((value, other), key=len)
    if first and longer.endswith(shorter):
        text = longer[: len(longer) - len(shorter)]
    elif not first and longer.startswith(shorter):
        text = longer[len(shorter) :]
    else:
        return None
    return (text.strip(), len(value) < len(other)) if text.strip() else None


@dataclass
class StatusNotes:
    """The rows of a file whose status, at a row's edge, may be what a moved line break
    made (``found``: by source id). ``written``: the text field syncd writes at the edge
    of the row beside (its last column for a status first, its first for a status last),
    if one is (an extra attribute's: ``extra.<name>``); ``departments``: the departments
    file's ids, when a department id is there; ``path_id``: a path's department id, when a
    department path is (``written`` then DEPARTMENT_PATH: the row beside's field is
    compared by the department's id); ``split``: the separator of the departments joined
    in the positions column, when it is there (its item at the edge is weighed);
    ``ruled``: when a mapping rule makes what syncd writes of the field at the edge, that
    value of a row (its cells); ``names``: what names a row's person besides its id (its
    cells: MovedStatus.names)."""

    moves: dict[str, list[Move]]
    status: int  # the status's column: the first, or the last (of those named, when the
    # header ends in columns without a name: a row may end there)
    id: int  # the id's column
    written: str | None
    departments: frozenset[str] | None
    path_id: Callable[[str], str] | None
    split: str | None  # the separator, when the field at the edge is a list (positions)
    ruled: Callable[[list[str]], str] | None
    names: Callable[[list[str]], tuple[tuple[str, str], ...]] | None = None
    found: dict[str, MovedStatus] = field(default_factory=dict)

    @property
    def first(self) -> bool:
        return self.status == 0

    def beside(self, before: list[str], cells: list[str]) -> None:
        """Told a record after the one before it."""
        after = not self.first  # the row beside is the one after (else the one before)
        status, other = (before, cells) if after else (cells, before)
        # Either row may end early, under a header whose last columns have no name: a
        # status last must end the row before.
        if self.id >= min(len(before), len(cells)) or (after and len(before) != self.status + 1):
            return
        shown = status[self.status].strip()
        for move in self.moves.get(status_key(shown), ()):
            found = self._found(shown, other, move, after)
            if found is not None:
                self.found[status[self.id].strip()] = found
                return

    def _found(self, shown: str, other: list[str], move: Move, after: bool) -> MovedStatus | None:
        """The status's note for ``move``, if the row beside (its cells: ``other``) shows
        it, or nothing could."""
        text, gained, active, same = move
        at = 0 if after else -1
        cell = other[at].strip()
        moved = _moved(shown, self._edge(cell, after), text, gained, after)
        if moved is None:
            return None  # the row beside does not show the text it would have gained
        restored = other.copy()
        restored[at] = moved_back(cell, moved, gained, after)
        read, was = self._value(other, after), self._value(restored, after)
        named = self._named(read, was, gained)
        if not (named or active or gained):
            return None  # nothing to tell a lost text by: the departure goes ahead
        beside = other[self.id].strip()
        names = () if self.names is None else self.names(other)
        return MovedStatus(beside, named, read, was, moved, gained, after, same, names)

    def _value(self, cells: list[str], after: bool) -> str:
        """The row beside's field at the edge as syncd writes it: a rule's value; of a
        list, its item there; of a path, its department's id."""
        if self.ruled is not None:
            return self.ruled(cells)
        return self._edge(cells[0 if after else -1].strip(), after)

    def _edge(self, cell: str, after: bool) -> str:
        if self.split is not None:
            cell = (split_list(cell, self.split) or [""])[0 if after else -1]
        return cell if self.path_id is None else self.path_id(cell)

    def _named(self, read: str, was: str, gained: bool) -> str:
        """What the row beside's field at the edge is for the plan (MovedStatus.field)."""
        if read == was:
            return ""  # what syncd writes of it is the same either way: nothing tells
        if self.written is not None:
            return self.written
        ids = self.departments  # a department the file lacks, one it has with the text back
        lost = not gained and ids is not None and read not in ids and was in ids
        return "department" if lost else ""


def _moved(shown: str, edge: str, text: str, gained: bool, after: bool) -> str | None:
    """The text the break moved, as written: where the row beside may have gained it, as
    its field at the edge shows it (None when it does not); else as the status shows it."""
    if not gained:
        return shown[len(shown) - len(text) :] if after else shown[: len(text)]
    moved = edge[: len(text)] if after else edge[len(edge) - len(text) :]
    return moved if status_key(moved) == text else None


@dataclass(frozen=True, slots=True)
class StatusAcross:
    """A status at a row's edge (``status``: its column, the first or the last) that is in
    neither list, where the text across that edge with the row beside, split elsewhere,
    gives a status of either list: a line break moved there may have changed the row
    beside's field at the edge as well ("…,Lin" + "active,…" read as "…,Linac" +
    "tive,…"). Read as it reads, that field would be written changed, or judged so by the
    row filter (an account made for a row it leaves out, a person it keeps taken for a
    leaver); the row beside is set aside instead (syncd.sources.csv.rows.Across)."""

    statuses: Mapping[str, State]  # both lists, as compared (status_key)
    status: int

    @property
    def first(self) -> bool:
        return self.status == 0

    def __call__(self, cells: list[str], beside: list[str], line: int) -> str | None:
        if not self.first and len(cells) != self.status + 1:
            return None  # the row ends before the status: it is not at the row's edge
        value = cells[self.status]
        if status_key(value) in self.statuses:
            return None  # set aside for another field
        text = (beside[-1] + value if self.first else value + beside[0]).strip()
        # Split anywhere, the status is the text's end (first in its row) or its start, no
        # longer than a value in the lists can be written (NFC and case folding aside).
        longest = 4 * max(map(len, self.statuses), default=0)
        for size in range(min(len(text), longest) + 1):
            status = text[len(text) - size :] if self.first else text[:size]
            if status_key(status) in self.statuses:
                field = "last" if self.first else "first"
                return (
                    f"the status on line {line}, {shown(value)}, is in neither list, but read "
                    f"with text across the rows' edge it is {shown(status.strip())}: a line "
                    f"break moved across the edge may have changed this row's {field} field, "
                    "which cannot be trusted"
                )
        return None
