"""SQL that runs the same on both engines: statements written once, with ``?`` placeholders.

The statements run once per item (a 100,000-person run) go to the driver's own cursor:
SQLAlchemy's row objects and per-row parameter dicts cost as much as the database's own
work. ``rows`` reads through the cursor, ``run`` sends one statement or many (each
driver's ``executemany``: sqlite3's loop in C, psycopg 3's pipeline mode), ``copy`` loads
plain new rows (PostgreSQL's COPY). Placeholders are written ``?`` (sqlite3's style) and
given to psycopg as ``%s``; a statement holds no ``%`` of its own.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Sequence
from typing import Any, Unpack

from sqlalchemy import Connection, CursorResult, Engine

from syncd.snapshot.failures import driver_failure
from syncd.snapshot.postgres import POSTGRESQL as POSTGRESQL
from syncd.snapshot.postgres import is_postgresql as is_postgresql
from syncd.snapshot.postgres import placeholders

SQLITE = "sqlite"


def kind(bind: Connection | Engine) -> str:
    """The engine's name: "sqlite" or "postgresql"."""
    return bind.dialect.name


def dialect_sql(bind: Connection | Engine, sql: str) -> str:
    """``sql`` (``?`` placeholders) in the driver's own parameter style."""
    return placeholders(sql) if is_postgresql(bind) else sql


def run(
    conn: Connection, sql: str, params: Sequence[Any] | Sequence[Sequence[Any]] = ()
) -> CursorResult[Unpack[tuple[Any, ...]]]:  # noqa: UP044 (Python 3.11)
    """One statement (``params`` a tuple) or the same statement for each of many rows
    (``params`` a list of tuples: the driver's executemany), through SQLAlchemy (its
    failures become StateError at the engine's edge)."""
    if isinstance(params, list) and not params:
        raise ValueError("run: no rows")
    return conn.exec_driver_sql(dialect_sql(conn, sql), params)


def bulk(conn: Connection, sql: str, rows: Sequence[Sequence[Any]]) -> None:
    """The same statement for each row, in one call to the driver (nothing if no rows)."""
    if rows:
        conn.exec_driver_sql(dialect_sql(conn, sql), list(rows))


def rows(conn: Connection, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """A query's rows as plain tuples, read through the driver's own cursor."""
    raw: Any = conn.connection.driver_connection
    try:
        return list(raw.execute(dialect_sql(conn, sql), tuple(params)).fetchall())
    except Exception as exc:
        problem = driver_failure(conn.engine, exc)
        if problem is None:
            raise
        raise problem from exc


def copy(
    conn: Connection, table: str, columns: Sequence[str], values: Iterable[Sequence[Any]]
) -> None:
    """New rows into ``table`` (constants: never a name from outside): PostgreSQL's COPY,
    several times faster than inserts even pipelined; on SQLite one executemany."""
    listed = list(values)
    if not listed:
        return
    names = ", ".join(f'"{c}"' for c in columns)
    if not is_postgresql(conn):
        marks = ", ".join("?" * len(columns))
        bulk(conn, f"INSERT INTO {table} ({names}) VALUES ({marks})", listed)  # noqa: S608
        return
    raw: Any = conn.connection.driver_connection
    try:
        with raw.cursor() as cursor, cursor.copy(f"COPY {table} ({names}) FROM STDIN") as load:
            for row in listed:
                load.write_row(row)
    except Exception as exc:
        problem = driver_failure(conn.engine, exc)
        if problem is None:
            raise
        raise problem from exc


def among(bind: Connection | Engine, values: Collection[Any]) -> tuple[str, Any]:
    """A condition's right side, ``IN`` these values, and its one parameter: SQLite reads
    them from a JSON array, PostgreSQL from an array parameter."""
    if is_postgresql(bind):
        return "= ANY(?)", list(values)
    return "IN (SELECT value FROM json_each(?))", json.dumps(list(values))


def held(table: str) -> str:
    """A condition: the ``table`` row's ``source_id`` is a person syncd holds. EXISTS
    rather than ``IN (SELECT source_id FROM employees)``, which SQLite answered by going
    over everyone syncd holds even when ``table`` is empty (4 ms at 100,000 people)."""
    condition = "EXISTS (SELECT 1 FROM employees held WHERE held.source_id = {}.source_id)"
    return condition.format(table)  # a table of the schema's, named by the code
