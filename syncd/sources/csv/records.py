"""Records of a CSV file: physical lines joined into rows, and the rows that cannot be read."""

from __future__ import annotations

import csv
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TextIO

from syncd.errors import SourceError
from syncd.sources._text import (
    declared_delimiter,
    delimiter_from_setting,
    ends_inside_quotes,
    has_bare_quote,
    lenient_cells,
    sniff_delimiter,
)

FIELD_LIMIT = 1024 * 1024  # characters in one field; a longer one rejects its row
AUTO = "auto"
FALLBACK_ENCODING = "gb18030"  # what Excel in China writes; GBK and GB2312 are subsets of it
# A file with this many non-ASCII characters that decode as UTF-8 before a bad byte is taken
# for damaged UTF-8: read as GB18030 every name would become mojibake. In a GB18030 file the
# first Chinese character already fails as UTF-8 about 9 times in 10, the first two ~99 in 100.
UTF8_EVIDENCE = 2
_PREFIX_CHARS = 4096  # how much of an unparseable line is read again to name its person
_SHOWN_HEADER_CELLS = 40
_MENTIONED_CHARS = 256  # the longest text of a row that may hide others kept as a mention
_DECODE_CHUNK = 1 << 20
_SNIFFED_CHARS = 65536  # of the header line: names are short, a broken header may not be
_REPEATED_HEADER = "the row repeats the header (were two exports joined into one file?)"
_BARE_QUOTE = (
    "a quote stands inside an unquoted field: a quote was lost or added, so the row's "
    "cells (and the rows near it) cannot be trusted"
)
_NUL_REASON = "contains NUL characters (a binary file, or UTF-16 read as another encoding?)"
_CUT_SHORT = (
    "the file ends in the middle of this row (fewer fields than the header and no line end): "
    "it looks cut short, so rows may be missing"
)
_NO_LINE_END = (
    "the file ends without a line end after this row, so it may be cut short inside its last "
    "field and rows may be missing (exports end every row with a line end; add one if the "
    "file is whole)"
)


@dataclass(frozen=True, slots=True)
class _Broken:
    """A record that could not be parsed, or was parsed but must not be used."""

    reason: str
    cells: list[str] | None  # what could be read of it, to name its person where that is safe
    nul: bool = False  # parsed, but a cell holds NUL characters
    # Its cells, read leniently, when its text is surely one record's alone (one line, or
    # lines none of which reads as a row of its own); None when it may hold other rows.
    fields: list[str] | None = None
    mentions: frozenset[str] = frozenset()  # the texts in it (RejectedRow.mentions)


class _Table:
    """A CSV file's header, then its records, each with the physical line it starts on."""

    def __init__(self, path: Path, fh: TextIO, delimiter: str) -> None:
        self.path = path
        self.name = path.name
        skipped, first = _first_content_line(fh)
        declared = declared_delimiter(first) if first is not None else None
        if declared is not None:  # Excel's "sep=;" line: the header comes after it
            more, first = _first_content_line(fh)
            skipped += 1 + more
        if first is None:
            raise SourceError(f"{path}: has no header: the file holds only blank lines")
        self.delimiter = _delimiter(delimiter, declared, first)
        self._record: list[str] = []  # the physical lines of the record being read
        self._lines = _remembered(itertools.chain([first], fh), self._record)
        # A file whose header ends in CR LF ends every row so: a last line ending in a bare CR
        # was cut between the two.
        self._line_ends: tuple[str, ...] = ("\n",) if first.endswith("\r\n") else ("\n", "\r")
        self._reader = csv.reader(self._lines, delimiter=self.delimiter, strict=True)
        # The header's columns up to its last named one: columns without a name are never
        # read, so a row may leave trailing ones out. 0 until the header is read.
        self.named_width = 0
        # Columns that name a record's person (the employees' id and username): set by the
        # reader of the rows; a line break in one of them makes the record nobody's.
        self.key_columns: tuple[int, ...] = ()
        self.rows = self._records(skipped + 1)
        self.header_line, header = next(self.rows)
        if isinstance(header, _Broken):
            raise SourceError(
                f"{path}: line {self.header_line}: the header cannot be read: {header.reason}"
            )
        self.header = [cell.replace("\ufeff", "").strip() for cell in header]
        self.named_width = max((n + 1 for n, cell in enumerate(self.header) if cell), default=0)

    def where(self, line: int) -> str:
        return f"{self.name}:{line}"

    def _records(self, line: int) -> Iterator[tuple[int, list[str] | _Broken]]:
        reader, record, ends = self._reader, self._record, self._line_ends
        while True:
            record.clear()
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                yield line, self._mentioning(self._unparsed(str(exc)))
            else:
                text = record[0] if len(record) == 1 else "".join(record)
                # As a rule a row is one line, ends with its line end, has no quote and no
                # NUL: then its cells are the row's; anything else is looked at closely.
                if len(record) > 1 or '"' in text or "\x00" in text or not text.endswith(ends):
                    yield line, self._mentioning(self._looked_at(line, record, text, cells))
                else:
                    yield line, cells
            line += len(record)

    def _mentioning(self, found: list[str] | _Broken) -> list[str] | _Broken:
        """A broken record with the texts its lines hold (RejectedRow.mentions)."""
        if not isinstance(found, _Broken):
            return found
        return replace(found, mentions=mentioned("".join(self._record).split(self.delimiter)))

    def _looked_at(
        self, line: int, record: list[str], text: str, cells: list[str]
    ) -> list[str] | _Broken:
        """A parsed record's cells, or why they cannot be trusted: NUL characters, a last
        line cut short, lines that are other rows, a stray quote."""
        suspect = self._multi_line(line, record, cells) if len(record) > 1 else None
        if "\x00" in text:
            whole = cells if suspect is None else None
            return _Broken(f"the row {_NUL_REASON}", cells, nul=True, fields=whole)
        if self.named_width and not text.endswith(self._line_ends):
            # Only a file's last line lacks its line end: the file may have been cut there,
            # even inside the last field; also after a quote, which may have been the first
            # of two standing for one ('"The ""Boss"""' cut to '"The "'). Its cells, when
            # they are one record's alone, may be the end of the row before (Rows._broken).
            reason = _CUT_SHORT if len(cells) < self.named_width else _NO_LINE_END
            return _Broken(reason, None, fields=cells if suspect is None else None)
        if suspect is not None:
            return suspect
        if '"' in text and has_bare_quote(text, self.delimiter):
            return _Broken(_BARE_QUOTE, cells)
        return cells

    def _multi_line(self, line: int, record: list[str], cells: list[str]) -> _Broken | None:
        """Why a record over several lines is not one row's alone, or None when it is."""
        row_like = self._row_inside(line, record)
        if row_like is not None:
            return _swallowed(line, len(record), row_like, cells)
        for index in self.key_columns:
            if index < len(cells) and ("\n" in cells[index] or "\r" in cells[index]):
                label = self.header[index] if index < len(self.header) else f"#{index + 1}"
                return _Broken(
                    f"column {label!r} holds a line break: no id or username has one, so a "
                    "stray line break split the row and it names nobody",
                    None,
                )
        return None

    def _row_inside(self, line: int, record: list[str]) -> str | None:
        """Which lines after a multi-line record's first read as a row of their own (have
        the header's named columns), if any: its quoted field may have swallowed other rows.

        A line alone, or the lines after the first taken together: a swallowed row with a
        line break of its own (its quote lost as well) has the header's width over two."""
        if not self.named_width:
            return None
        together = 1
        for n, text in enumerate(record[1:], 1):
            cells = lenient_cells(text, self.delimiter)
            if len(cells) >= self.named_width and any(cell.strip() for cell in cells):
                return f"line {line + n} reads as a row of its own"
            together += len(cells) - 1
        if together < self.named_width:
            return None
        return f"lines {line + 1} to {line + len(record) - 1} read as a row"

    def _unparsed(self, problem: str) -> _Broken:
        """Skip to the true end of a record the reader gave up on, and say why it is unusable.

        Its person is named only when its lines are sure to be its own: a record whose
        quoting is broken across lines may have swallowed other people's rows, and then
        nobody can be said to have left.
        """
        if problem.startswith("unexpected end of data"):
            return _Broken(
                "the file ends inside a quoted field that starts on this line: it looks cut "
                "short (or a quote is never closed), so rows may be missing",
                None,
            )
        too_long = problem.startswith("field larger than field limit")
        if too_long:
            problem = f"a field is longer than {FIELD_LIMIT:,} characters (the limit)"
        elif "expected after" in problem:
            problem = f"the quoting is malformed ({problem})"
        else:
            problem = f"the row is not valid CSV ({problem})"
        inside = ends_inside_quotes("".join(self._record), self.delimiter)
        while inside:
            line = next(self._lines, None)
            if line is None:
                return _Broken(f"{problem}, and the file ends inside its quoted field", None)
            inside = ends_inside_quotes(line, self.delimiter, inside=True)
        if len(self._record) == 1:
            # Only a field too long is surely this row's alone: broken quoting on one line
            # may be two rows joined ('..."D1"E2,bob,...').
            leading = _leading_cells(self._record[0], self.delimiter)
            whole = lenient_cells(self._record[0], self.delimiter) if too_long else None
            return _Broken(problem, leading, fields=whole)
        if too_long:  # its person is named, but the field may have swallowed other rows
            return _Broken(problem, _leading_cells(self._record[0], self.delimiter))
        return _Broken(f"{problem}; the record spans lines that may belong to other rows", None)


def mentioned(cells: Iterable[str]) -> frozenset[str]:
    """The texts of a record that may hide other rows: each line of each cell, trimmed of
    spaces and quotes, any of which may be a hidden row's username (short ones only)."""
    return frozenset(
        text
        for cell in cells
        for part in cell.splitlines()
        if 0 < len(text := part.strip().strip('"').strip()) <= _MENTIONED_CHARS
    )


def _swallowed(line: int, lines: int, row_like: str, cells: list[str]) -> _Broken:
    reason = (
        f"the record spans lines {line} to {line + lines - 1}, and {row_like}: a quote may be "
        "missing or stray, so the record may hold other people's rows"
    )
    return _Broken(reason, _before_line_breaks(cells))


def _before_line_breaks(cells: list[str]) -> list[str]:
    """A record's cells before its first field with a line break: its own, surely."""
    for n, cell in enumerate(cells):
        if "\n" in cell or "\r" in cell:
            return cells[:n]
    return cells


def _remembered(lines: Iterator[str], record: list[str]) -> Iterator[str]:
    """Pass lines on to the csv reader, keeping those of the current record."""
    for line in lines:
        record.append(line)
        yield line


def _first_content_line(fh: TextIO) -> tuple[int, str | None]:
    """The number of blank lines before the first one with text, and that line."""
    skipped = 0
    for line in iter(fh.readline, ""):
        if line.replace("\ufeff", "").strip():
            return skipped, line
        skipped += 1
    return skipped, None


def _delimiter(setting: str, declared: str | None, header_line: str) -> str:
    if setting.strip().casefold() == AUTO:
        return declared or sniff_delimiter(header_line[:_SNIFFED_CHARS])
    delimiter = delimiter_from_setting(setting)
    if delimiter is None:
        raise SourceError(
            f"source.csv.delimiter: {setting!r} is not a delimiter: use 'auto', ',', ';', 'tab', "
            "'|' or another single character"
        )
    return delimiter


def _leading_cells(line: str, delimiter: str) -> list[str]:
    """The cells a line starts with, read leniently (the last one dropped if the line was cut)."""
    prefix = line[:_PREFIX_CHARS]
    try:
        cells = next(csv.reader([prefix], delimiter=delimiter), [])
    except csv.Error:
        return []
    return cells[:-1] if len(prefix) < len(line) else cells
