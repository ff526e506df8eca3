"""The state database: what syncd pushed, the runs it made, its cursors and the shared token.

One SQLite file in the state directory, in WAL mode, shared by the daemon and every
shell command on the host. Tables are declared with SQLModel; bulk writes go through
SQLAlchemy Core statements, one transaction per batch (the ORM is ~10x slower at
100,000 rows). The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]``
takes a database from version n to n+1.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.exc import OperationalError
from sqlmodel import Field, SQLModel

from syncd.errors import StateError

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000  # longer than a token request: renewal holds the write lock


class DepartmentRow(SQLModel, table=True):
    __tablename__ = "departments"
    source_id: str = Field(primary_key=True)  # the node's serial_no on the platform
    node_id: int | None = None
    name_path: str = ""  # "Acme/R&D/Backend", root name first
    fields: str = "{}"  # JSON: what syncd last wrote
    hash: str = ""  # of fields; "" forces a comparison next run
    adopted: bool = False  # found on the platform rather than created by syncd
    last_modified: int | None = None  # the platform's, after syncd's last write


class EmployeeRow(SQLModel, table=True):
    __tablename__ = "employees"
    source_id: str = Field(primary_key=True)  # the employee's extension_id on the platform
    username: str = Field(index=True)
    employee_id: int | None = None
    fields: str = "{}"
    hash: str = ""
    adopted: bool = False
    locked: bool = False
    lock_reason: str | None = None  # "departed" (in the source) or "missing" (from it)
    locked_since: int | None = None  # ms


class CursorRow(SQLModel, table=True):
    __tablename__ = "cursors"
    name: str = Field(primary_key=True)
    value: str


class TokenRow(SQLModel, table=True):
    __tablename__ = "tokens"
    app: str = Field(primary_key=True)  # base_url|domain_id|client_id
    access_token: str
    expire_time: int  # ms
    issued_time: int | None = None


class RunRow(SQLModel, table=True):
    __tablename__ = "runs"
    id: int | None = Field(default=None, primary_key=True)
    trigger: str = "shell"  # shell, schedule, demo
    mode: str = "apply"  # apply or dry_run
    read: str = "full"  # full or incremental
    source: str = ""  # kind and where
    started_at: int = 0  # ms
    finished_at: int | None = None
    outcome: str = "running"  # running, ok, partial, failed, blocked, interrupted
    exit_code: int | None = None
    pid: int | None = None
    host: str | None = None
    summary: str = "{}"  # JSON: counts, guards, drift, notes, error


class RunItemRow(SQLModel, table=True):
    __tablename__ = "run_items"
    run_id: int = Field(primary_key=True, foreign_key="runs.id")
    seq: int = Field(primary_key=True)
    kind: str  # department or employee
    key: str  # source id
    display: str  # name path or username
    action: str
    message: str = ""
    before: str | None = None  # JSON
    after: str | None = None  # JSON
    outcome: str = "planned"  # planned, sent, ok, failed, skipped, recovered
    status: int | None = None  # the platform's status code, when it gave one
    error: str | None = None
    attempts: int = 0


class RejectedRowRecord(SQLModel, table=True):
    __tablename__ = "rejected_rows"
    run_id: int = Field(primary_key=True, foreign_key="runs.id")
    seq: int = Field(primary_key=True)
    kind: str
    where: str
    key: str | None = None
    reason: str = ""


def _create_v1(conn: Connection) -> None:
    SQLModel.metadata.create_all(conn)
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_run_items_outcome ON run_items (outcome)")


MIGRATIONS: list[Callable[[Connection], None]] = [_create_v1]
assert len(MIGRATIONS) == SCHEMA_VERSION


def open_engine(path: Path) -> Engine:
    """Open (creating and migrating as needed) the state database, or raise StateError."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(f"state directory {path.parent}: cannot create it: {exc.strerror}") from None
    if not os.access(path.parent, os.W_OK):
        raise StateError(f"state directory {path.parent}: not writable by this user")
    engine = create_engine(f"sqlite:///{path}", connect_args={"timeout": BUSY_TIMEOUT_MS / 1000})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        dbapi_conn.isolation_level = None  # transactions are begun below, explicitly
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
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
    """One write transaction that takes the database's write lock at once."""
    with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
        yield conn


# ---------------------------------------------------------------- cursors


def get_cursor(engine: Engine, name: str) -> str | None:
    with engine.connect() as conn:
        row = conn.execute(
            text("SELECT value FROM cursors WHERE name = :name"), {"name": name}
        ).first()
    return None if row is None else str(row[0])


def set_cursor(conn: Connection, name: str, value: str) -> None:
    conn.execute(
        text(
            "INSERT INTO cursors (name, value) VALUES (:name, :value) "
            "ON CONFLICT (name) DO UPDATE SET value = excluded.value"
        ),
        {"name": name, "value": value},
    )


# ---------------------------------------------------------------- the shared token


@dataclass(frozen=True, slots=True)
class CachedToken:
    access_token: str
    expire_time: int  # ms since the epoch
    issued_time: int | None = None

    def __repr__(self) -> str:  # never show the token itself
        return f"CachedToken(expire_time={self.expire_time})"


class TokenStore:
    """The application's one token, shared by every syncd process using this database.

    The platform keeps one token per application and a new one invalidates the old, so
    renewal happens under the database's write lock: a process that finds a token newer
    than the one that failed it takes that token instead of asking for another.
    """

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def get(self, app: str) -> CachedToken | None:
        with self._engine.connect() as conn:
            return self._read(conn, app)

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        """The stored token if another process already replaced ``stale``, else a fetched one."""
        with write(self._engine) as conn:
            current = self._read(conn, app)
            if current is not None and current.access_token != stale and current.expire_time > now_ms:
                return current
            fresh = fetch()
            conn.execute(
                text(
                    "INSERT INTO tokens (app, access_token, expire_time, issued_time) "
                    "VALUES (:app, :tok, :exp, :iss) ON CONFLICT (app) DO UPDATE SET "
                    "access_token = excluded.access_token, expire_time = excluded.expire_time, "
                    "issued_time = excluded.issued_time"
                ),
                {"app": app, "tok": fresh.access_token, "exp": fresh.expire_time, "iss": fresh.issued_time},
            )
            return fresh

    @staticmethod
    def _read(conn: Connection, app: str) -> CachedToken | None:
        row = conn.execute(
            text("SELECT access_token, expire_time, issued_time FROM tokens WHERE app = :app"),
            {"app": app},
        ).first()
        return None if row is None else CachedToken(row[0], int(row[1]), row[2])
