"""The snapshot: what syncd wrote for each department and person, loaded for planning and kept
current as batches succeed."""

from __future__ import annotations

import json
import threading
from collections.abc import (
    Callable,
    Collection,
    ItemsView,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any

from sqlalchemy import Connection, Engine, text

from syncd.model import Kind
from syncd.plan import Snapshot, SyncedDepartment, SyncedEmployee
from syncd.snapshot.dates import load_dates
from syncd.snapshot.engine import translated
from syncd.snapshot.problems import load_problems

_EMPLOYEES = (
    "SELECT source_id, username, employee_id, hash, locked, lock_reason, locked_since, "
    "matched_by FROM employees"
)


@translated
def load_snapshot(engine: Engine) -> Snapshot:
    """What syncd last wrote, as plain values; people and field values are read when
    first asked about (SyncedEmployees, FieldLookup)."""
    with engine.connect() as conn:
        # The driver's own cursor: SQLAlchemy's row objects cost more than building the
        # values themselves, 100,000 times over.
        raw = conn.connection.driver_connection
        assert raw is not None
        departments = {
            r[0]: SyncedDepartment(r[0], int(r[1]), r[2], r[3])
            for r in raw.execute(
                "SELECT source_id, node_id, name_path, hash FROM departments "
                "WHERE node_id IS NOT NULL"
            )
        }
        (count,) = raw.execute("SELECT COUNT(*) FROM employees").fetchone()
        photos = {r[0]: r[1] for r in raw.execute("SELECT source_id, digest FROM photos")}
        problems = load_problems(raw)
        start_dates, end_dates = load_dates(raw)
    return Snapshot(
        departments,
        SyncedEmployees(engine, int(count)),
        FieldLookup(engine),
        PlacedLookup(engine),
        photos=photos,
        problems=problems,
        start_dates=start_dates,
        end_dates=end_dates,
    )


def read_everyone(employees: Mapping[str, SyncedEmployee]) -> None:
    """Read syncd's people now if they are read as asked about (SyncedEmployees)."""
    if isinstance(employees, SyncedEmployees):
        employees.load()


def usernames(employees: Mapping[str, SyncedEmployee]) -> list[str]:
    """The usernames syncd's people hold: all that a run with nothing to plan asks about."""
    if isinstance(employees, SyncedEmployees):
        return employees.usernames()
    return [e.username for e in employees.values()]


def holding(employees: Mapping[str, SyncedEmployee], names: Collection[str]) -> set[str]:
    """Which of these usernames syncd's people hold."""
    if isinstance(employees, SyncedEmployees):
        return employees.holding(names)
    owned = set(usernames(employees))
    return {u for u in names if u in owned}


def by_username(
    employees: Mapping[str, SyncedEmployee], names: Collection[str]
) -> dict[str, SyncedEmployee]:
    """syncd's people who hold these usernames, by username."""
    if isinstance(employees, SyncedEmployees):
        return employees.by_username(names)
    wanted = set(names)
    return {e.username: e for e in employees.values() if e.username in wanted}


def written(
    fields: Callable[[Kind, str], Mapping[str, Any] | None], source_ids: Sequence[str]
) -> dict[str, Mapping[str, Any]]:
    """The fields syncd last wrote for these people, read now and kept by nobody (people
    drift compares a listing part by part: 100,000 people's fields are never held)."""
    if isinstance(fields, FieldLookup):
        return fields.read(source_ids)
    found = {}
    for source_id in source_ids:
        value = fields(Kind.EMPLOYEE, source_id)
        if value is not None:
            found[source_id] = value
    return found


def _all_employees(raw: Any) -> dict[str, SyncedEmployee]:
    rows = raw.execute(_EMPLOYEES)
    return {e.source_id: e for e in map(_synced, rows)}


def _synced(r: tuple[Any, ...]) -> SyncedEmployee:
    return SyncedEmployee(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7])


class SyncedEmployees(Mapping[str, SyncedEmployee]):
    """syncd's people, read one by one as planning asks about them, and all at once the
    first time anything goes over them all or asks about more than a few (``load``).

    A run with nothing to plan asks for their usernames, and an incremental run about a
    few people: loading 100,000 was a third of either. Answers are the database's when
    asked: the runner loads everyone (``load``) before the run writes anything.
    """

    _ONE_BY_ONE = 256  # more look-ups than this: one query for everyone costs less

    def __init__(self, engine: Engine, count: int) -> None:
        self._engine = engine
        self._count = count
        self._asked: dict[str, SyncedEmployee | None] = {}
        self._everyone: dict[str, SyncedEmployee] | None = None
        self._loading = threading.Lock()

    @translated
    def load(self) -> dict[str, SyncedEmployee]:
        """Everyone, read now if not yet."""
        with self._loading:  # the platform's reader asks too, from its thread
            if self._everyone is None:
                with self._engine.connect() as conn:
                    self._everyone = _all_employees(conn.connection.driver_connection)
                self._asked.clear()
        return self._everyone

    def usernames(self) -> list[str]:
        if self._everyone is not None:
            return [e.username for e in self._everyone.values()]
        return [str(r[0]) for r in self._query("SELECT username FROM employees")]

    def holding(self, names: Collection[str]) -> set[str]:
        """Which of these usernames syncd's people hold: a few asked of the database."""
        if self._everyone is not None or len(names) > self._ONE_BY_ONE:
            return holding(self.load(), names)
        rows = self._query(
            "SELECT username FROM employees WHERE username IN (SELECT value FROM json_each(?))",
            json.dumps(list(names)),
        )
        return {str(r[0]) for r in rows}

    def by_username(self, names: Collection[str]) -> dict[str, SyncedEmployee]:
        """The people holding these usernames: a few asked of the database."""
        if self._everyone is not None or len(names) > self._ONE_BY_ONE:
            return by_username(self.load(), names)
        rows = self._query(
            _EMPLOYEES + " WHERE username IN (SELECT value FROM json_each(?))",  # noqa: S608
            json.dumps(list(names)),
        )
        return {e.username: e for e in map(_synced, rows)}

    def __len__(self) -> int:
        return self._count if self._everyone is None else len(self._everyone)

    def __iter__(self) -> Iterator[str]:
        return iter(self.load())

    def __getitem__(self, key: str) -> SyncedEmployee:
        if self._everyone is None and len(self._asked) >= self._ONE_BY_ONE:
            self.load()
        if self._everyone is not None:
            return self._everyone[key]
        if key not in self._asked:
            self._asked[key] = self._read(key)
        found = self._asked[key]
        if found is None:
            raise KeyError(key)
        return found

    def values(self) -> ValuesView[SyncedEmployee]:
        return self.load().values()

    def items(self) -> ItemsView[str, SyncedEmployee]:
        return self.load().items()

    def _read(self, key: str) -> SyncedEmployee | None:
        rows = self._query(_EMPLOYEES + " WHERE source_id = ?", key)
        return _synced(rows[0]) if rows else None

    @translated
    def _query(self, sql: str, *parameters: Any) -> list[tuple[Any, ...]]:
        with self._engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            return list(raw.execute(sql, parameters))


class PlacedLookup:
    """Who syncd placed in given departments, by the positions it last wrote ("": the
    root organization itself, where a position names no department)."""

    _QUERY = (
        "SELECT ifnull(json_extract(p.value, '$.department'), ''), e.source_id "
        "FROM employees e, json_each(e.fields, '$.positions') p "
        "WHERE ifnull(json_extract(p.value, '$.department'), '') "
        "IN (SELECT value FROM json_each(?))"
    )

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @translated
    def __call__(self, department_ids: Sequence[str]) -> dict[str, list[str]]:
        if not department_ids:
            return {}
        found: dict[str, list[str]] = {}
        with self._engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            for department, source_id in raw.execute(self._QUERY, (json.dumps(department_ids),)):
                found.setdefault(str(department), []).append(str(source_id))
        return found


class FieldLookup:
    """The fields syncd last wrote for one record, read on demand, as they were at first asking.

    One Snapshot serves one run: its plan, its journal and the executor each ask about
    the same changed records. Departments are few and the planner asks about every one
    (drift), so they are read all at once; employees one by one, each once, or in one
    query for those ``prefetch`` names (the people who changed on the platform).
    """

    _EMPLOYEE = text("SELECT fields FROM employees WHERE source_id = :k")

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._departments: dict[str, str] | None = None
        self._employees: dict[str, str | None] = {}

    @translated
    def __call__(self, kind: Kind, source_id: str) -> Mapping[str, Any] | None:
        if kind is Kind.DEPARTMENT:
            value = self._all_departments().get(source_id)
        elif source_id in self._employees:
            value = self._employees[source_id]
        else:
            with self._engine.connect() as conn:
                value = conn.execute(self._EMPLOYEE, {"k": source_id}).scalar()
            self._employees[source_id] = value
        if not value:
            return None
        loaded: dict[str, Any] = json.loads(value)  # a fresh dict each time: callers own it
        return loaded or None

    @translated
    def prefetch(self, source_ids: Sequence[str]) -> None:
        """Read these employees' fields now, in one query, for the questions to come."""
        wanted = [k for k in source_ids if k not in self._employees]
        if not wanted:
            return
        self._employees.update(dict.fromkeys(wanted))
        self._employees.update(self._stored(wanted))

    def read(self, source_ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """These employees' fields, in one query, kept neither here nor for later questions."""
        if not source_ids:
            return {}
        return {k: json.loads(v) for k, v in self._stored(source_ids).items() if v}

    def _stored(self, source_ids: Sequence[str]) -> dict[str, str | None]:
        """These employees' fields as stored (JSON text), in one query."""
        with self._engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            rows = raw.execute(
                "SELECT source_id, fields FROM employees "
                "WHERE source_id IN (SELECT value FROM json_each(?))",
                (json.dumps(list(source_ids)),),
            )
            return {str(k): v for k, v in rows}

    def _all_departments(self) -> dict[str, str]:
        if self._departments is None:
            with self._engine.connect() as conn:
                rows = conn.exec_driver_sql("SELECT source_id, fields FROM departments")
                self._departments = {str(r[0]): r[1] for r in rows}
        return self._departments


# The statements written once per item go straight to the driver: Core builds and
# processes a parameter dict per row, which cost as much as SQLite's own work for a
# 100,000-person run. The SQL is what Core generated for these tables, columns with a
# Python-side default included.
_UPSERT_DEPARTMENT = (
    "INSERT INTO departments (source_id, node_id, name_path, fields, hash, adopted) "
    "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (source_id) DO UPDATE SET "
    "node_id = excluded.node_id, name_path = excluded.name_path, fields = excluded.fields, "
    "hash = excluded.hash, adopted = excluded.adopted"
)
# A new row starts with the lock state it is given (an adopted account's, a re-keyed
# record's); an existing row keeps its own: locks change only through set_locked.
_UPSERT_EMPLOYEE = (
    "INSERT INTO employees (source_id, username, employee_id, fields, hash, adopted, locked, "
    "lock_reason, locked_since, matched_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (source_id) DO UPDATE SET "
    "username = excluded.username, employee_id = excluded.employee_id, "
    "fields = excluded.fields, hash = excluded.hash, adopted = excluded.adopted, "
    "matched_by = COALESCE(excluded.matched_by, employees.matched_by)"
)
_INSERT_ITEM = (
    'INSERT INTO run_items (run_id, seq, kind, "key", display, action, message, "before", '
    '"after", outcome, attempts) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0)'
)
_ITEMS_PER_STATEMENT = 2_000  # journal rows are made as they are written, never all at once


def _executemany(conn: Connection, sql: str, rows: list[tuple[Any, ...]]) -> None:
    if rows:
        conn.exec_driver_sql(sql, rows)


def upsert_departments(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with source_id, node_id, name_path, fields (JSON text), hash, adopted."""
    _executemany(
        conn,
        _UPSERT_DEPARTMENT,
        [
            (r["source_id"], r["node_id"], r["name_path"], r["fields"], r["hash"], r["adopted"])
            for r in rows
        ],
    )


def set_department_paths(conn: Connection, paths: Mapping[str, str]) -> None:
    if paths:
        conn.execute(
            text("UPDATE departments SET name_path = :p WHERE source_id = :k"),
            [{"k": k, "p": p} for k, p in paths.items()],
        )


def delete_departments(conn: Connection, source_ids: Sequence[str]) -> None:
    if source_ids:
        conn.execute(
            text("DELETE FROM departments WHERE source_id = :k"), [{"k": k} for k in source_ids]
        )


def upsert_employees(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with source_id, username, employee_id, fields (JSON text), hash, adopted, and
    locked, lock_reason, locked_since (used only when the row is new)."""
    _executemany(conn, _UPSERT_EMPLOYEE, [_employee_values(r) for r in rows])


def _employee_values(r: Mapping[str, Any]) -> tuple[Any, ...]:
    return (
        r["source_id"],
        r["username"],
        r["employee_id"],
        r["fields"],
        r["hash"],
        r["adopted"],
        r["locked"],
        r["lock_reason"],
        r["locked_since"],
        r.get("matched_by"),
    )


def set_locked(
    conn: Connection, source_ids: Sequence[str], locked: bool, reason: str | None, since: int | None
) -> None:
    if source_ids:
        conn.execute(
            text(
                "UPDATE employees SET locked = :l, lock_reason = :r, "
                "locked_since = CASE WHEN :l THEN COALESCE(locked_since, :s) ELSE NULL END "
                "WHERE source_id = :k"
            ),
            [{"k": k, "l": locked, "r": reason, "s": since} for k in source_ids],
        )


def set_photos(conn: Connection, rows: Sequence[tuple[str, str, str]]) -> None:
    """(source_id, digest, media_id) of photos set as avatars; the people's rows must exist."""
    _executemany(
        conn,
        "INSERT INTO photos (source_id, digest, media_id) VALUES (?, ?, ?) "
        "ON CONFLICT (source_id) DO UPDATE SET digest = excluded.digest, "
        "media_id = excluded.media_id",
        list(rows),
    )


def forget_employees(conn: Connection, source_ids: Sequence[str]) -> None:
    """Forget the rows of re-keyed records: by source id alone, whatever their username."""
    if source_ids:
        conn.execute(
            text("DELETE FROM employees WHERE source_id = :k"), [{"k": k} for k in source_ids]
        )


def delete_employees(conn: Connection, keys: Sequence[tuple[str, str]]) -> None:
    """Forget removed people: (source_id, username), so a replacement account is kept."""
    if keys:
        conn.execute(
            text("DELETE FROM employees WHERE source_id = :k AND username = :u"),
            [{"k": k, "u": u} for k, u in keys],
        )
