"""What a source says the company looks like: departments and employees as frozen values.

Records are keyed by a stable source id (entryUUID, objectGUID, an HR id, or a
department path), never by DN or display name. ``build_directory`` validates what a
source read and sets aside, with a reason, every record the platform must not see:
the rest of the data is still used.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import partial
from typing import Literal, NamedTuple
from unicodedata import is_normalized as _is_nfc

from syncd.spelling import (
    JOINERS,
    apart_alike,
    controls,
    invisible,
    look_alike,
    look_alikes,
    mixed_scripts,
    nfc,
    printable_ascii,
)

PATH_SEPARATOR = "/"  # the platform joins node names with it into name paths
# Characters a serial_no must not carry: it travels as a URL path segment
# (GET .../serial/{serialNo}), where proxies decode or refuse %2F, %5C, %25, and cut at ? #
# and, on some servers, at ;. Each is written as ~XX (and ~ itself as ~7E).
_SERIAL_ESCAPED = frozenset("/\\%?#;~")


class Kind(StrEnum):
    DEPARTMENT = "department"
    EMPLOYEE = "employee"
    PHOTO = "photo"  # rejected rows only: a photo that cannot be used (its person is kept)


class State(StrEnum):
    ACTIVE = "active"
    DEPARTED = "departed"


@dataclass(frozen=True, slots=True)
class Department:
    id: str
    name: str
    parent_id: str | None = None  # None: a top-level department, under the platform root
    sort_order: int | None = None
    sn: str | None = None  # node number
    en_name: str | None = None


@dataclass(frozen=True, slots=True)
class Position:
    department_id: str | None  # None: the platform root organization itself
    job_title: str | None = None
    primary: bool = False
    chief: bool = False


@dataclass(frozen=True, slots=True)
class Photo:
    """A person's photo as the source holds it: its digest, and where its bytes are read
    when it is sent (never held here: a company's photos do not fit in memory)."""

    digest: str  # MD5 of the bytes, in hex: the media API's file_digest
    size: int  # bytes
    type: str  # "jpeg" or "png", by the image's magic bytes
    origin: str  # a file's path (CSV) or the entry's DN (LDAP)


DEPARTMENT_PATH = "department path"  # MovedStatus.field: a department's path (layout paths)


class MovedStatus(NamedTuple):
    """A status at its row's edge that a line break moved across the edge with the row
    beside may have made of another: "…,Lin" + "inactive,…" read as "…,Linin" +
    "active,…" (the row before ``gained`` the text "in"), "…,Lin" + "active,…" as "…,L" +
    "inactive,…" (it lost it); the status last, "…,Active - left" + "E2,…" as "…,Active"
    + "- leftE2,…" (the row after gained "- left"); of the same meaning, "…,N" +
    "已离职,…" as "…,N已" + "离职,…". What syncd wrote for the row beside tells
    (syncd.plan.moved_breaks)."""

    beside: str  # the source id of the row beside
    # Its field at the edge: a text syncd writes (an extra attribute's: "extra.<name>"),
    # DEPARTMENT_PATH for a department's path (the department column's, or the positions'
    # at the edge: written as a position's department, by id), "department" when read as
    # none the departments file has and the text moved gives one back, "" for another
    # (nothing tells: only an unlock waits on it, or a change beside a field that shows
    # the text).
    field: str
    # That field as read, and as it reads with the text moved back ("L" and "Lin"), each
    # as syncd writes it: a path by its department's id, of the positions the one at the
    # edge, a field a mapping rule makes as the rule makes it.
    read: str
    was: str
    text: str  # the text the break may have moved, as written
    gained: bool  # whether the row beside may have gained it (else lost it)
    after: bool  # the row beside is the one after (else the one before)
    # The status it was means the same as the one read ("已离职" read "离职"): only the row
    # beside is changed, and its changes wait on it; the status's own go ahead.
    same: bool = False
    # The row beside's username and RejectedRow.identifiers as its cells give them: what a
    # join keyed on one of them names its person by where the source has no record of
    # that row (the row filter left it out).
    names: tuple[tuple[str, str], ...] = ()


def moved_back(read: str, text: str, gained: bool, after: bool) -> str:
    """A field at a row's edge as it was before a line break moved ``text`` across the
    edge: what it gained taken off, what it lost put back, at its edge (its start in the
    row after, its end in the row before)."""
    if gained:
        return read[len(text) :] if after else read[: len(read) - len(text)]
    return text + read if after else read + text


class Employee(NamedTuple):
    """A person as the source says they are.

    A named tuple, where the other values are frozen dataclasses: a reader makes one per
    person and run, and a frozen dataclass's ``__init__`` (one ``object.__setattr__`` per
    field) cost five times as much, 14% of an LDAP read. Change one with ``_replace``. The
    CSV reader makes one by position (syncd.sources.csv.employees): a field added goes last.
    """

    id: str
    username: str
    name: str
    positions: tuple[Position, ...] = ()  # none: placed at the root organization
    en_name: str | None = None
    email: str | None = None
    mobile: str | None = None
    tel: str | None = None
    sn: str | None = None  # work number
    gender: str | None = None  # MALE or FEMALE, see normalize_gender
    birthday: str | None = None  # ISO date, YYYY-MM-DD
    job_title: str | None = None
    sort_order: int | None = None
    senior: bool = False
    state: State = State.ACTIVE
    extra: tuple[tuple[str, str], ...] = ()  # attributes that settings map to extended fields
    # Custom platform fields: (data_schema_id, value), sorted by id; sent as ``properties``.
    properties: tuple[tuple[str, str], ...] = ()
    photo: Photo | None = None  # set as the avatar; never part of the employee's hash
    # Effective dates (ISO YYYY-MM-DD, days in sync.dates.time_zone): never sent, never
    # hashed; they decide when the person is created, locked and unlocked (plan.schedule).
    start_date: str | None = None
    end_date: str | None = None
    # The platform's tags syncd sets (tag_names): (group, tag), sorted; from group rules.
    tags: tuple[tuple[str, str], ...] = ()


# The fields that tell two records of one username apart (syncd.plan.rekeys): the name and
# the personal identifiers a recycled username does not bring along.
IDENTIFYING = ("name", "mobile", "sn")


def identifying(record: Mapping[str, object]) -> dict[str, str]:
    """A platform record's ``IDENTIFYING`` fields, where it has them (non-empty text)."""
    return {k: v for k in IDENTIFYING if isinstance(v := record.get(k), str) and v}


# What a rejected row keeps of itself (RejectedRow.identifiers): those, and what else a join
# of several sources may be keyed on, its e-mail and extra attributes (``extra.<name>``):
# syncd.plan.join names the person a rejected row is by its join key.
KEPT_OF_A_ROW = (*IDENTIFYING, "email")
EXTRA = "extra."


def row_identifiers(
    read: Callable[[str], object], extras: Iterable[tuple[str, object]]
) -> tuple[tuple[str, str], ...]:
    """RejectedRow.identifiers: each field of KEPT_OF_A_ROW as ``read`` gives it, then each
    extra attribute (name, value) as ``extra.<name>``; those that hold text only."""
    found = [(f, read(f)) for f in KEPT_OF_A_ROW]
    found += [(EXTRA + name, value) for name, value in extras]
    return tuple((f, v) for f, v in found if isinstance(v, str) and v.strip())


@dataclass(frozen=True, slots=True)
class RejectedRow:
    where: str  # "employees.csv:17" or a DN
    reason: str
    kind: Kind = Kind.EMPLOYEE
    key: str | None = None  # the source id, when the row had one
    username: str | None = None
    # The record may hold or hide other rows (the wrong number of fields, broken quoting,
    # a line break lost or added): whoever it names, the read cannot say who is gone.
    may_hide_rows: bool = False
    # The status value that is in neither list of the settings, when that is why the row
    # was rejected ("" for an empty one): loud until the settings name it.
    status: str | None = None
    # The row's name, mobile and work number (sn) as far as they could be read: what tells
    # a rejected row with another id from the person whose username it names
    # (syncd.plan.rekeys.weigh_rejected); and its e-mail and extra attributes
    # (``extra.<name>``), should a join be keyed on one (KEPT_OF_A_ROW).
    identifiers: tuple[tuple[str, str], ...] = ()
    # A row set aside only because another row, under another id, gives its username: the
    # record as read, kept should it be the username's holder (``Directory.holders_kept``).
    record: Employee | None = None
    # The row says its person departed, under the id and username it gives (``key``,
    # ``username``), and every row that gives either gives both alike and says so too: set
    # aside for another field (no name, a date that is not one, where it places them, a
    # line per position), its departure is not held up by it (``Directory.departed_aside``).
    # Never set on a row that may hide others.
    departed: bool = False
    # The row says its person departed, but other rows that give its id or username do not
    # say it alike (``departures_alike``), or a join cannot tell whose it is: nothing is
    # locked for it, and the run says the person keeps their access (a partial run).
    departure_held: bool = False
    # A row that may hide others: the cells of its text as far as they can be told apart,
    # any of which may be a hidden row's username (``Directory.rejected_by_username``).
    mentions: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Directory:
    departments: Mapping[str, Department]
    employees: Mapping[str, Employee]
    rejected: tuple[RejectedRow, ...] = ()
    complete: bool = True  # a full read; False for a delta (incremental) read
    source: str = ""  # where it was read from, for reports
    cursor: str | None = None  # the new high-water mark of an incremental-capable source
    filtered: int = 0  # people the row filter (source.mapping.filter) left out
    # What the read has to tell without being partial: a head outside their department, a
    # domain not read (that one is in ``unread`` too). A warning never makes a read partial.
    warnings: tuple[str, ...] = ()
    # The parts of the source this read did not cover (an AD domain referred elsewhere and
    # not followed): who they hold is unknown. A join of several sources makes nobody a
    # leaver while one is named here (syncd.plan.join).
    unread: tuple[str, ...] = ()
    # Whether each person's status was read (a status column in the file, AD's account
    # flags, an OpenLDAP departed_filter). False: everyone reads as active for want of one,
    # and a join takes nobody's status from this read.
    status_read: bool = True
    # A join's sources that decide status but cannot tell who is departed this read (each
    # "name: why"): the joined read cannot either, whatever the other sources say.
    blind: tuple[str, ...] = ()
    # Where a line break moved across a row's edge reads a username changed: "start" when
    # the username is the first field of its rows, "end" when the last (a CSV file's
    # columns; none for a source without lines). syncd.plan.usernames weighs such changes.
    username_edges: frozenset[str] = frozenset()
    # Rows whose status, first in the row, a line break moved across the edge with the row
    # before may have made another of the other meaning, by source id (a CSV file's).
    moved_statuses: Mapping[str, MovedStatus] = field(default_factory=dict)
    # Whether the departments are the paths people carry (a CSV file's layout "paths",
    # LDAP's departments_from = "attribute"), not a tree of their own: one that places
    # nobody the plan makes, updates or holds is not made (syncd.plan.departments).
    departments_from_people: bool = False
    _paths: dict[str, tuple[str, ...]] = field(default_factory=dict, repr=False, compare=False)

    @property
    def leavers_known(self) -> bool:
        """Whether people absent from this read may be treated as leavers.

        Only a complete read whose every rejected employee row still names its person, and
        is that person's row alone, can say who is gone: a row that could not even be
        identified might be anyone, and a damaged one may hide someone else's row.
        """
        return self.complete and not self.leavers_unknown_because()

    def leavers_unknown_because(self) -> tuple[RejectedRow, ...]:
        """The rejected employee rows that keep this read from saying who is gone, and one
        for each part of the source it did not read (``unread``: who it holds is unknown,
        as a join of several sources says too)."""
        rows = tuple(
            r
            for r in self.rejected
            if r.kind is Kind.EMPLOYEE and (r.may_hide_rows or not (r.key or r.username))
        )
        return rows + self.not_read()

    def not_read(self) -> tuple[RejectedRow, ...]:
        """A row for each part of the source this read did not read: whoever it holds, left
        or departed, is unknown, on a complete read or an incremental one."""
        return tuple(
            RejectedRow(self.source or part, f"{part} was not read", may_hide_rows=True)
            for part in self.unread
        )

    def names(self, source_id: str, username: str) -> bool:
        """Whether this read holds the source id under this username, in any spelling: an
        account carrying that mark under that username is the one the plan adopts, as on a
        first run. Under another username it is no record the source names: the person's
        account from before the source renamed them."""
        e = self.employees.get(source_id)
        return e is not None and look_alike(e.username) == look_alike(username)

    def as_held(self, holding: Callable[[str], str | None], *, joined: bool) -> Directory:
        """The read with what syncd holds weighed in (``holding``: the username syncd holds
        for a source id, or None), asked only of the few rows concerned: each username's
        holder kept among the rows that give it (``holders_kept``) and, for one source,
        each leaver's departure theirs whoever else a row gives their username
        (``leavers_held``). A join (``joined``) has decided its leavers' departures itself,
        knowing syncd's people (syncd.plan.join)."""

        def asked(keys: Iterable[str]) -> dict[str, str]:
            return {k: username for k in keys if (username := holding(k)) is not None}

        read = self.holders_kept(asked(self.shared_keys()))
        return read if joined else read.leavers_held(asked(read.departures_held()))

    def holders_kept(self, holds: Mapping[str, str]) -> Directory:
        """The read with the holder's row kept among rows set aside because they give one
        username under other ids: the row whose id and username are the pair syncd holds
        (``holds``: the username syncd holds for each of ``shared_keys()``) is that
        person's, whoever else the read gives the username to (a namesake in another
        domain of a forest, a new hire given a username still in use), as Entra Connect
        keeps a duplicated value on the object that held it. Set aside, the holder's
        changes (a departure) would wait as long as the other row lasts. The other rows
        stay set aside; so does every row of a username two such rows give (look-alike
        spellings both synced), and every row of a username a row gives without an id, or
        that may hide rows: it may be the holder's own row."""
        kept: dict[str, Employee] = {}
        for rows in self.rejected_by_username().values():
            holders = [
                r.record
                for r in rows
                if r.record is not None and nfc(holds.get(r.record.id) or "") == r.record.username
            ]
            if len(holders) == 1 and all(r.key and not r.may_hide_rows for r in rows):
                kept[holders[0].id] = holders[0]
        if not kept:
            return self
        rejected = tuple(r for r in self.rejected if r.record is None or r.record.id not in kept)
        return replace(self, employees={**self.employees, **kept}, rejected=rejected)

    def leavers_held(self, holds: Mapping[str, str]) -> Directory:
        """The read with each departure held up only by rows under other ids that give the
        username syncd holds for the leaver (``holds``: the username syncd holds for each
        of ``departures_held()``) going ahead: that username is theirs, whoever else the
        read gives it to (HR giving a leaver's login to a new hire in the same export), as
        ``holders_kept`` keeps it for its holder."""
        rejected = list(self.rejected)
        marked = _leavers_held(rejected, holds)
        return self if marked is rejected else replace(self, rejected=tuple(marked))

    def departed_aside(self) -> dict[str, str]:
        """The username, by source id, of each person rows set aside say departed: rows
        that give an id, username and status plainly, which every row giving that id or
        username gives alike, are that person's, whatever else in them could not be read; a
        lock needs nothing else (syncd.plan.departed_aside locks the one syncd holds under
        that very pair)."""
        rows = (r for r in self.rejected if r.departed)
        return {nfc(r.key): nfc(r.username) for r in rows if r.key and r.username}

    def departures_held(self) -> set[str]:
        """The source ids of the people rows set aside say departed whose departure is held
        up (``RejectedRow.departure_held``)."""
        return {r.key for r in self.rejected if r.departure_held and r.key}

    def shared_keys(self) -> list[str]:
        """The ids of the rows set aside only because another row gives their username:
        whose username syncd holds for them is what ``holders_kept`` asks."""
        return [r.record.id for r in self.rejected if r.record is not None]

    def rejected_by_username(self) -> dict[str, tuple[RejectedRow, ...]]:
        """The rejected employee rows that name a username, by its look-alike key; and the
        rows that may hide others, under each text in them (``mentions``), as rows that give
        that username with no id: a hidden row there may be its holder's under a new id
        (numbered anew, the old record departed), so the departure waits for the evidence."""
        rows: dict[str, tuple[RejectedRow, ...]] = {}
        for row in self.rejected:
            if row.kind is not Kind.EMPLOYEE:
                continue
            own = look_alike(row.username) if row.username else None
            if own is not None:
                rows[own] = (*rows.get(own, ()), row)
            if not row.mentions:
                continue
            hidden = replace(row, key=None, username=None, identifiers=(), record=None)
            for folded in {look_alike(text) for text in row.mentions} - {own}:
                rows[folded] = (*rows.get(folded, ()), hidden)
        return rows

    def rejected_keys(self, kind: Kind) -> frozenset[str]:
        """Source ids of rejected rows: their records are kept as they are, never removed (a
        rejected row that names a synced person's username by another id: see
        ``rejected_by_username``)."""
        return frozenset(row.key for row in self.rejected if row.kind is kind and row.key)

    def path(self, department_id: str) -> tuple[str, ...]:
        """Names from the top-level department down to this one (the root not included)."""
        cached = self._paths.get(department_id)
        if cached is not None:
            return cached
        chain: list[str] = []
        current: str | None = department_id
        while current is not None:
            known = self._paths.get(current)
            if known is not None:
                chain.reverse()
                result = known + tuple(chain)
                break
            department = self.departments[current]
            chain.append(department.name)
            current = department.parent_id
        else:
            chain.reverse()
            result = tuple(chain)
        self._paths[department_id] = result
        return result


def serial_no(department_id: str) -> str:
    """A department's key on the platform: its source id, made safe as a URL path segment.

    Ids without a character to escape stay as they are; a path id (the CSV ``paths``
    layout, LDAP's ``departments_from = "attribute"``) reads ``Head Office~2FR&D``. The
    mapping is one to one, so two departments never share a serial_no.
    """
    if department_id in (".", ".."):
        return department_id.replace(".", "~2E")
    if not any(c in _SERIAL_ESCAPED or c < " " or c == "\x7f" for c in department_id):
        return department_id
    return "".join(
        f"~{ord(c):02X}" if c in _SERIAL_ESCAPED or c < " " or c == "\x7f" else c
        for c in department_id
    )


# ---------------------------------------------------------------- matching platform accounts

# What a first run may match existing platform accounts by (setting sync.match_by).
MatchKey = Literal["username", "email", "mobile", "sn"]
_NOT_DIGITS = re.compile(r"[^0-9]")


def match_value(key: MatchKey, value: str | None) -> str | None:
    """A value as compared when matching accounts; the same rule for source and platform.

    usernames exactly (the platform matches them so), email addresses in any case, mobile
    numbers by their digits (with a leading ``+`` kept), work numbers trimmed.
    """
    text = (value or "").strip()
    if not text:
        return None
    if key == "email":
        return text.casefold()
    if key == "mobile":
        digits = _NOT_DIGITS.sub("", text)
        return ("+" + digits if text.startswith("+") else digits) or None
    return text


def match_index(directory: Directory, key: MatchKey) -> dict[str, tuple[str, ...]]:
    """Matching value -> the source ids of the people holding it; more than one is ambiguous."""
    found: dict[str, list[str]] = defaultdict(list)
    for e in directory.employees.values():
        value = match_value(key, getattr(e, key))
        if value is not None:
            found[value].append(e.id)
    return {value: tuple(ids) for value, ids in found.items()}


GENDERS = {
    "male": "MALE",
    "m": "MALE",
    "man": "MALE",
    "男": "MALE",
    "1": "MALE",
    "female": "FEMALE",
    "f": "FEMALE",
    "woman": "FEMALE",
    "女": "FEMALE",
    "2": "FEMALE",
}


def normalize_gender(value: str | None) -> str | None:
    """MALE, FEMALE, or None for anything else (the platform knows no other value)."""
    if not value:
        return None
    return GENDERS.get(value.strip().casefold())


def build_directory(
    departments: Iterable[tuple[str, Department]],
    employees: Iterable[tuple[str, Employee]],
    *,
    rejected: Iterable[RejectedRow] = (),
    complete: bool = True,
    source: str = "",
    cursor: str | None = None,
    filtered: int = 0,
    warnings: Iterable[str] = (),
    one_read: bool = False,
    unread: Iterable[str] = (),
    status_read: bool = True,
    synced_names: Mapping[str, str] | None = None,
    username_edges: frozenset[str] = frozenset(),
    moved_statuses: Mapping[str, MovedStatus] | None = None,
    departments_from_people: bool = False,
) -> Directory:
    """Validate what a source read: each item comes with where it was read (file:line or DN).

    Names, usernames and department ids are taken in Unicode NFC (syncd.spelling).
    Rejected, each with its reason: departments without id or name, with a ``/`` in the
    name, named ``.`` or ``..``, with an invisible character in the name, whose id appears
    twice, in a cycle, under an unknown or rejected parent, or with a sibling of the same
    name in any spelling (the platform's name path would be ambiguous); employees without
    id, username or name, with an invisible character in the username, whose id or
    username (in any spelling) appears twice (all copies), with more than one primary
    position, or with a position in an unknown or rejected department.

    ``one_read``: the rows and the rejected rows are one source's read (a CSV file, an LDAP
    search), so a rejected employee row that names an id or a username is one more copy of
    it: every copy is set aside, whatever else is wrong with any of them (a departed
    person's row rejected for an unknown status must not leave their other row, which says
    active, to unlock them). A join's rejected rows come from other sources: not copies.

    A row rejected for no name, for where it places its person (an unknown or rejected
    department, two primary positions) or as a copy, or that a reader set aside for a field
    that does not say who the person is, keeps saying the person departed when it does
    (``RejectedRow.departed``) and every row giving its id or username gives both alike and
    says so too: a departure is not held up by it (``Directory.departed_aside``,
    syncd.plan.departed_aside).

    ``synced_names``: the name syncd last wrote for each department it holds, by id. Of
    sibling departments whose names look alike, the one syncd holds under that very name
    is kept, with everyone in it (a look-alike department made beside it is set aside, not
    every person of both: their departures would wait as long as it lasts).
    """
    out_rejected = list(rejected)
    good_departments = _valid_departments(list(departments), out_rejected, synced_names or {})
    copies = _rejected_copies(out_rejected) if one_read else ([], [])
    good_employees = _valid_employees(list(employees), good_departments, out_rejected, copies)
    return Directory(
        departments=good_departments,
        employees=good_employees,
        rejected=tuple(out_rejected),
        complete=complete,
        source=source,
        cursor=cursor,
        filtered=filtered,
        warnings=tuple(warnings),
        unread=tuple(unread),
        status_read=status_read,
        username_edges=username_edges,
        moved_statuses=moved_statuses or {},
        departments_from_people=departments_from_people,
    )


def _valid_departments(
    items: list[tuple[str, Department]],
    rejected: list[RejectedRow],
    synced_names: Mapping[str, str],
) -> dict[str, Department]:
    def reject(where: str, d: Department, reason: str) -> None:
        rejected.append(RejectedRow(where, reason, Kind.DEPARTMENT, _kept_key(d.id)))

    items = [(where, _department_in_nfc(d)) for where, d in items]
    counts = Counter(d.id for _, d in items)
    by_id: dict[str, Department] = {}
    where_of: dict[str, str] = {}
    for where, d in items:
        if reason := _department_problem(d, counts):
            reject(where, d, reason)
        else:
            by_id[d.id] = d
            where_of[d.id] = where

    # A department is kept only if its whole chain of parents is kept.
    children: dict[str | None, list[str]] = defaultdict(list)
    for d in by_id.values():
        children[d.parent_id].append(d.id)
    twins = _twins(by_id.values(), synced_names)
    kept: dict[str, Department] = {}
    ambiguous: set[str] = set()
    stack: list[str] = list(children[None])
    while stack:
        current = by_id[stack.pop()]
        if current.id in twins:
            ambiguous.add(current.id)
            reject(
                where_of[current.id],
                current,
                f"two sibling departments are named {current.name!r} (in some spelling: letter "
                "case, normalization or invisible characters aside): the name path is ambiguous",
            )
            continue
        kept[current.id] = current
        stack.extend(children.get(current.id, ()))

    for d in by_id.values():
        if d.id not in kept and d.id not in ambiguous:
            reject(where_of[d.id], d, _why_unreachable(d, by_id, ambiguous))
    return kept


def _department_problem(d: Department, counts: Mapping[str, int]) -> str | None:
    """Why the department is rejected on its own, or None."""
    if not d.id:
        return "department has no id"
    if hidden := controls(d.id):
        return f"department id {d.id!r} contains {', '.join(hidden)}"
    if not d.name or not d.name.strip():
        return f"department {d.id!r} has no name"
    if hidden := controls(d.name):
        return f"department name {d.name!r} contains {', '.join(hidden)}"
    if PATH_SEPARATOR in d.name:
        return f"department name {d.name!r} contains '/', the platform's path separator"
    if d.name.strip() in (".", ".."):
        return f"department name {d.name!r} is not a name: it means a place in a path"
    if hidden := invisible(d.name, allowed=JOINERS):
        return f"department name {d.name!r} contains {', '.join(hidden)}"
    if counts[d.id] > 1:
        return f"department id {d.id!r} appears {counts[d.id]} times"
    return None


def _twins(departments: Iterable[Department], synced_names: Mapping[str, str]) -> set[str]:
    """The departments whose name looks like a sibling's (NFC, any letter case, invisible
    characters): the name path is ambiguous. Not the one syncd holds under that very name,
    when only one is: the department it was."""
    named: dict[tuple[str | None, str], list[Department]] = defaultdict(list)
    for d in departments:
        named[(d.parent_id, look_alike(d.name))].append(d)
    twins: set[str] = set()
    for siblings in named.values():
        if len(siblings) > 1:
            held = [d.id for d in siblings if nfc(synced_names.get(d.id) or "") == d.name]
            twins.update(d.id for d in siblings if held != [d.id])
    return twins


def _why_unreachable(d: Department, by_id: Mapping[str, Department], ambiguous: set[str]) -> str:
    seen = {d.id}
    current = d
    while current.parent_id is not None:
        parent = by_id.get(current.parent_id)
        if parent is None:
            if current is d:
                return f"parent department {current.parent_id!r} is unknown or was rejected"
            return f"ancestor department {current.id!r} has an unknown parent {current.parent_id!r}"
        if parent.id in ambiguous:
            return f"ancestor department {parent.id!r} was rejected (ambiguous name)"
        if parent.id in seen:
            return "department is in, or under, a parent cycle"
        seen.add(parent.id)
        current = parent
    return "department is unreachable from the root"  # not reached: kept or rejected above


def _rejected_copies(rejected: list[RejectedRow]) -> tuple[list[str], list[str]]:
    """The ids and usernames (look-alike keys) the rejected employee rows name."""
    ids: list[str] = []
    usernames: list[str] = []
    for row in rejected:
        if row.kind is Kind.EMPLOYEE:
            if row.key:
                ids.append(look_alike(row.key))
            if row.username and row.username.strip():
                usernames.append(look_alike(row.username))
    return ids, usernames


def _valid_employees(
    items: list[tuple[str, Employee]],
    departments: Mapping[str, Department],
    rejected: list[RejectedRow],
    copies: tuple[list[str], list[str]],
) -> dict[str, Employee]:
    rejected_ids, rejected_usernames = copies
    ids_read = [e.id for _, e in items]
    usernames_read = [u for _, e in items if (u := e.username)]
    ids_text, usernames_text = "".join(ids_read), "".join(usernames_read)
    ids = _repeated_alike(ids_read, ids_text, rejected_ids)
    usernames = _repeated_alike(usernames_read, usernames_text, rejected_usernames)
    # As a rule every id and username is printable ASCII: asked of all of them at once.
    plain = printable_ascii(ids_text) and printable_ascii(usernames_text)
    kept: dict[str, Employee] = {}
    for where, read in items:
        e = _employee_in_nfc(read)
        reason, shared = _employee_problem(e, ids, departments, plain), None
        if reason is None and usernames and (folded := look_alike(e.username)) in usernames:
            reason = f"username {e.username!r} is used by {usernames[folded]} people"
            shared = e  # its only problem: kept if it is the username's holder
        if reason:
            # Who they are and that they left are read: one departure, if every row giving
            # their id or username gives both alike and says so (departures_alike).
            departed = isinstance(reason, _Named) and e.state is State.DEPARTED
            # Set aside for a username another id gives too, and not its holder's row
            # (Directory.holders_kept): whose account it names is unsaid, so a departure
            # in it is held up, and said.
            held = shared is not None and e.state is State.DEPARTED
            identifiers = row_identifiers(partial(getattr, e), e.extra)
            rejected.append(
                RejectedRow(
                    where,
                    reason,
                    Kind.EMPLOYEE,
                    _kept_key(e.id),
                    _kept_key(e.username),
                    identifiers=identifiers,
                    record=shared,
                    departed=departed,
                    departure_held=held,
                )
            )
        else:
            kept[e.id] = e
    departures_alike(rejected)
    return kept


def departures_alike(
    rejected: list[RejectedRow], silent: Collection[int] = (), apart: Collection[int] = ()
) -> None:
    """Keep a rejected row's ``departed`` only where every rejected row that gives its id or
    its username (in any spelling) gives that very id and username, in plain characters,
    and says the person departed: copies of one departure (an export with a line per
    position) are one departure. The rows kept give neither (the read's copies are all set
    aside), and a row that may hide others is never marked departed. ``silent``: the
    indices of rows that have no say in whether the person left (a join's, from sources
    that do not decide it): giving that very id and username, they say nothing against it.
    ``apart``: the indices of rows known to be another person's, whatever username they
    give (a join's, under another key, giving the username syncd holds for a leaver):
    named by their id only."""
    if not any(row.departed for row in rejected):
        return  # as a rule
    named: dict[str, list[tuple[RejectedRow, bool]]] = defaultdict(list)
    for n, row in enumerate(rejected):
        if row.kind is Kind.EMPLOYEE:
            says = row.departed or n in silent
            given = (row.key,) if n in apart else (row.key, row.username)
            for text in {look_alike(t) for t in given if t}:
                named[text].append((row, says))
    for n, row in enumerate(rejected):
        if row.departed and not _one_departure(row, named):
            rejected[n] = replace(row, departed=False, departure_held=True)


def _leavers_held(rejected: list[RejectedRow], holds: Mapping[str, str]) -> list[RejectedRow]:
    """The rows with a departure held up under the very id and username syncd holds
    (``holds``: the username syncd holds for each id asked) marked departed again, and
    checked as ``departures_alike`` checks them, with the rows under other ids that give
    that username named by their id only: they are another person's (HR giving a leaver's
    login to a new hire in the same export), whatever username they give. A row without
    an id, or that may hide others, still holds the departure up: it may be the leaver's
    own; so does every row of a username syncd holds for two such leavers in look-alike
    spellings."""
    pairs = {
        (look_alike(r.username), r.key)
        for r in rejected
        if r.departure_held and r.key and r.username and nfc(holds.get(r.key) or "") == r.username
    }
    spelled = Counter(folded for folded, _ in pairs)
    holders = {folded: key for folded, key in pairs if spelled[folded] == 1}
    if not holders:
        return rejected
    rows = [
        replace(r, departed=True, departure_held=False)
        if r.departure_held and r.username and holders.get(look_alike(r.username)) == r.key
        else r
        for r in rejected
    ]
    apart = [
        n
        for n, r in enumerate(rows)
        if r.key and r.username and not r.may_hide_rows
        and holders.get(look_alike(r.username), r.key) != r.key
    ]  # fmt: skip
    departures_alike(rows, apart=apart)
    return rows


def _one_departure(row: RejectedRow, named: Mapping[str, list[tuple[RejectedRow, bool]]]) -> bool:
    """Whether every row that names this row's id or username (each with whether it says
    the person departed, or has no say in it) gives the same pair and says so."""
    key, username = row.key, row.username
    if not key or not username or controls(key + username) or invisible(key + username):
        return False
    if mixed_scripts(username):
        return False
    rows = named[look_alike(key)] + named[look_alike(username)]
    return all(says and r.key == key and r.username == username for r, says in rows)


def _kept_key(text: str) -> str | None:
    """A rejected row's id or username as it is kept: without NULs (as the CSV reader trusts
    a rejected row's key), which a state database on PostgreSQL cannot store and no real
    id holds; None when nothing is left."""
    return text.replace("\x00", "") or None


def _repeated_alike(texts: list[str], joined: str, more: list[str]) -> dict[str, int]:
    """The look-alike keys of ``texts`` (``joined``: all of them joined) and of ``more``
    (keys already) found more than once, with their counts. As a rule none, told without
    making the keys (``apart_alike``)."""
    if not more and apart_alike(joined) and len(set(texts)) == len(texts):
        return {}
    return _repeated(look_alikes(texts) + more)


def _repeated(values: list[str]) -> dict[str, int]:
    """The values found more than once, with their counts (most often none: checked first)."""
    if len(set(values)) == len(values):
        return {}
    return {value: n for value, n in Counter(values).items() if n > 1}


class _Named(str):
    """Why a row that names its person plainly is set aside: one of several that give its
    id, no name, or where it places them. It still says whether they left. (A row whose
    username another id gives is not: its rows name two people.)"""


def _employee_problem(
    e: Employee,
    ids: Mapping[str, int],
    departments: Mapping[str, Department],
    plain: bool = False,
) -> str | None:
    """Why the person is rejected (``_Named`` when the row names them plainly), a username
    another row gives aside, or None. ``plain``: every id and username read is printable
    ASCII, so none holds a control, an invisible or a look-alike character."""
    if not e.id:
        return "employee has no id"
    if not e.username or not e.username.strip():
        return f"employee {e.id!r} has no username"
    if not plain and (hidden := _controls_in_keys(e)) is not None:
        return hidden
    if not plain and (unseen := _unseen_in_keys(e)) is not None:
        return unseen
    if ids and (key := look_alike(e.id)) in ids:
        return _Named(f"employee id {e.id!r} appears {ids[key]} times")
    if not e.name or not e.name.strip():
        return _Named(f"employee {e.username!r} has no name")
    if len(e.positions) > 1 and sum(p.primary for p in e.positions) > 1:
        return _Named(f"employee {e.username!r} has more than one primary position")
    for p in e.positions:
        if p.department_id is not None and p.department_id not in departments:
            return _Named(
                f"employee {e.username!r} is placed in department {p.department_id!r}, "
                "which is unknown or was rejected"
            )
    return None


def _controls_in_keys(e: Employee) -> str | None:
    """Why an id or username cannot be stored or shown: a control character in it."""
    if hidden := controls(e.id):
        return f"employee id {e.id!r} contains {', '.join(hidden)}"
    if hidden := controls(e.username):
        return f"username {e.username!r} contains {', '.join(hidden)}, which cannot be seen"
    return None


def _unseen_in_keys(e: Employee) -> str | None:
    """Why an id or username cannot be told from another on screen: an invisible character
    in it, or a username mixing Latin letters with look-alike ones (syncd.spelling)."""
    if e.id.isascii() and e.username.isascii():
        return None  # nearly every id and username: nothing unseen, asked once for both
    if hidden := invisible(e.id):
        return f"employee id {e.id!r} contains {', '.join(hidden)}, which cannot be seen"
    if hidden := invisible(e.username):
        return f"username {e.username!r} contains {', '.join(hidden)}, which cannot be seen"
    if alike := mixed_scripts(e.username):
        return (
            f"username {e.username!r} mixes Latin letters with {', '.join(alike)}, which "
            "look like Latin ones: it would show as another username"
        )
    return None


def _department_in_nfc(d: Department) -> Department:
    """The department with its id, parent's id and names in NFC (as a rule, unchanged)."""
    texts = (d.id, d.name, d.parent_id, d.en_name)
    if all(t is None or t.isascii() for t in texts):
        return d
    return Department(
        nfc(d.id),
        nfc(d.name),
        None if d.parent_id is None else nfc(d.parent_id),
        d.sort_order,
        d.sn,
        None if d.en_name is None else nfc(d.en_name),
    )


def _positions_in_nfc(positions: tuple[Position, ...]) -> bool:
    """Whether the positions' departments and titles are in NFC already (as a rule)."""
    for p in positions:
        place, role = p.department_id, p.job_title
        if (place and not place.isascii() and not _is_nfc("NFC", place)) or (
            role and not role.isascii() and not _is_nfc("NFC", role)
        ):
            return False
    return True


def _employee_in_nfc(e: Employee) -> Employee:
    """The employee with username, names, titles and departments' ids in NFC (as a rule,
    the same employee: this runs for every person of every read, so it checks first)."""
    username, name, en_name, title = e.username, e.name, e.en_name, e.job_title
    if (
        (username.isascii() or _is_nfc("NFC", username))
        and (name.isascii() or _is_nfc("NFC", name))
        and (not en_name or en_name.isascii() or _is_nfc("NFC", en_name))
        and (not title or title.isascii() or _is_nfc("NFC", title))
        and _positions_in_nfc(e.positions)
    ):
        return e
    positions = tuple(
        Position(
            None if p.department_id is None else nfc(p.department_id),
            None if p.job_title is None else nfc(p.job_title),
            p.primary,
            p.chief,
        )
        for p in e.positions
    )
    return e._replace(
        username=nfc(username),
        name=nfc(name),
        en_name=None if en_name is None else nfc(en_name),
        job_title=None if title is None else nfc(title),
        positions=positions,
    )
