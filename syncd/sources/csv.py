"""The CSV source: HR exports read into a Directory.

Two layouts: ``two_files`` (an employees file whose department column holds a department
id, and a departments file), and ``paths`` (one employees file whose department column
holds a path such as ``Head Office/R&D/Backend``; the tree is derived from the paths and
a department's id is its normalized path, so it stays the same from run to run).

A row that cannot be used is set aside with the file, the line it starts on and a reason;
the other rows are still used. A problem with a whole file (missing, unreadable, not
decodable, a configured column absent from the header) raises SourceError instead: a
file that cannot be read is never taken for an empty one.
"""

from __future__ import annotations

import codecs
import csv
import itertools
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, TextIO, TypeVar

from syncd._gc import collection_paused
from syncd.config import CsvDepartmentColumns, CsvEmployeeColumns, CsvSource
from syncd.errors import SourceError
from syncd.mapping import RuleFailure, Rules, SourceMapping, with_mapped
from syncd.model import (
    Department,
    Directory,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
    normalize_gender,
)
from syncd.sources._paths import DepartmentPaths
from syncd.sources._text import (
    declared_delimiter,
    delimiter_from_setting,
    ends_inside_quotes,
    header_key,
    parse_date,
    parse_flag,
    parse_int32,
    shown,
    sniff_delimiter,
    split_list,
)
from syncd.sources._trace import Outcome, Tracer

FIELD_LIMIT = 1024 * 1024  # characters in one field; a longer one rejects its row
AUTO = "auto"
FALLBACK_ENCODING = "gb18030"  # what Excel in China writes; GBK and GB2312 are subsets of it
# A file with this many non-ASCII characters that decode as UTF-8 before a bad byte is taken
# for damaged UTF-8: read as GB18030 every name would become mojibake. In a GB18030 file the
# first Chinese character already fails as UTF-8 about 9 times in 10, the first two ~99 in 100.
UTF8_EVIDENCE = 2
_PREFIX_CHARS = 4096  # how much of an unparseable line is read again to name its person
_SHOWN_HEADER_CELLS = 40
_DECODE_CHUNK = 1 << 20
_SNIFFED_CHARS = 65536  # of the header line: names are short, a broken header may not be
_REPEATED_HEADER = "the row repeats the header (were two exports joined into one file?)"
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

T = TypeVar("T")


def read_csv(
    settings: CsvSource, *, mapping: SourceMapping | None = None, trace: Tracer | None = None
) -> Directory:
    """Read the configured CSV files into a complete Directory, or raise SourceError.

    ``mapping``: the rules (source.mapping); ``trace`` is told of every person read.
    """
    for key in ("path_separator", "positions_separator"):
        if not getattr(settings, key):
            raise SourceError(f"source.csv.{key} is empty: set a character such as '/' or ';'")
    # The limit is process-wide in the csv module: set it on every read, in case it was changed.
    csv.field_size_limit(FIELD_LIMIT)
    rules = Rules(mapping) if mapping is not None and not mapping.empty else None
    with collection_paused():
        return _read(settings, _Mapping(rules, trace))


@dataclass(frozen=True, slots=True)
class _Mapping:
    rules: Rules | None
    trace: Tracer | None


def _read(settings: CsvSource, mapping: _Mapping) -> Directory:
    if settings.layout == "two_files":
        assert settings.departments is not None  # the settings validator requires it
        departments = _read_file(
            settings.departments,
            "source.csv.departments",
            settings,
            lambda table: _read_departments(table, settings.department_columns),
        )
        people = _read_file(
            settings.employees,
            "source.csv.employees",
            settings,
            lambda table: _read_employees(table, settings, _DepartmentIds(), mapping),
        )
        files = [settings.employees, settings.departments]
    else:
        people = _read_file(
            settings.employees,
            "source.csv.employees",
            settings,
            lambda table: _read_employees(
                table, settings, DepartmentPaths(settings.path_separator), mapping
            ),
        )
        departments = _DepartmentsRead(people.departments, [])
        files = [settings.employees]
    return build_directory(
        departments.items,
        people.items,
        rejected=departments.rejected + people.rejected,
        complete=True,
        source="csv:" + ",".join(str(f) for f in files),
        filtered=people.filtered,
    )


# ---------------------------------------------------------------- files and encodings


def _read_file(path: Path, setting: str, settings: CsvSource, consume: Callable[[_Table], T]) -> T:
    """Open a CSV file in its encoding for ``consume`` to read; whole-file problems raise.

    With encoding ``auto`` a byte-order mark decides; without one the file is read as UTF-8,
    and read again from the start as GB18030 if it is not UTF-8.
    """
    _check_file(path, setting)
    if settings.encoding.strip().casefold() != AUTO:
        encoding = _encoding_named(settings.encoding)
        if not encoding.startswith("utf") and _plainly_utf8(path):
            raise SourceError(
                f"{path}: the file is UTF-8 (its text beyond ASCII decodes as UTF-8), but "
                f"source.csv.encoding is {settings.encoding!r}: read so, every name would be "
                "garbled; set source.csv.encoding to 'utf-8' or 'auto'"
            )
        try:
            return _consume(path, encoding, settings.delimiter, consume)
        except UnicodeDecodeError:
            raise _undecodable(path, [encoding]) from None
    marked = _encoding_from_bom(path)
    if marked is not None:  # a byte-order mark settles the question
        try:
            return _consume(path, marked, settings.delimiter, consume)
        except UnicodeDecodeError:
            raise _undecodable(path, [marked]) from None
    try:
        return _consume(path, "utf-8", settings.delimiter, consume)
    except UnicodeDecodeError:
        pass
    fault = _first_undecodable(path, "utf-8")
    if fault is not None and fault.non_ascii_before >= UTF8_EVIDENCE:
        raise SourceError(
            f"{path}: not valid UTF-8 at line {fault.line} (byte offset {fault.offset}), although "
            "the text before it is UTF-8: the file looks damaged. If it is in another encoding, "
            "set source.csv.encoding"
        )
    try:
        return _consume(path, FALLBACK_ENCODING, settings.delimiter, consume)
    except UnicodeDecodeError:
        raise _undecodable(path, ["utf-8", FALLBACK_ENCODING]) from None


def _plainly_utf8(path: Path) -> bool:
    """Whether a file has a UTF-8 BOM, or decodes as UTF-8 with text beyond ASCII."""
    try:
        data = path.read_bytes()
    except OSError:
        return False  # _consume opens it again and says why it cannot
    if data.startswith(codecs.BOM_UTF8):
        return True
    try:
        return _count_non_ascii(data.decode("utf-8")) >= UTF8_EVIDENCE
    except UnicodeDecodeError:
        return False


def _check_file(path: Path, setting: str) -> None:
    try:
        info = path.stat()
    except FileNotFoundError:
        raise SourceError(f"{path}: file not found ({setting})") from None
    except PermissionError:
        raise SourceError(f"{path}: cannot be read (permission denied)") from None
    except OSError as exc:
        raise SourceError(f"{path}: cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        raise SourceError(f"{path}: is a directory, not a CSV file ({setting})")
    if stat.S_ISREG(info.st_mode) and info.st_size == 0:
        raise SourceError(f"{path}: the file is empty (0 bytes); it needs at least a header")


def _encoding_named(name: str) -> str:
    try:
        found = codecs.lookup(name.strip()).name
    except LookupError:
        raise SourceError(
            f"source.csv.encoding: {name!r} is not an encoding Python knows "
            "(try 'auto', 'utf-8', 'gb18030')"
        ) from None
    return "utf-8-sig" if found == "utf-8" else found  # a BOM is not part of the first cell


def _encoding_from_bom(path: Path) -> str | None:
    try:
        with path.open("rb") as fh:
            start = fh.read(4)
    except OSError:
        return None  # _consume opens it again and says why it cannot
    if start.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if start.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "utf-16"  # Excel's "Unicode text" export
    return None


def _consume(path: Path, encoding: str, delimiter: str, consume: Callable[[_Table], T]) -> T:
    try:
        # newline="": the csv module handles line ends itself, quoted newlines included.
        with open(path, encoding=encoding, newline="") as fh:
            return consume(_Table(path, fh, delimiter))
    except PermissionError:
        raise SourceError(f"{path}: cannot be read (permission denied)") from None
    except IsADirectoryError:
        raise SourceError(f"{path}: is a directory, not a CSV file") from None
    except OSError as exc:
        raise SourceError(f"{path}: reading failed: {exc.strerror or exc}") from None


@dataclass(frozen=True, slots=True)
class _DecodeFault:
    offset: int  # bytes from the start of the file
    line: int
    non_ascii_before: int  # characters beyond ASCII decoded before the fault


def _first_undecodable(path: Path, encoding: str) -> _DecodeFault | None:
    """Where a file first fails to decode, read again in chunks (only after a decode error)."""
    try:
        with path.open("rb") as fh:
            return _decode_fault(fh, encoding)
    except OSError as exc:
        raise SourceError(f"{path}: reading failed: {exc.strerror or exc}") from None


def _decode_fault(fh: BinaryIO, encoding: str) -> _DecodeFault | None:
    """The first fault in decoding a file, reading it in chunks."""
    offset = lines = non_ascii = 0
    pending = b""
    while True:
        chunk = fh.read(_DECODE_CHUNK)
        data = pending + chunk
        try:
            good, pending = data.decode(encoding), b""
        except UnicodeDecodeError as exc:
            # A character cut by the chunk's end is completed by the next chunk.
            if chunk and exc.end == len(data):
                good, pending = data[: exc.start].decode(encoding), data[exc.start :]
            else:
                before = data[: exc.start].decode(encoding)
                return _DecodeFault(
                    offset + exc.start,
                    lines + before.count("\n") + 1,
                    non_ascii + _count_non_ascii(before),
                )
        offset += len(data) - len(pending)
        lines += good.count("\n")
        non_ascii += _count_non_ascii(good)
        if not chunk:
            return None


def _count_non_ascii(text: str) -> int:
    return len(text) - len(text.encode("ascii", "ignore"))


def _undecodable(path: Path, encodings: list[str]) -> SourceError:
    faults = []
    for encoding in encodings:
        encoding = "utf-8" if encoding == "utf-8-sig" else encoding
        fault = _first_undecodable(path, encoding)
        where = f"line {fault.line} (byte offset {fault.offset})" if fault else "its end"
        faults.append(f"not {encoding.upper()} at {where}")
    hint = "save it as UTF-8" if len(encodings) > 1 else "check source.csv.encoding"
    return SourceError(f"{path}: the file cannot be decoded: {'; '.join(faults)}; {hint}")


# ---------------------------------------------------------------- records


@dataclass(frozen=True, slots=True)
class _Broken:
    """A record that could not be parsed, or was parsed but must not be used."""

    reason: str
    cells: list[str] | None  # what could be read of it, to name its person where that is safe
    nul: bool = False  # parsed, but a cell holds NUL characters


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
        self._nul: list[str] = []  # lines with NUL characters seen in that record
        self._lines = _remembered(itertools.chain([first], fh), self._record, self._nul)
        # A file whose header ends in CR LF ends every row so: a last line ending in a bare CR
        # was cut between the two.
        self._line_ends: tuple[str, ...] = ("\n",) if first.endswith("\r\n") else ("\n", "\r")
        self._reader = csv.reader(self._lines, delimiter=self.delimiter, strict=True)
        # The header's columns up to its last named one: columns without a name are never
        # read, so a row may leave trailing ones out. 0 until the header is read.
        self.named_width = 0
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
        reader, record, nul = self._reader, self._record, self._nul
        while True:
            record.clear()
            try:
                cells = next(reader)
            except StopIteration:
                return
            except csv.Error as exc:
                broken = self._unparsed(str(exc))
                nul.clear()
                yield line, broken
            else:
                if nul:
                    nul.clear()
                    yield line, _Broken(f"the row {_NUL_REASON}", cells, nul=True)
                elif self.named_width and not record[-1].endswith(self._line_ends):
                    # Only a file's last line lacks its line end: the file may have been cut
                    # there, even inside the last field, unless a closing quote ends it.
                    if len(cells) < self.named_width:
                        yield line, _Broken(_CUT_SHORT, None)
                    elif _ends_quoted("".join(record), self.delimiter):
                        yield line, cells
                    else:
                        yield line, _Broken(_NO_LINE_END, None)
                else:
                    yield line, cells
            line += len(record)

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
        if too_long or len(self._record) == 1:
            return _Broken(problem, _leading_cells(self._record[0], self.delimiter))
        return _Broken(f"{problem}; the record spans lines that may belong to other rows", None)


def _ends_quoted(text: str, delimiter: str) -> bool:
    """Whether a record's text ends with the quote that closes its last, quoted, field."""
    return text.endswith('"') and ends_inside_quotes(text[:-1], delimiter)


def _remembered(lines: Iterator[str], record: list[str], nul: list[str]) -> Iterator[str]:
    """Pass lines on to the csv reader, keeping those of the current record and any with NUL."""
    for line in lines:
        record.append(line)
        if "\x00" in line:
            nul.append(line)
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


# ---------------------------------------------------------------- columns


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
        self.width = len(table.header)
        self._min_width = table.named_width
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
        """Why a row's number of fields does not fit the header (blank extra cells do fit)."""
        if len(cells) == self.width or self._min_width <= len(cells) < self.width:
            return None
        if len(cells) > self.width and _is_blank(cells[self.width :]):
            return None
        expected = str(self.width)
        if self._min_width < self.width:
            expected = f"{self._min_width} to {self.width}"
        return f"the row has {len(cells)} fields where the header has {expected}"

    def repeats_header(self, cells: list[str]) -> bool:
        """Whether a row is the header again, as when two exports are joined into one file."""
        if self.misfit(cells) is not None:
            return False
        # Not strict: a fitting row may end before trailing unnamed columns, or go past them.
        pairs = zip(cells, self.labels, strict=False)
        return all(cell.replace("\ufeff", "").strip() == label for cell, label in pairs)

    def trusted(self, cells: list[str] | None, index: int | None) -> str | None:
        """A cell that names the row's record, when it can be trusted to (for rejected rows)."""
        if cells is None or index is None:
            return None
        if self.misfit(cells) is None:
            return _clean(_cell(cells, index))
        # A stray or missing delimiter shifts every cell after it: only the first cell is sure.
        return _clean(cells[0]) if index == 0 and cells else None

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


# ---------------------------------------------------------------- departments (two_files)


@dataclass(frozen=True, slots=True)
class _DepartmentsRead:
    items: list[tuple[str, Department]]
    rejected: list[RejectedRow]


def _read_departments(table: _Table, settings: CsvDepartmentColumns) -> _DepartmentsRead:
    columns = _Columns(table)
    at = _resolved(columns, settings, "source.csv.department_columns", ("id", "name", "parent_id"))
    items: list[tuple[str, Department]] = []
    rejected: list[RejectedRow] = []

    def reject(where: str, reason: str, cells: list[str] | None) -> None:
        key = columns.trusted(cells, at["id"])
        rejected.append(RejectedRow(where, reason, Kind.DEPARTMENT, key))

    for line, cells in table.rows:
        where = table.where(line)
        if isinstance(cells, _Broken):
            reject(where, columns.reason(cells), cells.cells)
        elif _is_blank(cells):
            continue
        elif (misfit := columns.misfit(cells)) is not None:
            reject(where, misfit, cells)
        elif columns.repeats_header(cells):
            reject(where, _REPEATED_HEADER, cells)
        else:
            department = _department(cells, at, columns)
            if isinstance(department, Department):
                items.append((where, department))
            else:
                reject(where, department, cells)
    return _DepartmentsRead(items, rejected)


def _department(cells: list[str], at: dict[str, int | None], columns: _Columns) -> Department | str:
    department_id, name = _cell(cells, at["id"]), _cell(cells, at["name"])
    if department_id is None:
        return columns.missing(at["id"])
    if name is None:
        return columns.missing(at["name"])
    sort_order = None
    if (text := _cell(cells, at["sort_order"])) is not None:
        sort_order = parse_int32(text)
        if sort_order is None:
            return columns.not_a_number(at["sort_order"], text)
    return Department(
        id=department_id,
        name=name,
        parent_id=_cell(cells, at["parent_id"]),
        sort_order=sort_order,
        sn=_cell(cells, at["sn"]),
        en_name=_cell(cells, at["en_name"]),
    )


# ---------------------------------------------------------------- departments of employees


class _DepartmentIds:
    """Layout two_files: a department cell holds the department's id."""

    def department_of(self, text: str | None, where: str) -> str | None:
        return text or None  # already trimmed

    def departments(self) -> list[tuple[str, Department]]:
        return []  # they come from the departments file


# ---------------------------------------------------------------- employees


@dataclass(frozen=True, slots=True)
class _EmployeesRead:
    items: list[tuple[str, Employee]]
    rejected: list[RejectedRow]
    departments: list[tuple[str, Department]]  # layout paths: those on the paths read
    filtered: int  # rows the row filter left out


def _read_employees(
    table: _Table,
    settings: CsvSource,
    department_of: _DepartmentIds | DepartmentPaths,
    mapping: _Mapping,
) -> _EmployeesRead:
    columns = _Columns(table)
    reader = _EmployeeReader(columns, settings, department_of, mapping)
    items: list[tuple[str, Employee]] = []
    rejected: list[RejectedRow] = []

    def reject(where: str, reason: str, cells: list[str] | None) -> None:
        key, username = columns.trusted(cells, reader.id), columns.trusted(cells, reader.username)
        rejected.append(RejectedRow(where, reason, Kind.EMPLOYEE, key, username))

    width, name = columns.width, table.name
    for line, cells in table.rows:
        where = f"{name}:{line}"
        if isinstance(cells, _Broken):
            reject(where, columns.reason(cells), cells.cells)
        elif len(cells) != width and (misfit := columns.misfit(cells)) is not None:
            if not _is_blank(cells):
                reject(where, misfit, cells)
        else:
            employee = reader.employee(cells, where)
            if isinstance(employee, Employee):
                items.append((where, employee))
            elif employee is not None and not _is_blank(cells):
                reject(where, employee, cells)
    return _EmployeesRead(items, rejected, department_of.departments(), reader.filtered)


_ABSENT = -1  # the index of a column the file lacks: it reads the "" appended to each row


@dataclass(frozen=True, slots=True)
class _EmployeeIndexes:
    """Where each employee column is in a row, or _ABSENT."""

    id: int
    username: int
    name: int
    department: int
    positions: int
    en_name: int
    email: int
    mobile: int
    tel: int
    sn: int
    gender: int
    birthday: int
    job_title: int
    sort_order: int
    senior: int
    status: int


class _EmployeeReader:
    """Turns one row of the employees file into an Employee, or says why it cannot."""

    def __init__(
        self,
        columns: _Columns,
        settings: CsvSource,
        department_of: _DepartmentIds | DepartmentPaths,
        mapping: _Mapping,
    ) -> None:
        required = ("id", "username", "name", "department")
        at = _resolved(columns, settings.columns, "source.csv.columns", required)
        self.id, self.username = at["id"], at["username"]
        self._id_label = columns.label(self.id)
        self._at = _EmployeeIndexes(**{f: _ABSENT if i is None else i for f, i in at.items()})
        extras = [
            (attribute, columns.find(header, "source.csv.extra_columns", required=True))
            for header, attribute in settings.extra_columns.items()
        ]
        self._extras = sorted((a, i) for a, i in extras if i is not None)
        self._columns = columns
        self.filtered = 0  # rows the row filter left out
        self._mapping = mapping
        self._own = {f: i for f, i in at.items() if i is not None}
        self._own.update((a, i) for a, i in self._extras)
        self._ruled_at = self._at
        self._ruled: tuple[str, ...] = ()
        if mapping.rules is not None:
            self._ruled = tuple(mapping.rules.fields)
            # Rows laid out to the header's width, an empty cell, then the ruled values.
            width = columns.width
            ruled = {name: width + 1 + n for n, name in enumerate(self._ruled)}
            for name, index in ruled.items():
                columns.virtual[index] = f"source.mapping.fields.{name}"
            self._ruled_at = _EmployeeIndexes(
                **{f: ruled.get(f, width if i is None else i) for f, i in at.items()}
            )
            for attribute, setting in mapping.rules.attributes().items():
                columns.find(attribute, setting, required=True)
        if mapping.trace is not None:
            mapping.trace.start({f: (columns.label(i),) for f, i in self._own.items()})
        self._departed = frozenset(v.strip().casefold() for v in settings.departed_values)
        self._positions_separator = settings.positions_separator
        self._department_of = department_of.department_of
        self._primary: dict[tuple[str, str | None], Position] = {}
        self._secondary: dict[str, Position] = {}
        self._dates: dict[str, str | None] = {}  # birthdays repeat: parse each text once

    def employee(self, cells: list[str], where: str) -> Employee | str | None:
        """The row's Employee, or why it is rejected; None when the row filter leaves it out."""
        values = [cell.strip() for cell in cells]
        values.append("")  # what every column the file lacks reads as (index _ABSENT)
        at = self._at
        if values[at.id] == self._id_label and self._columns.repeats_header(cells):
            return _REPEATED_HEADER
        if self._mapping.rules is None and self._mapping.trace is None:
            return self._employee(values, at, where)
        return self._mapped(values, where)

    def _mapped(self, values: list[str], where: str) -> Employee | str | None:
        """The row by the mapping rules (see syncd.mapping), told to the trace if any."""
        rules, trace, columns = self._mapping.rules, self._mapping.trace, self._columns

        def get(attribute: str) -> str | None:
            index = columns.find(attribute, "", required=False)
            return values[index] or None if index is not None and index < len(values) else None

        outcome: Employee | str | None
        if rules is None:
            outcome = self._employee(values, self._at, where)
        elif (reason := rules.left_out(get)) is not None:
            self.filtered += 1
            if trace is not None:
                trace.record(where, get, Outcome(None, reason, left_out=True))
            return None
        else:
            try:
                mapped = rules.apply(get, lambda section, name: self._own_text(values, name))
            except RuleFailure as exc:
                outcome = str(exc)
            else:
                width = columns.width
                row = values[: min(width, len(values) - 1)]
                row += [""] * (width + 1 - len(row))  # to the header's width, then index width
                row += [mapped.fields[name] or "" for name in self._ruled]
                outcome = self._employee(row, self._ruled_at, where)
                if isinstance(outcome, Employee):
                    outcome = with_mapped(outcome, mapped)
        if trace is not None:
            employee = outcome if isinstance(outcome, Employee) else None
            trace.record(
                where, get, Outcome(employee, outcome if isinstance(outcome, str) else None)
            )
        return outcome

    def _own_text(self, values: list[str], name: str) -> str | None:
        """A field's (or extra attribute's) cell as it is read without a rule."""
        index = self._own.get(name)
        return values[index] or None if index is not None and index < len(values) else None

    def _employee(self, values: list[str], at: _EmployeeIndexes, where: str) -> Employee | str:
        ident, username, name = values[at.id], values[at.username], values[at.name]
        # Departments before the checks: in layout paths, a rejected row's departments exist.
        department_id = self._department_of(values[at.department], where)
        secondary: list[str] = []
        if values[at.positions]:
            secondary = self._departments_in(values[at.positions], where, department_id)
        if not ident:
            return self._columns.missing(at.id)
        if not username:
            return self._columns.missing(at.username)
        if not name:
            return self._columns.missing(at.name)
        parsed = self._parsed(values, at)
        if isinstance(parsed, str):
            return parsed
        birthday, sort_order, senior = parsed
        job_title = values[at.job_title] or None
        return Employee(
            id=ident,
            username=username,
            name=name,
            positions=self._positions(department_id, job_title, secondary),
            en_name=values[at.en_name] or None,
            email=values[at.email] or None,
            mobile=values[at.mobile] or None,
            tel=values[at.tel] or None,
            sn=values[at.sn] or None,
            gender=normalize_gender(values[at.gender]),
            birthday=birthday,
            job_title=job_title,
            sort_order=sort_order,
            senior=senior,
            state=self._state(values[at.status]),
            extra=self._extra(values),
        )

    def _parsed(
        self, values: list[str], at: _EmployeeIndexes
    ) -> tuple[str | None, int | None, bool] | str:
        """Birthday, sort order and senior flag, or the reason one of them is not valid."""
        columns = self._columns
        birthday = sort_order = None
        senior = False
        if text := values[at.birthday]:
            birthday = self._date(text)
            if birthday is None:
                return (
                    f"column {columns.label(at.birthday)!r}: {shown(text)} is not a date "
                    "(YYYY-MM-DD, YYYY/MM/DD or YYYYMMDD)"
                )
        if text := values[at.sort_order]:
            sort_order = parse_int32(text)
            if sort_order is None:
                return columns.not_a_number(at.sort_order, text)
        if text := values[at.senior]:
            flag = parse_flag(text)
            if flag is None:
                return (
                    f"column {columns.label(at.senior)!r}: {shown(text)} is neither yes "
                    "(1, true, yes, y, 是) nor no (0, false, no, n, 否)"
                )
            senior = flag
        return birthday, sort_order, senior

    def _state(self, status: str) -> State:
        return State.DEPARTED if status.casefold() in self._departed else State.ACTIVE

    def _extra(self, values: list[str]) -> tuple[tuple[str, str], ...]:
        if not self._extras:
            return ()
        return tuple((attribute, values[i]) for attribute, i in self._extras if values[i])

    def _date(self, text: str) -> str | None:
        if text in self._dates:
            return self._dates[text]
        date = self._dates[text] = parse_date(text)
        return date

    def _departments_in(self, text: str, where: str, primary: str | None) -> list[str]:
        items = split_list(text, self._positions_separator)
        found = (self._department_of(item, where) for item in items)
        return list(dict.fromkeys(d for d in found if d is not None and d != primary))

    def _positions(
        self, department_id: str | None, job_title: str | None, secondary: list[str]
    ) -> tuple[Position, ...]:
        # Positions are frozen values: the many people who share one share one object.
        positions: list[Position] = []
        if department_id is not None:
            key = (department_id, job_title)
            primary = self._primary.get(key)
            if primary is None:
                primary = self._primary[key] = Position(department_id, job_title, primary=True)
            positions.append(primary)
        for other in secondary:
            position = self._secondary.get(other)
            if position is None:
                position = self._secondary[other] = Position(other)
            positions.append(position)
        return tuple(positions)


# ---------------------------------------------------------------- cells


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


def _is_blank(cells: list[str]) -> bool:
    return not any(cell.strip() for cell in cells)
