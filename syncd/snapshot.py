"""The state database: what syncd pushed, the runs it made, its cursors and the shared token.

One SQLite file in the state directory, in WAL mode, shared by the daemon and every
shell command on the host. Tables are declared with SQLModel; bulk writes go through
SQLAlchemy Core statements, one transaction per batch (the ORM is ~10x slower at
100,000 rows). The schema version lives in ``PRAGMA user_version``; ``MIGRATIONS[n]``
takes a database from version n to n+1.
"""

from __future__ import annotations

import itertools
import json
import os
import socket
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, insert, text, update
from sqlalchemy.exc import OperationalError
from sqlmodel import Field, SQLModel

from syncd.errors import StateError
from syncd.model import Kind, serial_no
from syncd.plan import Snapshot, SyncedDepartment, SyncedEmployee

SCHEMA_VERSION = 4
BUSY_TIMEOUT_MS = 60_000  # longer than a token request: renewal holds the write lock
# Checkpoint the WAL every ~40 MB rather than SQLite's 4 MB: a 100,000-person first sync
# writes ~100 MB, and each checkpoint syncs the files to disk (335 fdatasync calls -> 26).
WAL_CHECKPOINT_PAGES = 10_000


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
    # "departed" (in the source), "missing" (from it), or None: adopted already locked
    lock_reason: str | None = None
    locked_since: int | None = None  # ms
    # The key a first run adopted the account by, when not its username (email, mobile,
    # sn): the account keeps the platform's username, whatever the source's is.
    matched_by: str | None = None


class PhotoRow(SQLModel, table=True):
    """The photo syncd last set as a person's avatar; gone with the person's row."""

    __tablename__ = "photos"
    source_id: str = Field(
        primary_key=True, foreign_key="employees.source_id", ondelete="CASCADE"
    )
    digest: str  # MD5 of the bytes sent (the media API's file_digest)
    media_id: str  # the platform's media id, set as the avatar


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


def _v2_safe_serials(conn: Connection) -> None:
    """Departments whose serial_no an earlier syncd sent with '/' and the like: compared
    again at the next run, whose update writes the serial_no that is safe in a URL."""
    ids = [r[0] for r in conn.exec_driver_sql("SELECT source_id FROM departments")]
    unsafe = [{"k": k} for k in ids if serial_no(k) != k]
    if unsafe:
        conn.execute(text("UPDATE departments SET hash = '' WHERE source_id = :k"), unsafe)


def _v3_matched_by(conn: Connection) -> None:
    """employees.matched_by (a fresh database has it already: its tables are made whole)."""
    columns = {r[1] for r in conn.exec_driver_sql("PRAGMA table_info(employees)")}
    if "matched_by" not in columns:
        conn.exec_driver_sql("ALTER TABLE employees ADD COLUMN matched_by VARCHAR")


def _v4_photos(conn: Connection) -> None:
    """The photos table (a new database has it from _create_v1 already)."""
    PhotoRow.__table__.create(conn, checkfirst=True)  # type: ignore[attr-defined]


MIGRATIONS: list[Callable[[Connection], None]] = [
    _create_v1,
    _v2_safe_serials,
    _v3_matched_by,
    _v4_photos,
]
assert len(MIGRATIONS) == SCHEMA_VERSION


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
        try:
            with self._engine.connect() as conn:
                return self._read(conn, app)
        except OperationalError as exc:
            raise StateError(f"state database: reading the shared token: {exc.orig}") from None

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        """The stored token if another process already replaced ``stale``, else a fetched one."""
        try:
            return self._renew(app, stale, fetch, now_ms)
        except OperationalError as exc:
            raise StateError(f"state database: renewing the shared token: {exc.orig}") from None

    def _renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        with write(self._engine) as conn:
            current = self._read(conn, app)
            if (
                current is not None
                and current.access_token != stale
                and current.expire_time > now_ms
            ):
                return current
            fresh = fetch()
            conn.execute(
                text(
                    "INSERT INTO tokens (app, access_token, expire_time, issued_time) "
                    "VALUES (:app, :tok, :exp, :iss) ON CONFLICT (app) DO UPDATE SET "
                    "access_token = excluded.access_token, expire_time = excluded.expire_time, "
                    "issued_time = excluded.issued_time"
                ),
                {
                    "app": app,
                    "tok": fresh.access_token,
                    "exp": fresh.expire_time,
                    "iss": fresh.issued_time,
                },
            )
            return fresh

    @staticmethod
    def _read(conn: Connection, app: str) -> CachedToken | None:
        row = conn.execute(
            text("SELECT access_token, expire_time, issued_time FROM tokens WHERE app = :app"),
            {"app": app},
        ).first()
        return None if row is None else CachedToken(row[0], int(row[1]), row[2])


# ---------------------------------------------------------------- the snapshot, for planning


def load_snapshot(engine: Engine) -> Snapshot:
    """What syncd last wrote, as plain values; field values are looked up only when needed."""
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
        employees = {
            r[0]: SyncedEmployee(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6], r[7])
            for r in raw.execute(
                "SELECT source_id, username, employee_id, hash, locked, lock_reason, locked_since, "
                "matched_by FROM employees"
            )
        }
        photos = {r[0]: r[1] for r in raw.execute("SELECT source_id, digest FROM photos")}
    return Snapshot(
        departments, employees, FieldLookup(engine), PlacedLookup(engine), photos=photos
    )


class PlacedLookup:
    """Who syncd placed in given departments, by the positions it last wrote."""

    _QUERY = (
        "SELECT json_extract(p.value, '$.department'), e.source_id "
        "FROM employees e, json_each(e.fields, '$.positions') p "
        "WHERE json_extract(p.value, '$.department') IN (SELECT value FROM json_each(?))"
    )

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

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

    def prefetch(self, source_ids: Sequence[str]) -> None:
        """Read these employees' fields now, in one query, for the questions to come."""
        wanted = [k for k in source_ids if k not in self._employees]
        if not wanted:
            return
        self._employees.update(dict.fromkeys(wanted))
        with self._engine.connect() as conn:
            raw = conn.connection.driver_connection
            assert raw is not None
            rows = raw.execute(
                "SELECT source_id, fields FROM employees "
                "WHERE source_id IN (SELECT value FROM json_each(?))",
                (json.dumps(wanted),),
            )
            self._employees.update((str(k), v) for k, v in rows)

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
_ITEMS_PER_STATEMENT = 10_000  # journal rows are made as they are written, never all at once


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


# ---------------------------------------------------------------- runs and their items


def start_run(engine: Engine, **values: Any) -> int:
    """Record a run as running; returns its id."""
    values.setdefault("pid", os.getpid())
    values.setdefault("host", socket.gethostname())
    with write(engine) as conn:
        result = conn.execute(insert(RunRow.__table__).values(**values))  # type: ignore[attr-defined]
        run_id = result.inserted_primary_key[0] if result.inserted_primary_key else None
    assert run_id is not None
    return int(run_id)


def finish_run(engine: Engine, run_id: int, **values: Any) -> None:
    with write(engine) as conn:
        conn.execute(
            update(RunRow.__table__)  # type: ignore[attr-defined]
            .where(RunRow.__table__.c.id == run_id)  # type: ignore[attr-defined]
            .values(**values)
        )


def interrupt_stale_runs(engine: Engine, now_ms: int) -> list[int]:
    """Runs left 'running' by a process that died are marked interrupted (caller holds the lock)."""
    with write(engine) as conn:
        ids = [
            int(r[0]) for r in conn.exec_driver_sql("SELECT id FROM runs WHERE outcome = 'running'")
        ]
        if ids:
            conn.execute(
                text(
                    "UPDATE runs SET outcome = 'interrupted', exit_code = 3, finished_at = :t "
                    "WHERE outcome = 'running'"
                ),
                {"t": now_ms},
            )
    return ids


def insert_items(conn: Connection, run_id: int, items: Iterable[Mapping[str, Any]]) -> None:
    """Rows with seq, kind, key, display, action, message, before, after (JSON text), outcome."""
    rows = (
        (run_id, i["seq"], i["kind"], i["key"], i["display"], i["action"], i["message"],
         i["before"], i["after"], i["outcome"])
        for i in items
    )  # fmt: skip
    while chunk := list(itertools.islice(rows, _ITEMS_PER_STATEMENT)):
        _executemany(conn, _INSERT_ITEM, chunk)


def mark_sent(conn: Connection, run_id: int, seqs: Sequence[int]) -> None:
    _executemany(
        conn,
        "UPDATE run_items SET outcome = 'sent', attempts = attempts + 1 "
        "WHERE run_id = ? AND seq = ?",
        [(run_id, s) for s in seqs],
    )


def settle_items(conn: Connection, run_id: int, results: Sequence[Mapping[str, Any]]) -> None:
    """Rows with seq, outcome, status, error."""
    _executemany(
        conn,
        "UPDATE run_items SET outcome = ?, status = ?, error = ? WHERE run_id = ? AND seq = ?",
        [(r["outcome"], r.get("status"), r.get("error"), run_id, r["seq"]) for r in results],
    )


def journaled_after(conn: Connection, run_id: int, first: int, last: int) -> dict[int, str]:
    """The ``after`` JSON text of a run's items ``first`` to ``last`` (by seq), when set."""
    raw = conn.connection.driver_connection
    assert raw is not None
    rows = raw.execute(
        'SELECT seq, "after" FROM run_items WHERE run_id = ? AND seq BETWEEN ? AND ? '
        'AND "after" IS NOT NULL',
        (run_id, first, last),
    )
    return {int(seq): str(after) for seq, after in rows}


def unsettled_items(engine: Engine) -> list[dict[str, Any]]:
    """Items a crashed run sent without learning the answer."""
    with engine.connect() as conn:
        rows = conn.exec_driver_sql(
            "SELECT run_id, seq, kind, key, display, action, after FROM run_items "
            "WHERE outcome = 'sent'"
        )
        return [dict(r._mapping) for r in rows]


def insert_rejected(engine: Engine, run_id: int, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with kind, where, key, reason."""
    if rows:
        with write(engine) as conn:
            conn.execute(
                insert(RejectedRowRecord.__table__),  # type: ignore[attr-defined]
                [{"run_id": run_id, "seq": i, **r} for i, r in enumerate(rows)],
            )


def failure_groups(engine: Engine, run_id: int, limit: int = 10) -> list[tuple[str, int]]:
    """A run's failed items grouped by error text, most frequent first."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT COALESCE(error, 'unknown error'), COUNT(*) AS n FROM run_items "
                "WHERE run_id = :r AND outcome = 'failed' GROUP BY 1 ORDER BY n DESC, 1 LIMIT :l"
            ),
            {"r": run_id, "l": limit},
        )
        return [(str(r[0]), int(r[1])) for r in rows]


def load_items(
    engine: Engine, run_id: int, *, limit: int | None = None, outcome: str | None = None
) -> list[dict[str, Any]]:
    """A run's items in plan order, as stored (messages were written before anything was sent)."""
    query = "SELECT * FROM run_items WHERE run_id = :r"
    if outcome is not None:
        query += " AND outcome = :o"
    query += " ORDER BY seq"
    if limit is not None:
        query += " LIMIT :l"
    with engine.connect() as conn:
        rows = conn.execute(text(query), {"r": run_id, "o": outcome, "l": limit})
        return [dict(r._mapping) for r in rows]


def set_summary(conn: Connection, run_id: int, summary: Mapping[str, Any]) -> None:
    conn.execute(
        text("UPDATE runs SET summary = :s WHERE id = :r"),
        {"s": json.dumps(summary, ensure_ascii=False), "r": run_id},
    )
