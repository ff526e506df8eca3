"""Rows: each record of a file read as an item or set aside, judged with its neighbours.

A damaged record can make the records next to it read well and wrongly: the halves of a
row a stray line break split, a row whose field over several lines lost its opening quote
(its first line may have the header's width, every cell shifted). Both readers, people
and departments, sort their records here; what a row reads as is theirs to say.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from syncd.model import RejectedRow
from syncd.sources.csv.columns import _Columns, _is_blank
from syncd.sources.csv.records import _Broken

T = TypeVar("T")

# A record with text: its line, its cells, and what it was read as: an item (True), a row
# set aside (False), or nothing (None: left out by a row filter).
_Last = tuple[int, list[str], bool | None]

# What a row reads as: an item, why it is set aside, or None (left out by a row filter).
Read = Callable[[list[str], str], T | str | None]
# The rejected row for (where, reason, cells, whether it may hide others, the texts in it).
Rejection = Callable[[str, str, list[str] | None, bool, Collection[str]], RejectedRow]
# Told each record after the one before it (their cells), before it is read: a value a line
# break moved across the rows' edge may have made another (syncd.sources.csv.moved_breaks).
Beside = Callable[[list[str], list[str]], None]


class Across(Protocol):
    """Told a row set aside (its cells) and the row beside it at its value's edge (the row
    before when ``first``, else the row after), and the line of the row set aside: why the
    row beside is set aside too, when a line break moved across their edge may have left
    that value in neither list and changed the row beside's field there as well
    (syncd.sources.csv.moved_breaks.StatusAcross); None when nothing says so."""

    @property
    def first(self) -> bool: ...

    def __call__(self, cells: list[str], beside: list[str], line: int) -> str | None: ...


@dataclass(frozen=True, slots=True)
class _Held:
    """A record before a row that may show it is not whole: the record (its line, cells,
    and whether it was read as an item), and how many rows were rejected up to it."""

    last: _Last
    at: int
    short: int = 0  # the line of the short row after it, if that is what it is held for


class Rows(Generic[T]):
    """A file's records, each read as an item or set aside with its reason."""

    def __init__(
        self,
        name: str,
        columns: _Columns,
        read: Read[T],
        rejection: Rejection,
        beside: Beside | None = None,
        across: Across | None = None,
    ) -> None:
        self.items: list[tuple[str, T]] = []
        self.rejected: list[RejectedRow] = []
        self._name, self._columns, self._read, self._rejection = name, columns, read, rejection
        self._beside, self._across = beside, across
        # The last record with text, for a row a stray line break split in two (None after a
        # record that did not parse).
        self._last: _Last | None = None
        # A row set aside for its last value (``across``), until the record after it is told.
        self._before: tuple[int, list[str]] | None = None
        # The line of the last record with text when it had fewer fields than the header: the
        # record after it may be its end even when the two joined do not fit the header.
        self._short: int | None = None
        # The record read before that short row, and where its rejection goes among those
        # before it: unless the record after the short row completes it, the short row may be
        # the end of a field whose opening quote was lost, begun in this one.
        self._held: _Held | None = None

    def reject(
        self,
        where: str,
        reason: str,
        cells: list[str] | None,
        hides: bool = False,
        seen: Collection[str] = (),
    ) -> None:
        """Set a row aside; one that may hide others with the texts in it (``seen``: its
        cells, when they are not to name its item)."""
        self.rejected.append(self._rejection(where, reason, cells, hides, seen or cells or ()))

    def sort(self, line: int, cells: list[str] | _Broken) -> None:
        """One record: an item, a rejected row, or nothing (a blank line)."""
        if isinstance(cells, _Broken):
            self._broken(line, cells)
            return
        where, columns, last = f"{self._name}:{line}", self._columns, self._last
        if not cells or (not cells[0].strip() and _is_blank(cells)):
            return
        short, self._short = self._short, None
        before, self._before = self._before, None
        if last is not None and len(last[1]) < columns.min_width and columns.split(last[1], cells):
            # The end of a short row: even when it fits, its cells are shifted (a row cut
            # after its first character reads as a whole row with another id).
            self._release(completed=True)
            self.reject(where, split_tail(last[0]), None, hides=True, seen=cells)
            self._last = (line, cells, False)
            return
        if self._held is not None:  # as a rule not: it is a row before a short one
            self._release(completed=False)
        if (len(cells) != columns.width or columns.unnamed_tail) and (
            misfit := columns.misfit(cells)
        ) is not None:
            self._misfit(line, cells, misfit)
            return
        if short is not None:
            # A quote lost in the row as well can give its end the header's width, every cell
            # shifted: "E7," then 'a,"a, a",D7,a,a, a,active' reads as someone with id "a".
            self.reject(where, after_short(short), None, hides=True, seen=cells)
            self._last = (line, cells, False)
            return
        if before is not None and self._moved_after(before, line, cells):
            return
        if self._beside is not None and last is not None:
            self._beside(last[1], cells)
        self._take(line, cells, where)

    def _take(self, line: int, cells: list[str], where: str) -> None:
        """A record of the header's width that nothing beside it shows damaged: read."""
        item = self._read(cells, where)
        if item is None or isinstance(item, str):
            at = len(self.rejected)
            if item is not None:
                self.reject(where, item, cells)
            self._moved_before(line, cells, at)
            self._last = (line, cells, False if item is not None else None)
            return
        self.items.append((where, item))
        self._last = (line, cells, True)

    def _moved_before(self, line: int, cells: list[str], at: int) -> None:
        """A row just set aside or left out: the row before it set aside too (its rejection
        the ``at``-th), when ``across`` says a line break moved across their edge may have
        changed its last field; or the row after, told when it comes."""
        across, last = self._across, self._last
        if across is None:
            return
        if not across.first:
            self._before = (line, cells)
            return
        if last is None or last[2] is False:
            return  # none, or set aside already
        why = across(cells, last[1], line)
        if why is None:
            return
        head = f"{self._name}:{last[0]}"
        if last[2] and self.items and self.items[-1][0] == head:
            self.items.pop()
        self._aside_at_edge(head, why, last[1], -1)
        self.rejected.insert(at, self.rejected.pop())  # in the order of the file's lines

    def _moved_after(self, before: tuple[int, list[str]], line: int, cells: list[str]) -> bool:
        """Whether this record is set aside as the row after one set aside for its last
        value, which ``across`` says a line break moved across their edge may have made."""
        assert self._across is not None
        why = self._across(before[1], cells, before[0])
        if why is None:
            return False
        self._aside_at_edge(f"{self._name}:{line}", why, cells, 0)
        self._last = (line, cells, False)
        return True

    def _aside_at_edge(self, where: str, why: str, cells: list[str], edge: int) -> None:
        """A row whose field at ``edge`` cannot be trusted, set aside as naming its record
        by its other cells (that field left out, as if empty)."""
        trusted = cells.copy()
        trusted[edge] = ""
        self.reject(where, why, trusted)

    def _broken(self, line: int, broken: _Broken) -> None:
        """A record that cannot be used; the one before it too, when this one starts with
        the end of a field whose opening quote was lost, or may be its end (the file's last
        line, "- left" after "…,Active": a line break moved into its last field)."""
        last, columns = self._last, self._columns
        self._release(completed=False)
        if last is not None and broken.cells and _closes_a_field(broken.cells[0]):
            self._set_aside(_Held(last, len(self.rejected)), quote_closed_after(line))
        elif last is not None and broken.fields and columns.split(last[1], broken.fields):
            self._set_aside(_Held(last, len(self.rejected)), split_head(line))
        where, hides = f"{self._name}:{line}", columns.hides_rows(broken)
        self.reject(where, columns.reason(broken), broken.cells, hides, seen=broken.mentions)
        self._last = self._short = self._before = None

    def end(self) -> None:
        """After the last record: a short row at the file's end is completed by nothing."""
        self._release(completed=False)

    def _misfit(self, line: int, cells: list[str], misfit: str) -> None:
        """A record with the wrong number of fields; the one before it too, when this one
        may be its end (its last field may be cut short), or held until the record after
        says whether it completes this one."""
        last = self._last
        short = len(cells) < self._columns.min_width
        if last is not None and short:
            if self._columns.split(last[1], cells):
                self._set_aside(_Held(last, len(self.rejected)), split_head(line))
            else:
                self._held = _Held(last, len(self.rejected), line)
        self.reject(f"{self._name}:{line}", misfit, cells, hides=True)
        self._last = (line, cells, False)
        self._short = line if short else None

    def _release(self, *, completed: bool) -> None:
        """The record held before a short row: kept when the record after the short row
        completes it (a row a stray line break split), else set aside."""
        held, self._held = self._held, None
        if held is not None and not completed:
            self._set_aside(held, before_short(held.short))

    def _set_aside(self, held: _Held, reason: str) -> None:
        """A record read as an item, or set aside as departed, set aside again as a row
        that may hide others (its last field may be cut short, its cells shifted)."""
        (line, cells, read), at = held.last, held.at
        head = f"{self._name}:{line}"
        if read and self.items and self.items[-1][0] == head:
            self.items.pop()
        elif at and self.rejected[at - 1].where == head and self.rejected[at - 1].departed:
            at -= 1
            del self.rejected[at]
        else:
            return
        self.reject(head, reason, cells[:-1], hides=True, seen=cells)
        self.rejected.insert(at, self.rejected.pop())  # in the order of the file's lines


def _closes_a_field(cell: str) -> bool:
    """Whether a record's first cell ends in a quote it never opened: the end of a quoted
    field whose opening quote was lost, begun in the record before it."""
    return cell.endswith('"') and not cell.startswith('"')


# Why a row beside a damaged one is set aside.


def split_tail(head_line: int) -> str:
    return (
        f"the row may be the end of the short row on line {head_line}, split from it by a "
        "stray line break: it is nobody's row alone"
    )


def split_head(tail_line: int) -> str:
    return (
        f"the row may be cut short by a stray line break (line {tail_line} would complete it): "
        "its last field cannot be trusted"
    )


def after_short(short_line: int) -> str:
    return (
        f"the row follows the short row on line {short_line} and may be its end, every cell "
        "shifted by a quote lost as well: it is nobody's row alone"
    )


def before_short(short_line: int) -> str:
    return _begun_here(f"the short row on line {short_line} is not completed by the row after it")


def quote_closed_after(line: int) -> str:
    return _begun_here(f"the record on line {line} starts with a field that ends in a stray quote")


def _begun_here(what: str) -> str:
    """The row before ``what``: it may be where a field whose opening quote was lost began."""
    return (
        f"{what}, so it may be the end of a field begun here whose opening quote was lost: "
        "this row's cells cannot be trusted"
    )
