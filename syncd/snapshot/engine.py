"""Opening the state database (created and migrated as needed), its write transactions, cursors."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError

from syncd.errors import StateError
from syncd.snapshot.tables import BUSY_TIMEOUT_MS, MIGRATIONS, SCHEMA_VERSION, WAL_CHECKPOINT_PAGES


def open_engine(path: Path) -> Engine:
    """Open (creating and migrating as needed) the state database, or raise StateError."""
    try:
        # The database holds the platform's access token: made for this user alone,
        # whatever the umask (SQLite gives its -wal and -shm files the database's mode).
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(
            f"state directory {path.parent}: cannot create it: {exc.strerror}"
        ) from None
    if not os.access(path.parent, os.W_OK):
        readonly = os.statvfs(path.parent).f_flag & os.ST_RDONLY
        why = "is on a read-only file system" if readonly else "is not writable by this user"
        raise StateError(f"state directory {path.parent} {why}")
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError as exc:
        raise StateError(f"state database {path}: cannot create it: {exc.strerror}") from None
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # transactions are begun below, explicitly
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cur.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())

    try:
        _migrate(engine, path)
    except OperationalError as exc:
        raise StateError(f"state database {path}: {exc.orig}") from None
    return engine


def _migrate(engine: Engine, path: Path) -> None:
    with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
        version = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
        if version > SCHEMA_VERSION:
            raise StateError(
                f"state database {path} has schema version {version}, newer than this syncd "
                f"({SCHEMA_VERSION}): upgrade syncd"
            )
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](conn)
        if version != SCHEMA_VERSION:
            conn.exec_driver_sql(f"PRAGMA user_version={SCHEMA_VERSION}")


@contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """One write transaction that takes the database's write lock at once.

    SQLite's own failures (a full disk, a read-only file, a lock held too long) roll it
    back and end as a StateError naming the database.
    """
    try:
        with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
            yield conn
    except OperationalError as exc:
        raise StateError(f"state database {engine.url.database}: {exc.orig}") from None


def get_cursor(engine: Engine, name: str) -> str | None:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT value FROM cursors WHERE name = :name"), {"name": name}
        ).first()
    return None if row is None else str(row[0])


def json_object(stored: str | None) -> dict[str, Any]:
    """A JSON object stored as text (a run's summary, a cursor); {} if absent or damaged."""
    try:
        value = json.loads(stored or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def set_cursor(conn: Connection, name: str, value: str) -> None:
    conn.execute(
        text(
            "INSERT INTO cursors (name, value) VALUES (:name, :value) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
        ),
        {"name": name, "value": value},
    )


def compact(engine: Engine, path: Path) -> int:
    """Give the space of deleted rows back to the file system (VACUUM): bytes freed."""

    def size() -> int:
        return sum(
            p.stat().st_size for p in (path, path.with_name(path.name + "-wal")) if p.exists()
        )

    before = size()
    raw = engine.raw_connection()  # VACUUM runs outside a transaction: not through write()
    try:
        cursor = raw.cursor()
        cursor.execute("VACUUM")
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cursor.close()
    except sqlite3.Error as exc:
        raise StateError(f"state database {path}: cannot compact it: {exc}") from exc
    finally:
        raw.close()
    return max(before - size(), 0)
