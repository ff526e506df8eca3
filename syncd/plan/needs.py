"""What planning reads of the snapshot beyond its records, so that the runner loads it
first, as plain values (``Snapshot.fields`` and ``Snapshot.placed``).

Planning weighs the fields syncd last wrote for a few people only: those held locked whom
the read has active again (is it the person syncd wrote?), those who changed on
the platform or were deleted there (drift compares them; an incremental read puts back
those it did not return, as written), those with a known problem and the people holding
their values (tried again as written; freed by the holder's update), and, when a
complete read names a new source id (a rejected row's included) or gives a record syncd
holds another username, the people it no longer names (one may hold that username: a
re-key needs the name and a mobile or work number to agree, and a row under another
record's id may be theirs); those it says departed whose username a rejected row gives
(the person's own under a new id?); and
the departments the source changed, the platform's read lists (drift) or the source no
longer names (deleted). The fields a change shows as its ``before`` are loaded after the
draft (``Draft.unwritten``). A record asked about and not loaded is a bug, said as one
(``FieldsNotLoaded``), never planned as if syncd had written nothing.
"""

from __future__ import annotations

from operator import attrgetter

from syncd.model import Directory, Kind, State
from syncd.plan import in_synced_spelling
from syncd.plan.fields import department_hash
from syncd.plan.values import PlatformView, Snapshot
from syncd.spelling import look_alike

_LOCKED = attrgetter("locked")


def people_asked(directory: Directory, view: PlatformView, snapshot: Snapshot) -> set[str] | None:
    """The source ids of the people whose records a plan of this read asks about, when
    it asks about some only (None: everyone). A complete read goes over everyone (who is
    gone?); an incremental one over those it names and those with a known problem,
    unless the platform changed or deleted any of syncd's people (holders are found by
    username then). If one it names turns out new, the plan asks about everyone after
    all (``names_only_synced``): whose username do they take?"""
    if directory.complete or view.changed or view.deleted:
        return None
    return {*directory.employees, *snapshot.problems, *snapshot.end_dates, *snapshot.start_dates}


def names_only_synced(directory: Directory, snapshot: Snapshot) -> bool:
    """Whether everyone the read names is among the snapshot's people."""
    return all(k in snapshot.employees for k in directory.employees)


def weighed(directory: Directory, snapshot: Snapshot, view: PlatformView) -> set[str]:
    """The source ids of syncd's people whose written fields planning weighs.

    ``snapshot.employees`` must hold the holders of every username the platform view names
    (changed or deleted there) and, for a complete read, everyone (the runner loads
    everyone then)."""
    synced = snapshot.employees
    found = {k for k in snapshot.problems if k in synced}
    # The holders of their values: an update of theirs may give one up (unique_values).
    found.update(
        p.holder_key
        for known in snapshot.problems.values()
        for p in known
        if p.holder_key is not None and p.holder_key in synced
    )
    # Hires made before their start: unlocked on the day as written, read or not (schedule).
    found.update(k for k in snapshot.start_dates if k in synced)
    # People held locked and read active again: are they the person syncd wrote? (a source
    # id given to someone else is no return: syncd.plan.holds.someone_else_back)
    people = directory.employees
    found.update(
        s.source_id
        for s in filter(_LOCKED, synced.values())  # the few locked, picked out in C
        if (e := people.get(s.source_id)) is not None and e.state is State.ACTIVE
    )
    found.update(_renumbered(directory, snapshot))
    found.update(_beside_moved_statuses(directory, snapshot))
    # People the read gives another username: a row under another's id (rekeys.claiming_row)?
    renamed = _renamed(directory, snapshot)
    found.update(renamed)
    there = (*view.changed, *view.deleted)
    if there:
        by_username = {e.username: k for k, e in synced.items()}
        found.update(by_username[u] for u in there if u in by_username)
    if directory.complete and (renamed or _new_ids(directory, snapshot)):
        # A new source id may take over the account of someone syncd holds whom this read
        # no longer names (a re-key, weighed with what syncd wrote), a rejected row with
        # a new id may name their username (rekeys.weigh_rejected), and so may a record
        # syncd holds under another username (rekeys.claiming_row): those people, a
        # superset of the holders of those usernames, found without spelling each.
        found.update(synced.keys() - directory.employees.keys())
    return found


def _renumbered(directory: Directory, snapshot: Snapshot) -> list[str]:
    """The people the read says departed whose username a rejected row gives: one under
    another id may be theirs under a new id (EmployeePlanner.renumbered)."""
    given = {
        look_alike(r.username)
        for r in directory.rejected
        if r.kind is Kind.EMPLOYEE and r.key and r.username
    }
    if not given:
        return []  # as a rule
    synced = snapshot.employees
    people = directory.employees.items()
    leaving = [*directory.departed_aside(), *(k for k, e in people if e.state is State.DEPARTED)]
    return [k for k in leaving if (s := synced.get(k)) and look_alike(s.username) in given]


def _new_ids(directory: Directory, snapshot: Snapshot) -> bool:
    """Whether the read names a source id syncd does not hold, in a record or a rejected row
    that names a username."""
    synced = snapshot.employees
    return any(k not in synced for k in directory.employees) or any(
        r.key not in synced
        for r in directory.rejected
        if r.kind is Kind.EMPLOYEE and r.key and r.username
    )


def _beside_moved_statuses(directory: Directory, snapshot: Snapshot) -> list[str]:
    """The people syncd holds whose rows are beside statuses a moved line break may have
    made (syncd.plan.moved_breaks): what syncd wrote for their field at the edge tells."""
    synced = snapshot.employees
    return [beside for beside, *_ in directory.moved_statuses.values() if beside in synced]


def _renamed(directory: Directory, snapshot: Snapshot) -> set[str]:
    """The records syncd holds that the read gives another username than it synced, in a
    record or a rejected row (whose username may be a missing person's)."""
    synced = snapshot.employees
    found = {
        k
        for k, e in directory.employees.items()
        if (s := synced.get(k)) is not None and s.username != e.username
    }
    found.update(
        r.key
        for r in directory.rejected
        if r.kind is Kind.EMPLOYEE
        and r.key
        and r.username
        and (s := synced.get(r.key)) is not None
        and s.username != r.username
    )
    return found


def departments_weighed(directory: Directory, snapshot: Snapshot, view: PlatformView) -> set[str]:
    """The departments whose written fields planning weighs or shows: those the source
    changed since syncd wrote them, those whose node the platform view lists (drift is
    looked for), and those gone from the source (deleted, with what syncd wrote)."""
    directory = in_synced_spelling(directory, snapshot)
    synced, nodes = snapshot.departments, view.nodes
    found = {
        k
        for k, d in directory.departments.items()
        if (s := synced.get(k)) is not None and (s.node_id in nodes or s.hash != department_hash(d))
    }
    found.update(gone_departments(directory, snapshot))
    return found


def gone_departments(directory: Directory, snapshot: Snapshot) -> list[str]:
    """Departments syncd synced that this read does not name: where the plan asks who of
    syncd's people is placed (``Snapshot.placed``), before deleting them. A department
    only renamed in its spelling (``in_synced_spelling``) is among them: more than asked."""
    if not directory.complete:  # only a complete read deletes departments
        return []
    return sorted(k for k in snapshot.departments if k not in directory.departments)
