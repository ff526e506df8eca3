"""The plan's values: what planning reads (snapshot, platform view, policy) and what it makes."""

from __future__ import annotations

import fnmatch
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from syncd.model import Department, Employee, Kind, MatchKey, Photo
from syncd.photos import photo_fields
from syncd.plan.actions import REMOVING, Action
from syncd.plan.dates import NOT_STARTED, DatePolicy, Scheduled
from syncd.plan.fields import department_fields, employee_fields, fields_departments
from syncd.plan.messages import describe

DAY_MS = 86_400_000


# ---------------------------------------------------------------- inputs


# The snapshot's records are tuples: one of each per record syncd holds, loaded on every
# run (100,000 frozen dataclasses took 0.08 s to build; these, 0.03 s).
class SyncedDepartment(NamedTuple):
    """What syncd last wrote for a department, and where it lives on the platform."""

    source_id: str
    node_id: int
    name_path: str  # root name first: "Acme/R&D"
    hash: str


# The lock reason of someone locked because a read called them departed (a status, an end
# date's own reason aside): only a read with a status may call them active again.
DEPARTED = "departed"
# The one record a run lets go of while its person keeps their access: the account was
# deleted on the platform while syncd held them active, and their row is rejected (nothing
# says they left). Kept as DELETED_HELD (syncd.snapshot.departures), the account made anew
# once the row is read counts as a wiped platform's does, in this run or a later one.
ROW_REJECTED = "deleted on the platform; its row was rejected"
DELETED_HELD = "deleted"


class SyncedEmployee(NamedTuple):
    source_id: str
    username: str
    employee_id: int | None
    hash: str
    locked: bool = False
    lock_reason: str | None = None  # DEPARTED, "missing", or an effective date's
    locked_since: int | None = None
    matched_by: str | None = None  # adopted by this key: the platform's username is kept

    def another_account(self, account_id: object, mark: str | None) -> bool:
        """Whether an account under this person's username is, by its own evidence, not
        the one syncd wrote for them: it carries another source id and has another id (a
        hand-edited mark on their own account is drift, weighed as such)."""
        return mark is not None and mark != self.source_id and account_id != self.employee_id


class KnownProblem(NamedTuple):
    """A value the platform refused for a person, because another account holds it or for
    its form: the person was written without it (see syncd.plan.unique_values)."""

    source_id: str
    field: str  # mobile or email
    value: str  # as the source gives it
    holder: str | None = None  # the username holding it, when found
    holder_key: str | None = None  # its source id, when syncd holds that account
    # The platform's words when it refused the value's form (a malformed mobile); None: the
    # value is another account's. Such a problem has no holder: it lasts until the source
    # changes the value.
    refusal: str | None = None


class FieldsNotLoaded(LookupError):
    """Planning asked for the fields of a person the runner did not load: a bug in what
    the runner loads (``syncd.plan.needs``), never a fact about the data."""


@dataclass(frozen=True)
class Snapshot:
    """What syncd last wrote, as plain values loaded before planning: nothing here reads the
    store later (``syncd.snapshot.load_snapshot`` and the runner's two steps load it)."""

    departments: Mapping[str, SyncedDepartment] = field(default_factory=dict)
    # Everyone syncd holds; or, when ``people`` is set, only those this plan asks about
    # (an incremental read's people: see ``syncd.run.runner``).
    employees: Mapping[str, SyncedEmployee] = field(default_factory=dict)
    # The fields syncd last wrote, by (kind, source id): every department's, and the
    # people's that planning weighs (``fields_of``), or everyone's.
    fields: Mapping[tuple[Kind, str], Mapping[str, Any]] = field(default_factory=dict)
    # Department source id -> the synced people placed there (as last written), for the
    # departments gone from the source.
    placed: Mapping[str, Sequence[str]] = field(default_factory=dict)
    # Employee source id -> the digest of the photo syncd last set as their avatar.
    photos: Mapping[str, str] = field(default_factory=dict)
    # Employee source id -> the known problems recorded for them (unique_values).
    problems: Mapping[str, tuple[KnownProblem, ...]] = field(default_factory=dict)
    # Employee source id -> the end date last read for them (ISO): locks at its end even
    # when the row is not read again; and the start date still ahead, for a hire created
    # locked before it (syncd.plan.schedule).
    end_dates: Mapping[str, str] = field(default_factory=dict)
    start_dates: Mapping[str, str] = field(default_factory=dict)
    # Employee source id -> why that person had no account when syncd last knew of them:
    # "departed" (a read called them departed), "removed" (syncd removed their account)
    # or DELETED_HELD (deleted on the platform while held active, their row rejected): an
    # account made for them is access granted, but for the last (syncd.snapshot.departures,
    # plan.guards).
    departures: Mapping[str, str] = field(default_factory=dict)
    # How many people syncd holds, when ``employees`` holds only some of them.
    people: int | None = None
    # The people whose fields ``fields`` holds, when not everyone's (None: everyone's).
    fields_of: frozenset[str] | None = None
    # The departments whose fields ``fields`` holds, when not every one's (None: all).
    department_fields_of: frozenset[str] | None = None
    # Look-alike username -> the source ids syncd's history (the runs' items) wrote under
    # it: loaded for the platform's accounts a plan may adopt (syncd.plan.adoption).
    seen: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @property
    def headcount(self) -> int:
        """How many people syncd holds."""
        return len(self.employees) if self.people is None else self.people

    @property
    def partial(self) -> bool:
        """Whether ``employees`` holds only some of syncd's people."""
        return self.people is not None

    def written(self, kind: Kind, source_id: str) -> Mapping[str, Any] | None:
        """The fields syncd last wrote for this record (None: none recorded)."""
        loaded = self.fields_of if kind is Kind.EMPLOYEE else self.department_fields_of
        if loaded is not None and source_id not in loaded:
            raise FieldsNotLoaded(f"the fields of {source_id} were not loaded before planning")
        return self.fields.get((kind, source_id))


@dataclass(frozen=True, slots=True)
class PlatformNode:
    id: int
    name: str
    parent_id: int | None
    serial_no: str | None = None
    sort_order: int | None = None
    last_modified: int | None = None
    employees: int | None = None  # placed directly in the node, when the platform says


@dataclass(frozen=True, slots=True)
class PlatformPerson:
    id: int
    username: str
    locked: bool = False
    email: str | None = None
    mobile: str | None = None
    sn: str | None = None
    # The source id the account carries (syncd's mark, or another installation's or
    # program's): evidence of whose it is.
    extension_id: str | None = None
    name: str | None = None  # compared with the source's before an account is adopted
    # The nodes its positions are in, as the look-up answered (none told: unknown): an
    # account adopted out of a department gone from the source leaves it empty.
    nodes: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class PlatformEmployee:
    """A person as the platform holds them now, read because they changed there lately."""

    id: int
    username: str
    locked: bool
    # The profile fields the record carries (name, email, mobile, sn, gender, sort_order,
    # senior): only these are compared with what syncd wrote.
    fields: Mapping[str, Any]
    positions: tuple[tuple[int, bool, bool, str], ...]  # (org_id, primary, chief, job_title)
    last_modified: int | None = None
    # The source id the account carries (syncd's mark): evidence of whose it is, whatever
    # the state database remembers (a record is never locked or removed through an account
    # that names another: syncd.plan.employees).
    extension_id: str | None = None


@dataclass(frozen=True, slots=True)
class PlatformMark:
    """An account carrying a source id (``extension_id``) under a username syncd does not
    hold (or holds for another person in another account), as a read came upon it:
    evidence of a record syncd may have written and lost (``syncd.run.rebuild.behind``)."""

    extension_id: str
    username: str
    org_ids: tuple[int, ...]  # the nodes it is placed in
    last_modified: int | None = None
    # What tells who holds it (name, mobile, work number), where the record has them.
    identifying: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Census:
    """The nodes' employee counts a complete read found, and when it last listed every
    employee: the next complete read lists only the nodes whose count moved since."""

    listed_at: int  # ms
    counts: Mapping[int, int]


@dataclass(frozen=True)
class PlatformView:
    """What the runner read from the platform before planning."""

    root_id: int
    root_name: str
    nodes: Mapping[int, PlatformNode] = field(default_factory=dict)
    complete_listing: bool = False  # nodes holds every node (else: those changed lately)
    people: Mapping[str, PlatformPerson] = field(default_factory=dict)  # by look_alike(username)
    # People syncd holds that changed on the platform since the last run, by username.
    changed: Mapping[str, PlatformEmployee] = field(default_factory=dict)
    # Usernames of people syncd holds that the platform no longer has (deleted there).
    deleted: frozenset[str] = frozenset()
    employee_count: int = 0  # the root's all_employee_count: 0, nobody to adopt
    # A first run matching by another key than username (sync.match_by): every account,
    # by its normalised value of that key.
    by_key: Mapping[str, tuple[PlatformPerson, ...]] = field(default_factory=dict)
    # What the next complete read compares the nodes' counts with, once this run is clean.
    census: Census | None = field(default=None, compare=False)
    # Known problems whose holder no longer holds the value, as (source id, field).
    released: frozenset[tuple[str, str]] = frozenset()
    # Accounts a state database put back from before they were made again was pointed at
    # this run (syncd.run.rebuild.follow_moved): what tells who holds each, by username.
    followed: Mapping[str, Mapping[str, str]] = field(default_factory=dict, compare=False)
    # Every username the users list named since the people's cursor, anyone's, and the
    # census of names: newcomers are looked up in these spellings too
    # (syncd.survey.view.newcomers).
    named: frozenset[str] = field(default=frozenset(), compare=False)
    # The census of names after this read: every username in another spelling than its
    # look-alike key that a users list syncd read named (``Alice``, ``JOSÉ``), which no
    # look-up by the source's spellings finds (syncd.survey.view.spelled_apart); kept
    # from run to run (syncd.run.cursors.NAMES). None: the people were not read.
    names: frozenset[str] | None = field(default=None, compare=False)
    # Where the next reads of nodes and people changed since start: the platform's own
    # last_modified stamps, as its answers gave them (see syncd.run.cursors).
    # Accounts with a source id under a username syncd does not hold, which this read
    # came upon (changed since the people's cursor, or in a whole listing).
    marked: tuple[PlatformMark, ...] = field(default=(), compare=False)
    nodes_cursor: int | None = field(default=None, compare=False)
    people_cursor: int | None = field(default=None, compare=False)
    _paths: dict[int, str] = field(default_factory=dict, repr=False, compare=False)

    def name_paths(self) -> dict[int, str]:
        """Node id -> name path ("Acme/R&D"), for the nodes listed (orphans and cycles left out)."""
        if self._paths or not self.nodes:
            return self._paths
        cache: dict[int, str] = {self.root_id: self.root_name}
        for node_id in self.nodes:
            chain: list[PlatformNode] = []
            current: int | None = node_id
            while current is not None and current not in cache:
                node = self.nodes.get(current)
                if node is None or len(chain) > len(self.nodes):
                    break
                chain.append(node)
                current = node.parent_id
            if current is None or current not in cache:
                continue
            prefix = cache[current]
            for node in reversed(chain):
                prefix = f"{prefix}/{node.name}"
                cache[node.id] = prefix
        del cache[self.root_id]
        self._paths.update(cache)
        return self._paths


@dataclass(frozen=True)
class Policy:
    leaver_policy: str = "lock_then_remove"  # lock, remove, lock_then_remove
    remove_after_days: int = 30
    exclude_usernames: tuple[str, ...] = ()
    exclude_departments: tuple[str, ...] = ()  # source ids or name paths below the root
    username_change: str = "conflict"  # or remove_and_create
    match_by: MatchKey = "username"  # a first run adopts accounts by it (or email, mobile, sn)
    extended_fields: Mapping[str, str] = field(default_factory=dict)
    # Source ids whose record is taken for the person syncd wrote under them, though it
    # shows another (sync.same_person: a name and a mobile corrected at once).
    same_person: frozenset[str] = frozenset()
    dates: DatePolicy = field(
        default_factory=DatePolicy
    )  # sync.dates: start and end dates (syncd.plan.schedule)


# ---------------------------------------------------------------- outputs


@dataclass(frozen=True, slots=True)
class Change:
    kind: Kind
    action: Action
    key: str  # source id
    display: str  # department: full name path as it is now; employee: username
    record: Department | Employee | Photo | None = None  # the wanted state
    hash: str = ""  # of the wanted fields
    target_id: int | None = None  # platform node or employee id, when known
    new_path: str = ""  # department: full name path once applied
    depth: int = 0  # department: 1 for a top-level department
    reason: str = ""
    previous_key: str | None = None  # employee: the source id this record was synced under
    platform_before: Mapping[str, Any] | None = None  # adoption and drift: the platform's values
    # The fields syncd last wrote for the record (a re-keyed one's under its old key), as
    # loaded before planning: the ``before`` of an update, lock or removal.
    written: Mapping[str, Any] | None = None
    extended_fields: Mapping[str, str] | None = None
    # Department source id -> name path ("Acme/R&D"), for the sentence: shared by all changes.
    departments: Mapping[str, str] = field(default_factory=dict)
    # employee: the unique values (mobile, email) this update only frees for another
    # person of the same run; applied in a phase of its own (see plan.unique_values).
    frees: tuple[str, ...] = ()
    # employee lock: the snapshot's lock_reason when not the usual (departed or missing):
    # "ended" (an end date) or "not_started" (created before the start day).
    lock_reason: str | None = None

    @property
    def before(self) -> Mapping[str, Any] | None:
        if self.platform_before is not None or isinstance(self.record, Photo):
            return self.platform_before  # a photo's: the digest set before, if any
        if self.action in (Action.CREATE, Action.ADOPT):
            return None
        # A re-keyed record's fields were written under its old key: compared with them,
        # a field the source cleared is cleared on the platform too.
        return self.written

    @property
    def after(self) -> Mapping[str, Any] | None:
        if isinstance(self.record, Department):
            return department_fields(self.record)
        if isinstance(self.record, Employee):
            return employee_fields(self.record, self.extended_fields or {})
        if isinstance(self.record, Photo):
            return photo_fields(self.record)
        return None

    def as_document(self) -> dict[str, Any]:
        """The change as plain data (for JSON): what, on which record, the sentence, the
        fields before and after."""
        return {
            "kind": self.kind.value,
            "action": self.action.value,
            "key": self.key,
            "display": self.new_path or self.display,
            "message": self.message,
            "before": self.before,
            "after": self.after,
        }

    @property
    def message(self) -> str:
        """One human sentence: what will be done, and why."""
        text = describe(self)
        return f"{text}: {self.reason}" if self.reason else text


@dataclass(frozen=True, slots=True)
class Note:
    """Something the report must say that is not a change: a conflict, a drift, a skip."""

    kind: str  # conflict, drift, unowned, skipped, leavers
    key: str
    message: str


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    notes: tuple[Note, ...] = ()
    # The earliest platform change to one of syncd's people that this plan could not
    # weigh (their row rejected, a username conflict): the people's refresh_time cursor
    # must stay before it, so the next run reads that change again.
    unweighed_since: int | None = None
    # When the first leaver held locked comes to the end of their grace period: from then
    # on the same inputs plan their removal (the only way the clock changes a plan).
    # (Also the first moment a scheduled date takes effect: the clock changes the plan.)
    removal_due: int | None = None
    # What the clock will do (start and end dates), soonest first: not changes, not counted.
    scheduled: tuple[Scheduled, ...] = ()
    # Employee source id -> (start date still ahead, end date) read now (None: none), where
    # they differ from the snapshot's: recorded after an apply for the people syncd holds.
    dates: Mapping[str, tuple[str | None, str | None]] = field(default_factory=dict)
    # Updates held as another person's (syncd.plan.holds), with what syncd wrote: never
    # applied, but the update guard counts them (many at once: an export gone wrong).
    withheld: tuple[Change, ...] = ()

    @property
    def removals(self) -> int:
        """Locks, removals and department deletions: what the removal guard counts (a new
        hire created locked until their start takes nobody's access away)."""
        return sum(1 for c in self.changes if c.action in REMOVING and c.lock_reason != NOT_STARTED)

    def counts(self) -> Counter[tuple[Kind, Action]]:
        return Counter((c.kind, c.action) for c in self.changes)


def department_paths(changes: Iterable[Change]) -> dict[str, str]:
    """Source id -> name path of the departments the changes' fields name (positions, a
    department's parent), for documents that keep the ids: JSON output, a saved plan."""
    paths: dict[str, str] = {}
    for c in changes:
        kind = c.kind.value
        named = fields_departments(kind, c.before) | fields_departments(kind, c.after)
        paths.update((k, c.departments[k]) for k in named if k in c.departments)
    return dict(sorted(paths.items()))


def people(n: int) -> str:
    return "1 person" if n == 1 else f"{n:,} people"


ACCESS_KEPT = "access kept"  # a note's kind: a run with one is partial (syncd.run.runner)


def _left_and_kept(n: int) -> str:
    one = n == 1
    return (
        f"{people(n)} the source says {'has' if one else 'have'} left "
        f"{'keeps' if one else 'keep'} their access"
    )


def access_kept(n: int) -> str:
    """Why people the source says have left are neither locked nor removed
    (EmployeePlanner.not_theirs)."""
    return (
        f"{_left_and_kept(n)}: the accounts under their usernames are not the ones syncd "
        "holds for them (the conflicts above), so nothing is locked or removed through them "
        "until the conflicts are resolved (`syncd state rebuild --dry-run` compares the "
        "state database with the platform)"
    )


def kept_for_rows(n: int) -> str:
    """Why people missing from the source are neither locked nor removed (rejected_holds,
    claimed_holds)."""
    return (
        f"{people(n)} missing from the source {'keeps' if n == 1 else 'keep'} their access: "
        "rows rejected, or under other people's ids, give their usernames and cannot say "
        "whose rows they are (the conflicts above), so nobody is locked or removed for them "
        "until the rows are fixed"
    )


def departed_rows_kept(n: int) -> str:
    """Why departed rows under the ids of people another row may show lock nobody."""
    return (
        f"{_left_and_kept(n)}: {'its row gives' if n == 1 else 'their rows give'} another "
        "username than the account under the id, and an active or rejected row under "
        "another id may be that account's person (the conflicts above), so nothing is "
        "locked until the source tells them apart"
    )


def renumbered_kept(n: int) -> str:
    """Why a departed record locks nobody while a row set aside under another id gives its
    username and may be the person's under a new id (EmployeePlanner.renumbered)."""
    rows = (
        "a row set aside under another id gives"
        if n == 1
        else "rows set aside under other ids give"
    )
    return (
        f"{_left_and_kept(n)}: {rows} their username and may be theirs under a new id (the "
        "conflicts above), so nothing is locked until the source tells them apart"
    )


def departures_held(n: int) -> str:
    """Why departed rows set aside lock nobody when other rows that name the person disagree
    (syncd.model.departures_alike, syncd.plan.join)."""
    return (
        f"{_left_and_kept(n)}: rows set aside that name them disagree about who they are "
        "or whether they left (the rows above), so nothing is locked until the source "
        "agrees with itself"
    )


def renamed_kept(n: int) -> str:
    """Why departed rows set aside lock nobody when they give another username than the
    account under the id (syncd.plan.departed_aside)."""
    rows = "its row is set aside and gives" if n == 1 else "their rows are set aside and give"
    return (
        f"{_left_and_kept(n)}: {rows} another username than the account under the id, so "
        "nothing is locked until the row is fixed"
    )


def matches_any(value: str, patterns: Sequence[str]) -> bool:
    """Whether ``value`` matches one of the shell patterns, in any letter case."""
    folded = value.casefold()
    return any(fnmatch.fnmatchcase(folded, p.casefold()) for p in patterns)
