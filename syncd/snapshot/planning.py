"""What planning reads of the snapshot, loaded before it as plain values: dicts and
tuples that hold no connection and run no query later (``syncd.plan.Snapshot``).

A run loads in steps, each only what the next decision needs. First the departments,
how many people syncd holds, the photos and the known problems (``load_snapshot`` with
``everyone=False``): a run whose inputs are unchanged plans nothing and reads no more.
Then the people's records (``with_people``): everyone for a complete read, only the
people an incremental read names otherwise (``syncd.run.runner`` says when). Then the fields
planning weighs (``with_fields``: ``syncd.plan.needs``), the plan's draft, and the
fields of the people its changes show (``written_fields``).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from sqlalchemy import Connection, Engine

from syncd.model import Directory, Kind
from syncd.plan import PlatformView, Snapshot, SyncedDepartment, SyncedEmployee
from syncd.plan.needs import (
    departments_weighed,
    gone_departments,
    names_only_synced,
    people_asked,
    weighed,
)
from syncd.snapshot import sql
from syncd.snapshot.dates import load_dates
from syncd.snapshot.departures import load_departures
from syncd.snapshot.engine import translated
from syncd.snapshot.problems import load_problems
from syncd.snapshot.records import PlacedLookup
from syncd.spelling import look_alike

_EMPLOYEES = (
    "SELECT source_id, username, employee_id, hash, locked, lock_reason, locked_since, "
    "matched_by FROM employees"
)


@translated
def load_snapshot(engine: Engine, *, everyone: bool = True, fields: bool = False) -> Snapshot:
    """What syncd last wrote, as plain values.

    ``everyone``: with each person's record; without, the count alone (``with_people``
    adds those a plan asks about). ``fields``: with every record's fields and where each
    person is placed, all a plan of anything can ask (a rebuild, a test); a run loads
    only what its plan asks (``with_fields``, ``written_fields``).
    """
    with engine.connect() as conn:
        # The driver's own cursor (sql.rows): SQLAlchemy's row objects cost more than
        # building the values themselves, 100,000 times over.
        departments = {
            r[0]: SyncedDepartment(r[0], int(r[1]), r[2], r[3])
            for r in sql.rows(
                conn,
                "SELECT source_id, node_id, name_path, hash FROM departments "
                "WHERE node_id IS NOT NULL",
            )
        }
        photos = {r[0]: r[1] for r in sql.rows(conn, "SELECT source_id, digest FROM photos")}
        problems = load_problems(conn)
        start_dates, end_dates = load_dates(conn)
        departures = load_departures(conn)
        if everyone:
            employees = {e.source_id: e for e in map(_synced, sql.rows(conn, _EMPLOYEES))}
            count = None
        else:
            employees = {}
            ((count,),) = sql.rows(conn, "SELECT COUNT(*) FROM employees")
    snapshot = Snapshot(
        departments,
        employees,
        photos=photos,
        problems=problems,
        start_dates=start_dates,
        end_dates=end_dates,
        departures=departures,
        people=None if count is None else int(count),
        fields_of=frozenset(),  # nobody's yet
        department_fields_of=frozenset(),
    )
    if fields:
        snapshot = with_fields(engine, snapshot, None, list(departments))
    return snapshot


@translated
def with_people(
    engine: Engine, snapshot: Snapshot, source_ids: Collection[str] | None = None
) -> Snapshot:
    """The snapshot with everyone's records (``source_ids`` None), or with those of these
    people that syncd holds added to the ones it has."""
    if source_ids is not None and not source_ids:
        return snapshot
    with engine.connect() as conn:
        if source_ids is None:
            everyone = {e.source_id: e for e in map(_synced, sql.rows(conn, _EMPLOYEES))}
            return replace(snapshot, employees=everyone, people=None)
        among, values = sql.among(conn, source_ids)
        rows = sql.rows(conn, _EMPLOYEES + " WHERE source_id " + among, (values,))
        found = {e.source_id: e for e in map(_synced, rows)}
    return replace(snapshot, employees={**snapshot.employees, **found})


@translated
def with_fields(
    engine: Engine,
    snapshot: Snapshot,
    people: Collection[str] | None,
    placed_in: Collection[str] = (),
    departments: Collection[str] | None = None,
) -> Snapshot:
    """The snapshot with these people's fields and these departments' (None: everyone's,
    every one's), and who of syncd's people is placed in the ``placed_in`` departments
    (as last written)."""
    with engine.connect() as conn:
        if departments is None:
            rows = sql.rows(conn, "SELECT source_id, fields FROM departments")
        else:
            among, values = sql.among(conn, departments)
            query = "SELECT source_id, fields FROM departments WHERE source_id " + among  # noqa: S608
            rows = sql.rows(conn, query, (values,))
        fields: dict[tuple[Kind, str], Mapping[str, Any]] = {
            **snapshot.fields,
            **{(Kind.DEPARTMENT, str(k)): v for k, text in rows if (v := _decoded(text))},
        }
        if people is None:
            rows = sql.rows(conn, "SELECT source_id, fields FROM employees")
        else:
            rows = _fields_of(conn, people)
        fields.update(((Kind.EMPLOYEE, str(k)), v) for k, text in rows if (v := _decoded(text)))
        placed: dict[str, list[str]] = {}
        if placed_in:
            placed = PlacedLookup.query(conn, placed_in)
    loaded = None if people is None else frozenset(people) | (snapshot.fields_of or frozenset())
    units = snapshot.department_fields_of or frozenset()
    return replace(
        snapshot,
        fields=fields,
        fields_of=loaded,
        department_fields_of=None if departments is None else frozenset(departments) | units,
        placed={**snapshot.placed, **{k: tuple(v) for k, v in placed.items()}},
    )


@translated
def written_fields(
    engine: Engine, source_ids: Collection[str]
) -> dict[str, Mapping[str, Any] | None]:
    """The fields syncd last wrote for these people, by source id (None: none recorded):
    what a plan's changes show as before (``syncd.plan.finish``)."""
    found: dict[str, Mapping[str, Any] | None] = dict.fromkeys(source_ids)
    if not source_ids:
        return found
    with engine.connect() as conn:
        found.update((str(k), _decoded(text)) for k, text in _fields_of(conn, source_ids))
    return found


def _fields_of(conn: Connection, source_ids: Collection[str]) -> list[tuple[Any, ...]]:
    among, values = sql.among(conn, source_ids)
    query = "SELECT source_id, fields FROM employees WHERE source_id " + among  # noqa: S608
    return sql.rows(conn, query, (values,))


def _decoded(text: str | None) -> dict[str, Any] | None:
    """Stored fields (JSON text) as a dict; None for none (empty as well)."""
    if not text:
        return None
    loaded: dict[str, Any] = json.loads(text)
    return loaded or None


def _synced(r: tuple[Any, ...]) -> SyncedEmployee:
    return SyncedEmployee(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7])


def people_for(
    engine: Engine,
    head: Snapshot,
    directory: Directory,
    view: PlatformView,
    *,
    everyone: bool,
    loaded: dict[str, SyncedEmployee] | None = None,
) -> Snapshot:
    """The second step: the people's records the plan asks about, added to ``head`` (loaded
    with ``everyone=False``): everyone, unless ``syncd.plan.needs.people_asked`` names
    some (and ``everyone`` is not asked). ``loaded``: everyone's, as the platform reader
    read them once it is done (``Held.everyone``), taken rather than read again."""
    asked = None if everyone else people_asked(directory, view, head)
    if asked is not None:
        some = with_people(engine, head, asked)
        if names_only_synced(directory, some):
            return some
    if loaded is not None:
        return replace(head, employees=loaded, people=None)
    return with_people(engine, head)


def weighed_fields(
    engine: Engine, snapshot: Snapshot, directory: Directory, view: PlatformView
) -> Snapshot:
    """The third step: the fields planning weighs (``syncd.plan.needs``), and who of syncd's
    people is placed in the departments the read no longer names."""
    return with_fields(
        engine,
        snapshot,
        weighed(directory, snapshot, view),
        gone_departments(directory, snapshot),
        departments_weighed(directory, snapshot, view),
    )


@translated
def with_history(engine: Engine, snapshot: Snapshot, view: PlatformView) -> Snapshot:
    """``snapshot``, with the source ids syncd's history wrote under the usernames of the
    platform's accounts a plan may adopt (``view.people``): a username syncd wrote for
    another record is not the newcomer's on its word (``syncd.plan.adoption``). Read only
    when there are such accounts (a first run, a newcomer holding a taken username)."""
    usernames = sorted({p.username for p in view.people.values()})
    if not usernames:
        return snapshot
    seen: dict[str, set[str]] = {}
    with engine.connect() as conn:
        among, values = sql.among(conn, usernames)
        rows = sql.run(
            conn,
            "SELECT DISTINCT display, key FROM run_items WHERE kind = 'employee' "  # noqa: S608
            "AND outcome IN ('ok', 'recovered') AND display " + among,
            (values,),
        )
        for username, key in rows:
            seen.setdefault(look_alike(username), set()).add(key)
    return replace(snapshot, seen={k: frozenset(v) for k, v in seen.items()})
