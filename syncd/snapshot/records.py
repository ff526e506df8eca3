"""The snapshot's records: what syncd wrote for each department and person, asked about by
the platform reader (``Held``) and kept current as batches succeed. What planning reads is
loaded as plain values by ``syncd.snapshot.planning``."""

from __future__ import annotations

import json
from collections.abc import (
    Collection,
    ItemsView,
    Iterator,
    Mapping,
    Sequence,
    ValuesView,
)
from typing import Any, ClassVar

import orjson
from sqlalchemy import Connection, Engine, text

from syncd.plan import SyncedDepartment, SyncedEmployee
from syncd.snapshot import sql
from syncd.snapshot.engine import translated

_EMPLOYEES = (
    "SELECT source_id, username, employee_id, hash, locked, lock_reason, locked_since, "
    "matched_by FROM employees"
)


class Held:
    """What syncd holds, as the platform reader asks about it (the plan's snapshot is
    loaded apart: ``syncd.snapshot.planning``): the departments as plain values, the people
    and their fields by queries of its own, on its own connections, only as far as it
    asks. Nothing here is shared with the plan, and the plan holds nothing of it."""

    def __init__(self, engine: Engine, departments: Mapping[str, SyncedDepartment], people: int):
        self.departments = departments
        self.employees = SyncedEmployees(engine, people)
        self.fields = FieldLookup(engine)
        self.placed = PlacedLookup(engine)

    def everyone(self) -> dict[str, SyncedEmployee] | None:
        """Everyone's records, if the reader loaded them all: once it is done, a run that
        plans over everyone takes them rather than reading them again."""
        return self.employees.loaded()


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


def written(fields: FieldLookup, source_ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
    """The fields syncd last wrote for these people, read now and kept by nobody (people
    drift compares a listing part by part: 100,000 people's fields are never held)."""
    return fields.read(source_ids)


def _all_employees(conn: Connection) -> dict[str, SyncedEmployee]:
    rows = sql.rows(conn, _EMPLOYEES)
    return {e.source_id: e for e in map(_synced, rows)}


def _synced(r: tuple[Any, ...]) -> SyncedEmployee:
    return SyncedEmployee(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7])


class SyncedEmployees(Mapping[str, SyncedEmployee]):
    """syncd's people as the platform reader asks about them (``Held``): one by one, and
    all at once the first time it goes over them all or asks about more than a few
    (``load``). A no-change run asks for their usernames, and an incremental run about a
    few people: loading 100,000 was a third of either. Answers are the database's when
    asked. The reader's listing threads ask through its Judge, which makes its index of
    everyone under a lock of its own: nothing here is asked from two threads at once.
    """

    _ONE_BY_ONE = 256  # more look-ups than this: one query for everyone costs less

    def __init__(self, engine: Engine, count: int) -> None:
        self._engine = engine
        self._count = count
        self._asked: dict[str, SyncedEmployee | None] = {}
        self._everyone: dict[str, SyncedEmployee] | None = None

    @translated
    def load(self) -> dict[str, SyncedEmployee]:
        """Everyone, read now if not yet."""
        if self._everyone is None:
            with self._engine.connect() as conn:
                self._everyone = _all_employees(conn)
            self._asked.clear()
        return self._everyone

    def loaded(self) -> dict[str, SyncedEmployee] | None:
        """Everyone, if read all at once already."""
        return self._everyone

    def usernames(self) -> list[str]:
        if self._everyone is not None:
            return [e.username for e in self._everyone.values()]
        return [str(r[0]) for r in self._query("SELECT username FROM employees")]

    def holding(self, names: Collection[str]) -> set[str]:
        """Which of these usernames syncd's people hold: a few asked of the database."""
        if self._everyone is not None or len(names) > self._ONE_BY_ONE:
            return holding(self.load(), names)
        among, values = sql.among(self._engine, names)
        rows = self._query("SELECT username FROM employees WHERE username " + among, values)  # noqa: S608
        return {str(r[0]) for r in rows}

    def by_username(self, names: Collection[str]) -> dict[str, SyncedEmployee]:
        """The people holding these usernames: a few asked of the database."""
        if self._everyone is not None or len(names) > self._ONE_BY_ONE:
            return by_username(self.load(), names)
        among, values = sql.among(self._engine, names)
        rows = self._query(_EMPLOYEES + " WHERE username " + among, values)
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
    def _query(self, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
        with self._engine.connect() as conn:
            return sql.rows(conn, query, parameters)


class PlacedLookup:
    """Who syncd placed in given departments, by the positions it last wrote ("": the
    root organization itself, where a position names no department)."""

    _QUERY: ClassVar[dict[str, str]] = {
        sql.SQLITE: "SELECT ifnull(json_extract(p.value, '$.department'), ''), e.source_id "
        "FROM employees e, json_each(e.fields, '$.positions') p "
        "WHERE ifnull(json_extract(p.value, '$.department'), '') ",
        sql.POSTGRESQL: "SELECT COALESCE(p.value ->> 'department', ''), e.source_id "
        "FROM employees e, jsonb_array_elements(CASE jsonb_typeof(NULLIF(e.fields, '')::jsonb "
        "-> 'positions') WHEN 'array' THEN e.fields::jsonb -> 'positions' END) p(value) "
        "WHERE COALESCE(p.value ->> 'department', '') ",
    }

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @translated
    def __call__(self, department_ids: Sequence[str]) -> dict[str, list[str]]:
        if not department_ids:
            return {}
        with self._engine.connect() as conn:
            return self.query(conn, department_ids)

    @classmethod
    def query(cls, conn: Connection, department_ids: Collection[str]) -> dict[str, list[str]]:
        """Who is placed in these departments, read on ``conn``."""
        found: dict[str, list[str]] = {}
        among, values = sql.among(conn, department_ids)
        for department, source_id in sql.rows(conn, cls._QUERY[sql.kind(conn)] + among, (values,)):
            found.setdefault(str(department), []).append(str(source_id))
        return found


class FieldLookup:
    """The fields syncd last wrote for people, read when the platform reader asks."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @translated
    def read(self, source_ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """These employees' fields, in one query, kept by nobody."""
        if not source_ids:
            return {}
        return {k: json.loads(v) for k, v in self._stored(source_ids).items() if v}

    def _stored(self, source_ids: Sequence[str]) -> dict[str, str | None]:
        """These employees' fields as stored (JSON text), in one query."""
        among, values = sql.among(self._engine, source_ids)
        with self._engine.connect() as conn:
            query = "SELECT source_id, fields FROM employees WHERE source_id " + among  # noqa: S608
            rows = sql.rows(conn, query, (values,))
            return {str(k): v for k, v in rows}


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


def _executemany(conn: Connection, statement: str, rows: list[tuple[Any, ...]]) -> None:
    sql.bulk(conn, statement, rows)


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


# On PostgreSQL, a batch of people in one statement: its rows one JSON array, read as
# rows of the table's own type. An executemany is a statement per row there, each one
# planned and run on its own (half of the journal writer's time in a 100,000-person first
# sync); arrays as parameters cost more still, each element dumped in Python.
_EMPLOYEE_COLUMNS = (
    "source_id", "username", "employee_id", "fields", "hash", "adopted", "locked",
    "lock_reason", "locked_since", "matched_by",
)  # fmt: skip
_UPSERT_EMPLOYEES_AS_JSON = _UPSERT_EMPLOYEE.replace(
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
    f"SELECT {', '.join(_EMPLOYEE_COLUMNS)} FROM json_populate_recordset(NULL::employees, ?)",  # noqa: S608
)


def upsert_employees(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with source_id, username, employee_id, fields (JSON text), hash, adopted, and
    locked, lock_reason, locked_since (used only when the row is new)."""
    values = [_employee_values(r) for r in rows]
    once = len({v[0] for v in values}) == len(values)  # one statement changes a row once
    if values and once and sql.is_postgresql(conn):
        listed = orjson.dumps([dict(zip(_EMPLOYEE_COLUMNS, v, strict=True)) for v in values])
        sql.run(conn, _UPSERT_EMPLOYEES_AS_JSON, (listed.decode(),))
        return
    _executemany(conn, _UPSERT_EMPLOYEE, values)


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


def set_written(conn: Connection, rows: Sequence[tuple[str, str, str, str]]) -> None:
    """(fields, hash, source_id, username): the fields an interrupted run's update was found
    to have written (recovery), for people syncd holds under that username; the lock state
    and the rest of the row stay."""
    _executemany(
        conn,
        "UPDATE employees SET fields = ?, hash = ? WHERE source_id = ? AND username = ?",
        list(rows),
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
