"""Employees: each row read into an Employee value, or set aside with its reason."""

from __future__ import annotations

import sys
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from operator import itemgetter

from syncd.config import CsvSource
from syncd.config.source import status_key
from syncd.mapping import CompiledRule, RuleFailure, Rules, with_mapped
from syncd.model import (
    DEPARTMENT_PATH,
    EXTRA,
    Department,
    Employee,
    Kind,
    MovedStatus,
    Position,
    RejectedRow,
    State,
    normalize_gender,
    row_identifiers,
)
from syncd.sources._paths import DepartmentPaths
from syncd.sources._text import (
    ISO_DAY,
    parse_date,
    parse_flag,
    parse_int32,
    parse_iso_day,
    shown,
    split_list,
)
from syncd.sources._trace import Count, Outcome, Tracer, counted
from syncd.sources.csv.columns import _Columns, _resolved
from syncd.sources.csv.departments import _DepartmentIds
from syncd.sources.csv.moved_breaks import (
    WRITTEN_TEXTS,
    StatusAcross,
    StatusNotes,
    edge_statuses,
)
from syncd.sources.csv.records import _REPEATED_HEADER, _Table, mentioned
from syncd.sources.csv.rows import Rejection, Rows


@dataclass(frozen=True, slots=True)
class _EmployeesRead:
    items: list[tuple[str, Employee]]
    rejected: list[RejectedRow]
    departments: list[tuple[str, Department]]  # layout paths: those on the paths read
    filtered: int  # rows the row filter left out
    status_read: bool = True  # the file has the status column (else everyone reads as active)
    username_edges: frozenset[str] = frozenset()  # Directory.username_edges
    moved_statuses: Mapping[str, MovedStatus] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Mapping:
    rules: Rules | None
    trace: Tracer | None
    count: Count | None = None


def _read_employees(
    table: _Table,
    settings: CsvSource,
    department_of: _DepartmentIds | DepartmentPaths,
    mapping: _Mapping,
) -> _EmployeesRead:
    columns = _Columns(table)
    reader = _EmployeeReader(columns, settings, department_of, mapping)
    table.key_columns = tuple(i for i in (reader.id, reader.username) if i is not None)
    notes = reader.status_notes
    beside = None if notes is None else notes.beside
    rejection = _rejection(columns, reader)
    rows = Rows(table.name, columns, reader.employee, rejection, beside, reader.status_across)
    for line, cells in counted(table.rows, mapping.count):
        rows.sort(line, cells)
    rows.end()
    return _EmployeesRead(
        rows.items,
        rows.rejected,
        department_of.departments(),
        reader.filtered,
        reader.status_read,
        _edges(reader.username, columns),
        {} if notes is None else notes.found,
    )


def _edges(username: int | None, columns: _Columns) -> frozenset[str]:
    """Which edges of a row the username column is at (Directory.username_edges): a header
    that ends in columns without a name has two last columns, its last named one and its
    last."""
    start = {"start"} if username == 0 else set()
    end = {"end"} if username in columns.last else set()
    return frozenset(start | end)


def _rejection(columns: _Columns, reader: _EmployeeReader) -> Rejection:
    """How a row of the employees file is set aside: with the id and username it gives,
    where its cells can be trusted (as read, when it says its person departed), and the
    status that no list names, when that is why."""

    def rejected(
        where: str, reason: str, cells: list[str] | None, hides: bool, seen: Collection[str]
    ) -> RejectedRow:
        key, username = columns.trusted(cells, reader.id), columns.trusted(cells, reader.username)
        departed = isinstance(reason, _DepartedAside)  # as read (and mapped): who left
        if isinstance(reason, _DepartedAside):
            key, username = reason.key, reason.username
        return RejectedRow(
            where,
            reason,
            Kind.EMPLOYEE,
            key,
            username,
            hides,
            status=reason.value if isinstance(reason, _UnnamedStatus) else None,
            identifiers=reader.identifiers(cells),
            departed=departed,
            mentions=mentioned(seen) if hides else frozenset(),
        )

    return rejected


def _status_notes(
    statuses: dict[str, State],
    at: Mapping[str, int | None],
    columns: _Columns,
    extras: list[tuple[str, int]],
    department_of: _DepartmentIds | DepartmentPaths,
    separator: str,
    rules: Rules | None,
) -> StatusNotes | None:
    """What notes the rows whose status, first or last in its row, may be what a moved
    line break made of another (syncd.sources.csv.moved_breaks); None as a rule: the
    status elsewhere, or a vocabulary with no such pair. ``extras``: the extra attributes'
    columns; ``separator``: the positions column's; ``rules``: the mapping's, if any."""
    status = at["status"]
    if status not in (0, *columns.last) or at["id"] is None:
        return None
    first = status == 0
    moves = edge_statuses(statuses, first)
    if not moves:
        return None
    beside = columns.width - 1 if first else 0  # the column at the edge of the row beside
    field = next((f for f, i in at.items() if i == beside and f in WRITTEN_TEXTS), None)
    field = field or next((EXTRA + a for a, i in extras if i == beside), None)
    notes = StatusNotes(moves, status, at["id"], field, None, None, None, None)
    if rules is not None:
        notes = _ruled_notes(notes, rules, columns, beside)
    if at["positions"] == beside:  # departments joined: the one at the edge
        notes = replace(notes, split=separator)
    elif at["department"] != beside:
        return notes
    if isinstance(department_of, _DepartmentIds):  # an id: the departments file tells
        return replace(notes, departments=department_of.ids)
    # A path, written as the department of one of the row's positions, by its id.
    return replace(notes, written=DEPARTMENT_PATH, path_id=department_of.id_of)


def _ruled_notes(notes: StatusNotes, rules: Rules, columns: _Columns, edge: int) -> StatusNotes:
    """The notes where a mapping rule makes what syncd writes of the field at the edge
    from its cell: weighed by the rule's value (``StatusNotes.ruled``)."""
    own = {EXTRA + name: rule for name, rule in rules.extra.items()}
    rule = rules.fields.get(notes.written or "") or own.get(notes.written or "")
    return (
        notes if rule is None else replace(notes, ruled=partial(_rule_value, rule, columns, edge))
    )


def _rule_value(rule: CompiledRule, columns: _Columns, edge: int, cells: list[str]) -> str:
    """What ``rule`` makes of a row (its cells, the field's own at ``edge``); "" for none,
    or when it cannot make anything of it."""
    values = [cell.strip() for cell in cells]
    try:
        return rule.value(_attributes(columns, values), values[edge] or None) or ""
    except RuleFailure:
        return ""


def _attributes(columns: _Columns, values: list[str]) -> Callable[[str], str | None]:
    """A row's attributes by name (its trimmed cells by column header), for the rules."""

    def get(attribute: str) -> str | None:
        index = columns.find(attribute, "", required=False)
        return values[index] or None if index is not None and index < len(values) else None

    return get


def _header_spellings(labels: list[str]) -> frozenset[str]:
    """The spellings of the header's names a header row again (two exports joined into one
    file) may give its id cell: such a row is looked at closely (repeats_header)."""
    spelled = ((label, label.casefold(), label.upper(), label.title()) for label in labels if label)
    return frozenset(bom + cell for cells in spelled for cell in cells for bom in ("", "\ufeff"))


class _DepartedAside(str):
    """Why a row is rejected when it gives an id, a username and a departed status, and a
    field that does not say who the person is cannot be read (no name, a date that is not
    one): the reason, with the id and username (RejectedRow.departed)."""

    key: str
    username: str

    def __new__(cls, reason: str, key: str, username: str) -> _DepartedAside:
        made = super().__new__(cls, reason)
        made.key, made.username = key, username
        return made


class _UnnamedStatus(str):
    """Why a row is rejected when its status is in neither list: the reason, with the value."""

    value: str

    def __new__(cls, reason: str, value: str) -> _UnnamedStatus:
        made = super().__new__(cls, reason)
        made.value = value
        return made


# A row's birthday, sort order, senior flag, start and end dates; and those of a row with
# none of them, most rows.
_Optional = tuple[str | None, int | None, bool, str | None, str | None]
_NONE_GIVEN: _Optional = (None, None, False, None, None)

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
    start_date: int
    end_date: int
    # The cells of birthday, sort order, senior, start and end date: most rows leave all
    # of them empty (taken in C, then asked once).
    optional: Callable[[list[str]], tuple[str, ...]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        at = (self.birthday, self.sort_order, self.senior, self.start_date, self.end_date)
        object.__setattr__(self, "optional", itemgetter(*at))


def _extra_columns(columns: _Columns, settings: CsvSource) -> list[tuple[str, int]]:
    """(attribute, column) of each extra attribute the settings map, by attribute."""
    extras = [
        (attribute, columns.find(header, "source.csv.extra_columns", required=True))
        for header, attribute in settings.extra_columns.items()
    ]
    return sorted((a, i) for a, i in extras if i is not None)


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
        self._header_cells = _header_spellings(columns.labels)
        self._at = _EmployeeIndexes(**{f: _ABSENT if i is None else i for f, i in at.items()})
        self._extras = _extra_columns(columns, settings)
        self._columns = columns
        self.filtered = 0  # rows the row filter left out
        self._mapping = mapping
        self._unmapped = mapping.rules is None and mapping.trace is None  # as a rule
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
        # Status is a closed vocabulary, when the file has the column.
        self._status_read = self.status_read = at["status"] is not None
        self._statuses: dict[str, State] = {
            status_key(v): State.ACTIVE for v in settings.active_values
        }
        self._statuses.update((status_key(v), State.DEPARTED) for v in settings.departed_values)
        self._state_of: dict[str, State | str] = {}  # status text as read -> its state, or why not
        # A status at a row's edge may be what a moved line break made of another, or left
        # in neither list with the row beside changed.
        status = at["status"]
        self.status_across = None
        if status in (0, *columns.last):
            self.status_across = StatusAcross(self._statuses, status)
        self.status_notes = _status_notes(
            self._statuses,
            at,
            columns,
            self._extras,
            department_of,
            settings.positions_separator,
            mapping.rules,
        )
        if self.status_notes is not None:
            self.status_notes.names = self.names
        self._positions_separator = settings.positions_separator
        self._department_of = department_of.department_of
        # (department, title) -> the positions of one placed there alone: most people.
        self._primary: dict[tuple[str | None, str | None], tuple[Position, ...]] = {}
        self._secondary: dict[str, Position] = {}
        self._dates: dict[str, str | None] = {}  # birthdays repeat: parse each text once

    def identifiers(self, cells: list[str] | None) -> tuple[tuple[str, str], ...]:
        """A rejected row's name, mobile, work number, e-mail and extra attributes, where its
        cells can be trusted and no mapping rule makes the field (RejectedRow.identifiers)."""
        rules, own, trusted = self._mapping.rules, self._own, self._columns.trusted
        ruled = (*self._ruled, *(rules.extra if rules is not None else ()))

        def read(name: str) -> str | None:
            return None if name in ruled else trusted(cells, own.get(name))

        return row_identifiers(read, [(a, read(a)) for a, _ in self._extras])

    def names(self, cells: list[str]) -> tuple[tuple[str, str], ...]:
        """What names a row's person besides its id: its username, then its identifiers."""
        username, found = self._columns.trusted(cells, self.username), self.identifiers(cells)
        return (("username", username), *found) if username else found

    def employee(self, cells: list[str], where: str) -> Employee | str | None:
        """The row's Employee, or why it is rejected; None when the row filter leaves it out."""
        values = list(map(str.strip, cells))
        values.append("")  # what every column the file lacks reads as (index _ABSENT)
        at = self._at
        if values[at.id] in self._header_cells and self._columns.repeats_header(cells, where):
            return _REPEATED_HEADER
        found = self._employee(values, at, where) if self._unmapped else self._mapped(values, where)
        # A row rejected may be the header again, its id cell spelled some other way.
        if isinstance(found, str) and self._columns.repeats_header(cells, where):
            return _REPEATED_HEADER
        return found

    def _mapped(self, values: list[str], where: str) -> Employee | str | None:
        """The row by the mapping rules (see syncd.mapping), told to the trace if any."""
        rules, trace, columns = self._mapping.rules, self._mapping.trace, self._columns
        get = _attributes(columns, values)
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
            return self._aside(self._columns.missing(at.name), values, at)
        optional = _NONE_GIVEN
        if any(at.optional(values)):  # as a rule, none
            given = self._optional(values, at)
            if isinstance(given, str):
                return self._aside(given, values, at)
            optional = given
        birthday, sort_order, senior, start_date, end_date = optional
        state = State.ACTIVE
        if self._status_read:
            status = values[at.status]
            found = self._state_of.get(status) or self._state(status, at.status)
            if not isinstance(found, State):  # _UnnamedStatus: State is a str too
                return found
            state = found
        # Titles repeat across thousands of people: one string each, not one per row.
        job_title = sys.intern(values[at.job_title]) or None
        # Most people hold one position, made for someone placed alike before.
        positions: tuple[Position, ...] | None = None
        if not secondary:
            positions = self._primary.get((department_id, job_title))
        if positions is None:
            positions = self._positions(department_id, job_title, secondary)
        # In the order of Employee's fields, each named beside it: by keywords, making a
        # person cost twice as much (0.08 s of a read of 100,000 people).
        return Employee(
            ident,  # id
            username,  # username
            name,  # name
            positions,  # positions
            values[at.en_name] or None,  # en_name
            values[at.email] or None,  # email
            values[at.mobile] or None,  # mobile
            values[at.tel] or None,  # tel
            values[at.sn] or None,  # sn
            normalize_gender(values[at.gender]),  # gender
            birthday,  # birthday
            job_title,  # job_title
            sort_order,  # sort_order
            senior,  # senior
            state,  # state
            self._extra(values) if self._extras else (),  # extra
            (),  # properties
            None,  # photo
            start_date,  # start_date
            end_date,  # end_date
        )

    def _aside(self, reason: str, values: list[str], at: _EmployeeIndexes) -> str:
        """Why a row that gives an id and a username is rejected; marked (_DepartedAside)
        when its status says the person departed: that much of it is read. A status in
        neither list is told first (_UnnamedStatus): it stays loud, whatever else is wrong."""
        if not self._status_read:
            return reason
        state = self._state(values[at.status], at.status)
        if state is State.DEPARTED:
            return _DepartedAside(reason, values[at.id], values[at.username])
        if isinstance(state, _UnnamedStatus):
            return _UnnamedStatus(f"{state}; {reason}", state.value)
        return reason

    def _optional(self, values: list[str], at: _EmployeeIndexes) -> _Optional | str:
        """Birthday, sort order, senior flag, start and end dates, or why one of them is
        not valid (the row is rejected)."""
        parsed = self._parsed(values, at)
        if isinstance(parsed, str):
            return parsed
        dates: tuple[str | None, str | None] | str = (None, None)
        if values[at.start_date] or values[at.end_date]:
            dates = self._dates_of(values, at)
            if isinstance(dates, str):
                return dates
        return (*parsed, *dates)

    def _dates_of(
        self, values: list[str], at: _EmployeeIndexes
    ) -> tuple[str | None, str | None] | str:
        """Start and end dates, or why one of them is not a date (the row is rejected)."""
        found: list[str | None] = []
        for index in (at.start_date, at.end_date):
            text = values[index]
            day = parse_iso_day(text) if text else None
            if text and day is None:
                label = self._columns.label(index)
                return f"column {label!r}: {shown(text)} is not a date ({ISO_DAY})"
            found.append(day)
        return found[0], found[1]

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

    def _state(self, status: str, index: int) -> State | str:
        """The state a status text not seen before in this read names, kept in _state_of,
        or why the row is rejected: a value in neither list grants nobody access (HR
        renamed the departed value, or a cell was emptied)."""
        found: State | str | None = self._statuses.get(status_key(status))
        if found is None:
            label = self._columns.label(index)
            if status:
                found = _UnnamedStatus(
                    f"column {label!r}: {shown(status)} is neither in "
                    "source.csv.active_values nor in source.csv.departed_values",
                    status,
                )
            else:
                found = _UnnamedStatus(
                    f"column {label!r} is empty: a status must be in source.csv.active_values "
                    'or source.csv.departed_values (add "" to active_values if an empty '
                    "status means active)",
                    status,
                )
        self._state_of[status] = found
        return found

    def _extra(self, values: list[str]) -> tuple[tuple[str, str], ...]:
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
        # Positions are frozen values: the many people who share one share one object, and
        # those placed in one department alone share the tuple too (5 MB at 100,000).
        primary: tuple[Position, ...] = ()
        if department_id is not None:
            key = (department_id, job_title)
            found = self._primary.get(key)
            if found is None:
                found = self._primary[key] = (Position(department_id, job_title, primary=True),)
            primary = found
        if not secondary:
            return primary
        positions = list(primary)
        for other in secondary:
            position = self._secondary.get(other)
            if position is None:
                position = self._secondary[other] = Position(other)
            positions.append(position)
        return tuple(positions)
