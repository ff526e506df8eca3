"""Columns: the settings' names found in the header, and cells read from a row."""

from __future__ import annotations

from syncd.config import CsvDepartmentColumns, CsvEmployeeColumns
from syncd.errors import SourceError
from syncd.sources._text import (
    header_key,
    shown,
)
from syncd.sources.csv.records import _NUL_REASON, _SHOWN_HEADER_CELLS, _Broken, _Table


class _Columns:
    """Column indexes of a header, resolved once from the settings' column names."""

    def __init__(self, table: _Table) -> None:
        self._path = table.path
        self.labels = table.header
        self._index: dict[str, int] = {}
        self._seen_twice: dict[str, list[int]] = {}
        for i, cell in enumerate(table.header):
            key = header_key(cell)
            if not key:
                continue
            if key in self._index:
                self._seen_twice.setdefault(key, [self._index[key]]).append(i)
            else:
                self._index[key] = i
        self._keys = [header_key(cell) for cell in table.header]
        self._named_keys = sorted(key for key in self._keys if key)
        self.width = len(table.header)
        self.min_width = table.named_width
        # The header ends in columns without a name: a row's text there is not its own.
        self.unnamed_tail = self.min_width < self.width
        # The columns a row may end at: its last named one, and the header's last.
        self.last = (self.min_width - 1, self.width - 1)
        self.virtual: dict[int, str] = {}  # indexes past the header: what mapping rules made

    def find(self, column: str | None, setting: str, *, required: bool) -> int | None:
        """The index of a configured column; a required one absent from the header raises."""
        if column is None:
            return None
        key = header_key(column)
        if key in self._seen_twice:
            places = " and ".join(str(i + 1) for i in self._seen_twice[key])
            raise SourceError(
                f"{self._path}: column {column!r} ({setting}) appears more than once in the "
                f"header (columns {places}): rename one of them"
            )
        index = self._index.get(key)
        if index is None and required:
            raise SourceError(
                f"{self._path}: column {column!r} ({setting}) is not in the header; "
                f"the header has: {self._listed()}"
            )
        return index

    def _listed(self) -> str:
        cells = [repr(cell) for cell in self.labels if cell]
        if len(cells) > _SHOWN_HEADER_CELLS:
            more = len(cells) - _SHOWN_HEADER_CELLS
            cells = [*cells[:_SHOWN_HEADER_CELLS], f"... and {more} more"]
        return ", ".join(cells) or "(no names)"

    def misfit(self, cells: list[str]) -> str | None:
        """Why a row's fields do not fit the header: too few, or text past its named columns.

        Blank cells past the header's last named column fit (spreadsheets add them). Text
        there is not the row's own: a lost line break joined the next row to it, or a
        stray delimiter shifted its cells.
        """
        count = len(cells)
        if count == self.width and not self.unnamed_tail:
            return None
        if count >= self.min_width and _is_blank(cells[self.min_width :]):
            return None
        expected = str(self.width)
        if self.unnamed_tail:
            expected = f"{self.min_width} to {self.width}"
            if self.min_width <= count <= self.width:
                column = next(n for n in range(self.min_width, count) if not _is_empty(cells[n]))
                return (
                    f"the row has text in column #{column + 1}, which the header does not name "
                    f"(it names columns 1 to {self.min_width})"
                )
        fields = "field" if count == 1 else "fields"
        return f"the row has {count} {fields} where the header has {expected}"

    def hides_rows(self, broken: _Broken) -> bool:
        """Whether a broken record may hold or hide other rows than its own."""
        return broken.fields is None or self.misfit(broken.fields) is not None

    def split(self, head: list[str], tail: list[str]) -> bool:
        """Whether two records read as one row that fits the header when joined by a line
        break inside a field: a row a stray line break split in two."""
        if not head or not tail:
            return False
        return self.misfit([*head[:-1], head[-1] + "\n" + tail[0], *tail[1:]]) is None

    def repeats_header(self, cells: list[str], where: str) -> bool:
        """Whether a row is the header again, as when two exports are joined into one file
        (its names in any letter case, a byte order mark before them).

        The header again with its columns in another order raises SourceError: the rows
        after it are laid out by that header, and read under the first one an id would be
        read as a username (people locked as leavers, accounts made for their ids).
        """
        keys = [header_key(cell) for cell in cells]
        if sorted(key for key in keys if key) != self._named_keys:
            return False
        found = [(cell, key) for cell, key in zip(cells, keys, strict=True) if key]
        order = [(label, key) for label, key in zip(self.labels, self._keys, strict=True) if key]
        pairs = zip(found, order, strict=True)
        moved = next(((cell, label) for (cell, k), (label, j) in pairs if k != j), None)
        if moved is None:
            return True
        raise SourceError(
            f"{where}: this row is the header again, with its columns in another order "
            f"({moved[0].strip()!r} where the first header has {moved[1]!r}): two exports "
            "joined into one file? The rows after it cannot be read under the first header; "
            "export the file again, or give each export a file of its own"
        )

    def trusted(self, cells: list[str] | None, index: int | None) -> str | None:
        """A cell that names the row's record, when it can be trusted to (for rejected rows)."""
        if cells is None or index is None:
            return None
        if self.misfit(cells) is None:
            return _clean(_cell(cells, index))
        # A stray or missing delimiter shifts every cell after it: only the first cell is sure,
        # but for a row's last, which a stray line break may have cut ("E1" of "E14").
        return _clean(cells[0]) if index == 0 and len(cells) > 1 else None

    def reason(self, broken: _Broken) -> str:
        """Why a broken record is rejected, naming the column where that can be known."""
        if broken.nul and broken.cells is not None and self.misfit(broken.cells) is None:
            index = next(i for i, cell in enumerate(broken.cells) if "\x00" in cell)
            return f"column {self.label(index)!r} {_NUL_REASON}"
        return broken.reason

    def label(self, index: int | None) -> str:
        """A column's name in the header, or its number when it has none."""
        if index is None:
            return "?"
        if index in self.virtual:
            return self.virtual[index]
        if index < len(self.labels) and self.labels[index]:
            return self.labels[index]
        return f"#{index + 1}"

    def missing(self, index: int | None) -> str:
        return f"column {self.label(index)!r} is empty, and it is required"

    def not_a_number(self, index: int | None, text: str) -> str:
        return (
            f"column {self.label(index)!r}: {shown(text)} is not a whole number "
            "(from -2147483648 to 2147483647)"
        )


def _resolved(
    columns: _Columns,
    settings: CsvEmployeeColumns | CsvDepartmentColumns,
    prefix: str,
    required: tuple[str, ...],
) -> dict[str, int | None]:
    """Each column setting's index in the header.

    A required column, or an optional one the settings name explicitly, must be in the
    header: a typo must not quietly drop a column. An optional column left at its default
    name may be absent.
    """
    at: dict[str, int | None] = {}
    for field in type(settings).model_fields:
        must = field in required or field in settings.model_fields_set
        at[field] = columns.find(getattr(settings, field), f"{prefix}.{field}", required=must)
    return at


def _cell(cells: list[str], index: int | None) -> str | None:
    """A cell's trimmed text; None when it is empty or its column is not in the file."""
    if index is None or index >= len(cells):
        return None
    return cells[index].strip() or None


def _clean(value: str | None) -> str | None:
    """An identifying cell without NUL characters, which cannot be part of a real id."""
    if value is None:
        return None
    return value.replace("\x00", "").strip() or None


def _is_empty(cell: str) -> bool:
    """A cell with nothing in it. A line break is something: a quoted one may be what is
    left of a row a stray line break split, so a record holding one is never blank."""
    return not cell.strip() and "\n" not in cell and "\r" not in cell


def _is_blank(cells: list[str]) -> bool:
    return all(map(_is_empty, cells))
