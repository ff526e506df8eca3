"""The plan: what must change on the platform, as a value, and the guards that check it.

``plan()`` is a pure function of the Directory (what the source says), the Snapshot
(what syncd last wrote, and the platform ids it learned), a PlatformView (what the
platform holds now, as far as asked) and the Policy. It does no I/O and reads no
clock: the time comes in as ``now_ms``. It returns changes in the order the
executor applies them:

1. create departments, parents first;  2. update and move departments;
3. free the unique values people pass on (``unique_values``), create and update
   employees, then set their photos;  4. unlock, then lock;
5. remove employees;
6. forget people deleted on the platform and not wanted back (nothing is sent);
7. delete departments, children first.

Only records in the snapshot are ever updated, locked, removed or deleted; nodes and
people found on the platform are adopted (matched by serial_no, name path or username)
and updated like the rest; what the source never named is left alone and listed.

The package's rooms: ``values`` (inputs and outputs), ``fields`` (what is written and
its hash), ``departments`` and ``employees`` (the two planners), ``rekeys`` (whether a
new source id takes over a known username's account), ``holds`` (an update that would
hand an account to another person is not made), ``messages`` (the sentence of each
change), ``guards`` (the checks made before anything is sent), ``unique_values``
(mobiles and e-mail addresses: freed first, known problems retried), ``needs`` (what of
the snapshot planning weighs, which the runner loads first, as plain values).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from syncd.model import Directory, Employee, Kind, Photo, Position
from syncd.plan.actions import REMOVING, SHOWN_ORDER, Action, in_order, listed
from syncd.plan.dates import DatePolicy, Scheduled
from syncd.plan.departments import DepartmentPlanner
from syncd.plan.employees import EmployeePlanner
from syncd.plan.fields import (
    department_fields,
    department_hash,
    employee_fields,
    employee_hash,
    employee_hasher,
    extended_values,
    fields_departments,
)
from syncd.plan.guards import (
    Departures,
    GuardDecision,
    Limits,
    Reactivations,
    access_of,
    always_blocked,
    check_guards,
    departures,
    field_changes,
    reactivations,
    shifted_status,
    updates,
)
from syncd.plan.holds import Holds, holds_of
from syncd.plan.messages import field_diff
from syncd.plan.photos import plan_photos
from syncd.plan.unique_values import frees, retries, with_values
from syncd.plan.values import (
    ACCESS_KEPT,
    DAY_MS,
    Census,
    Change,
    FieldsNotLoaded,
    KnownProblem,
    Note,
    Plan,
    PlatformEmployee,
    PlatformNode,
    PlatformPerson,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    department_paths,
    matches_any,
    people,
)
from syncd.spelling import look_alike

__all__ = [
    "ACCESS_KEPT",
    "DAY_MS",
    "REMOVING",
    "SHOWN_ORDER",
    "Action",
    "Census",
    "Change",
    "DatePolicy",
    "Departures",
    "Draft",
    "FieldsNotLoaded",
    "GuardDecision",
    "KnownProblem",
    "Limits",
    "Note",
    "Plan",
    "Planning",
    "PlatformEmployee",
    "PlatformNode",
    "PlatformPerson",
    "PlatformView",
    "Policy",
    "Reactivations",
    "Scheduled",
    "Snapshot",
    "SyncedDepartment",
    "SyncedEmployee",
    "access_of",
    "always_blocked",
    "check_guards",
    "department_fields",
    "department_hash",
    "department_paths",
    "departures",
    "draft",
    "employee_fields",
    "employee_hash",
    "extended_values",
    "field_changes",
    "field_diff",
    "fields_departments",
    "finish",
    "in_order",
    "in_synced_spelling",
    "listed",
    "plan",
    "reactivations",
    "shifted_status",
    "updates",
]


def plan(
    directory: Directory,
    snapshot: Snapshot,
    view: PlatformView,
    policy: Policy,
    now_ms: int,
) -> Plan:
    """Compare what the source says with what syncd wrote and the platform holds.

    ``snapshot`` holds the fields of every record the plan changes (everyone's do); the
    runner loads only those the plan asks for instead (``Planning``).
    """
    planning = Planning(directory, snapshot, view, policy, now_ms)
    while (wanted := planning.wanted()) is not None:
        planning.give({k: snapshot.written(Kind.EMPLOYEE, k) for k in wanted})
    return planning.plan()


class Planning:
    """``plan`` in steps, each pure, for a caller that loads what syncd wrote for the
    people the plan changes only (the runner): while ``wanted`` names source ids, load
    their written fields and ``give`` them; then ``plan``. Once the first are given, the
    updates that would hand an account to another person are found and the draft is made
    again without them (``syncd.plan.holds``): it may want a few more."""

    def __init__(
        self,
        directory: Directory,
        snapshot: Snapshot,
        view: PlatformView,
        policy: Policy,
        now_ms: int,
    ) -> None:
        self._inputs = (directory, snapshot, view, policy, now_ms)
        self._drafted = draft(directory, snapshot, view, policy, now_ms)
        self._written: dict[str, Mapping[str, Any] | None] = {}
        self._holds: Holds | None = None  # found once the first fields are given

    def wanted(self) -> list[str] | None:
        """The source ids whose written fields the plan needs next (maybe none, the first
        time); None once it has all it needs."""
        wanted = [k for k in self._drafted.unwritten() if k not in self._written]
        return wanted if wanted or self._holds is None else None

    def give(self, written: Mapping[str, Mapping[str, Any] | None]) -> None:
        """What syncd wrote for the people ``wanted`` named, by source id (None: nothing)."""
        self._written.update(written)
        if self._holds is not None:
            return
        directory, _, view, policy, _ = self._inputs
        self._holds = holds_of(
            self._drafted.upserts,
            self._drafted.username_changes,
            self._written,
            view,
            policy.same_person,
            directory.complete,
        )
        if self._holds.held:
            self._drafted = draft(*self._inputs, self._holds)

    def plan(self) -> Plan:
        """The plan, once nothing more is ``wanted``."""
        holds = self._holds
        if holds is None or self.wanted() is not None:
            raise ValueError("the plan still wants written fields: give them first")
        drafted = replace(self._drafted, notes=(*self._drafted.notes, *holds.notes))
        return finish(drafted, self._written, holds.withheld)


@dataclass(frozen=True)
class Draft:
    """A plan whose changes to people do not carry yet what syncd last wrote for them
    (their ``before``), nor the updates that free unique values, which are made from it."""

    leading: tuple[Change, ...]  # departments created, updated, moved; old accounts replaced
    upserts: tuple[Change, ...]  # people created and updated
    trailing: tuple[Change, ...]  # photos, unlocks, locks, removals, forgets, deletions
    notes: tuple[Note, ...]
    unweighed_since: int | None
    removal_due: int | None
    extended_fields: Mapping[str, str]
    scheduled: tuple[Scheduled, ...]  # future changes (effective dates): shown, not done
    dates: Mapping[str, tuple[str | None, str | None]]  # recorded after the run (Plan.dates)
    # Records whose username the source changed (a conflict, or the old account replaced),
    # with the username of the account under their key: weighed as the updates are
    # (syncd.plan.holds).
    username_changes: tuple[tuple[Employee, str], ...] = ()

    def unwritten(self) -> list[str]:
        """The source ids under which syncd wrote the people these changes show as before,
        or whom the holds weigh."""
        shown = (
            c.previous_key or c.key
            for c in (*self.leading, *self.upserts, *self.trailing)
            if _shows_written(c)
        )
        return sorted({*shown, *(e.id for e, _ in self.username_changes)})


def draft(
    directory: Directory,
    snapshot: Snapshot,
    view: PlatformView,
    policy: Policy,
    now_ms: int,
    holds: Holds | None = None,
) -> Draft:
    """The plan, but for what syncd wrote for the people it changes: pure, as ``plan``.
    Asks ``snapshot`` only for the fields ``syncd.plan.needs.weighed`` names; the updates
    ``holds`` names are not made (``syncd.plan.holds``)."""
    directory = in_synced_spelling(directory, snapshot)
    notes = [Note("source", "", warning) for warning in directory.warnings]
    if directory.filtered:
        left_out = people(directory.filtered)
        notes.append(Note("source", "", f"{left_out} left out by source.mapping.filter"))
    departments = DepartmentPlanner(directory, snapshot, view, policy, notes)
    creates, updates = departments.run()
    staff = EmployeePlanner(directory, snapshot, view, policy, notes, now_ms, holds)
    replaced, upserts, unlocks, locks, removes, forgets = staff.run()
    creates = departments.placed_in(creates, upserts, staff.untouched)
    upserts = [*upserts, *_retried(staff, snapshot, view, upserts)]
    photos = plan_photos(directory, snapshot, upserts, policy.exclude_usernames, staff.untouched)
    # Last: a department is deleted only once nobody stays in it after the people's changes.
    deletes = departments.deletes((*replaced, *upserts, *removes, *forgets))
    return Draft(
        leading=(*creates, *updates, *replaced),
        upserts=tuple(upserts),
        trailing=(*photos, *unlocks, *locks, *removes, *forgets, *deletes),
        notes=tuple(notes),
        unweighed_since=staff.unweighed_since(),
        removal_due=_earliest(staff.removal_due, staff.dates.due()),
        extended_fields=policy.extended_fields,
        scheduled=staff.dates.in_order(),
        dates=staff.dates.recorded,
        username_changes=tuple(staff.username_changes),
    )


def finish(
    drafted: Draft,
    written: Mapping[str, Mapping[str, Any] | None],
    withheld: Sequence[Change] = (),
) -> Plan:
    """The plan: each change to a person with what syncd last wrote for them (``written``,
    by source id: those ``Draft.unwritten`` names), and the updates that free values
    swapped or passed on among syncd's people, sent first; the updates ``withheld``
    (``syncd.plan.holds``) beside them, not to apply."""

    def shown(c: Change) -> Change:
        if not _shows_written(c):
            return c
        return replace(c, written=written[c.previous_key or c.key] or None)

    upserts = [shown(c) for c in drafted.upserts]
    freeing = frees(upserts, employee_hasher(drafted.extended_fields))
    return Plan(
        changes=(
            *map(shown, drafted.leading),
            *freeing,
            *upserts,
            *map(shown, drafted.trailing),
        ),
        notes=drafted.notes,
        unweighed_since=drafted.unweighed_since,
        removal_due=drafted.removal_due,
        scheduled=drafted.scheduled,
        dates=drafted.dates,
        withheld=tuple(map(shown, withheld)),
    )


def _shows_written(c: Change) -> bool:
    """Whether the change to a person shows (or weighs) what syncd last wrote for them."""
    return (
        c.kind is Kind.EMPLOYEE
        and c.action not in (Action.CREATE, Action.ADOPT)
        and not isinstance(c.record, Photo)
    )


def _earliest(*moments: int | None) -> int | None:
    return min((m for m in moments if m is not None), default=None)


def in_synced_spelling(directory: Directory, snapshot: Snapshot) -> Directory:
    """The directory with each department id spelled as syncd first synced it.

    A source's department ids are read in NFC (``build_directory``), and an id made of
    names (a path, in the CSV layout ``paths`` or LDAP's ``departments_from = "attribute"``)
    changes with any change of spelling. A new id that looks like a synced one gone from
    the source (``syncd.spelling.look_alike``: ``Café`` an earlier syncd kept in NFD,
    ``Head Office/Sales`` re-exported as ``HEAD OFFICE/Sales``) is that department under
    the key it was synced with, renamed if its name changed, never a second one. When two
    ids could be the one, neither is taken for it.
    """
    renamed = _respelled_departments(directory, snapshot)
    if not renamed:
        return directory
    return _with_department_keys(directory, renamed)


def _respelled_departments(directory: Directory, snapshot: Snapshot) -> dict[str, str]:
    """New department id -> the synced id it is a respelling of, where only one can be."""
    synced = snapshot.departments
    # A rejected department's row is looked at too: it keeps the synced one as it is.
    kept = directory.rejected_keys(Kind.DEPARTMENT)
    new = [k for k in (*directory.departments, *kept) if k not in synced]
    if not new or not synced:
        return {}
    gone: dict[str, list[str]] = {}
    for k in synced:
        if k not in directory.departments and k not in kept:
            gone.setdefault(look_alike(k), []).append(k)
    claims: dict[str, list[str]] = {}
    for k in new:
        old = gone.get(look_alike(k), [])
        if len(old) == 1:
            claims.setdefault(old[0], []).append(k)
    return {ks[0]: old for old, ks in claims.items() if len(ks) == 1}


def _with_department_keys(directory: Directory, renamed: dict[str, str]) -> Directory:
    """The directory with the departments ``renamed`` gives under their synced ids, in
    the departments, the employees' positions and the rejected rows alike."""

    def key(department_id: str) -> str:
        return renamed.get(department_id, department_id)

    departments = {
        key(d.id): replace(d, id=key(d.id), parent_id=d.parent_id and key(d.parent_id))
        for d in directory.departments.values()
    }
    employees = {
        k: e._replace(positions=tuple(_placed(p, renamed) for p in e.positions))
        if any(p.department_id in renamed for p in e.positions)
        else e
        for k, e in directory.employees.items()
    }
    rejected = tuple(
        replace(r, key=key(r.key)) if r.kind is Kind.DEPARTMENT and r.key else r
        for r in directory.rejected
    )
    return replace(
        directory, departments=departments, employees=employees, rejected=rejected, _paths={}
    )


def _placed(p: Position, renamed: dict[str, str]) -> Position:
    if p.department_id in renamed:
        return replace(p, department_id=renamed[p.department_id])
    return p


def _retried(
    staff: EmployeePlanner, snapshot: Snapshot, view: PlatformView, upserts: list[Change]
) -> list[Change]:
    """Updates of people whose known problem's value the holder gave up: as the source
    wants them (a departed person's locked account too: its fields follow the row), or,
    when the read did not return them and they are no leaver, as syncd wrote them with the
    value. Never for a record the planner left untouched (a key showing another person
    now, a conflict): the value would be written with that record onto the account."""
    # A holder's update that gives the value up frees it: weighed with what syncd wrote.
    holders = {p.holder_key for known in snapshot.problems.values() for p in known}
    weighed = [
        replace(c, written=snapshot.written(Kind.EMPLOYEE, c.key))
        if c.key in holders and c.previous_key is None and _shows_written(c)
        else c
        for c in upserts
    ]
    found = []
    for source_id, known in retries(snapshot.problems, view.released, weighed).items():
        synced = snapshot.employees.get(source_id)
        if synced is not None and (change := _retry(staff, view, synced, known)) is not None:
            found.append(change)
    return found


def _retry(
    staff: EmployeePlanner, view: PlatformView, synced: SyncedEmployee, known: list[KnownProblem]
) -> Change | None:
    """One person's update with the values let go (``_retried``), if any is due."""
    excluded = staff.policy.exclude_usernames
    if (
        synced.source_id in staff.untouched
        or synced.username in view.deleted
        or (excluded and matches_any(synced.username, excluded))
    ):
        return None
    what = ", ".join(f"{p.field} {p.value}" for p in known)
    reason = f"{what} no longer held by another account: set again"
    e: Employee | None = staff.directory.employees.get(synced.source_id)
    if e is not None:
        if synced.matched_by is None and e.username != synced.username:
            return None  # a username change: planned on its own
        e = e._replace(username=synced.username)
        return staff.change(Action.UPDATE, e, synced, hash=staff.hash(e), reason=reason)
    if staff.directory.complete or synced.locked:
        return None  # gone from the source, or held locked as gone: a leaver
    written = staff.drift.as_written(synced, staff.policy.extended_fields)
    if written is None:
        return None
    e = with_values(written, {p.field: p.value for p in known})
    return staff.change(Action.UPDATE, e, synced, hash=synced.hash, reason=reason)
