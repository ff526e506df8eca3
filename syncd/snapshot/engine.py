"""Opening the state database (created and migrated as needed), its write transactions, cursors."""

from __future__ import annotations

import functools
import grp
import json
import logging
import os
import pwd
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from sqlalchemy import Connection, Engine, ExceptionContext, create_engine, event, text

from syncd.errors import StateError
from syncd.snapshot.tables import BUSY_TIMEOUT_MS, MIGRATIONS, SCHEMA_VERSION, WAL_CHECKPOINT_PAGES

log = logging.getLogger("syncd.snapshot")

P = ParamSpec("P")
R = TypeVar("R")

SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER = 100
DAMAGED = (
    "stop syncd, move the file aside (keep it: it may be inspected) and restore the latest "
    'backup in its place (README, "Backup and upgrade"), then run `syncd state rebuild`; '
    "or, without a backup, start with no state database: `syncd state rebuild` then takes "
    "back what syncd wrote on the platform"
)


def state_problem(path: object, exc: BaseException) -> StateError:
    """SQLite's failure as the error an operator reads: the file, what is wrong, what to do."""
    reason = str(getattr(exc, "orig", None) or exc)
    if isinstance(exc, UnicodeDecodeError):  # a text value's bytes garbled
        reason = f"a text value is not UTF-8: {exc.reason}"
    elif isinstance(exc, ValueError):  # a stored value that no longer reads as written
        reason = f"a stored value cannot be read: {exc}"
    if "locked" in reason or "busy" in reason:
        return StateError(
            f"state database {path}: {reason}: another program has held it locked for more "
            f"than {BUSY_TIMEOUT_MS // 1000} s (an sqlite3 shell or a backup tool with a "
            "transaction open, a stuck syncd?): end it and try again"
        )
    missing = reason.startswith(("no such table", "no such column"))
    if isinstance(getattr(exc, "orig", exc), sqlite3.OperationalError) and not missing:
        return StateError(f"state database {path}: {reason}")  # a full disk, a read-only file
    return StateError(f"state database {path} is damaged ({reason}): {DAMAGED}")


def translated(function: Callable[P, R]) -> Callable[P, R]:
    """``function``, a read of the state database through the driver's own connection, its
    SQLite failures raised as StateError naming the file."""

    @functools.wraps(function)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return function(*args, **kwargs)
        except (sqlite3.DatabaseError, ValueError) as exc:  # ValueError: garbled bytes
            if isinstance(exc, sqlite3.IntegrityError):
                raise
            raise state_problem(_database_of(args), exc) from exc

    return wrapper


def _database_of(args: tuple[Any, ...]) -> object:
    for arg in args:
        engine = arg if isinstance(arg, Engine) else getattr(arg, "_engine", None)
        if isinstance(arg, Connection):
            engine = arg.engine
        if isinstance(engine, Engine):
            return engine.url.database
    return "(state database)"


def check_file(path: Path) -> None:
    """Refuse, before SQLite reads it, a file that is not an SQLite database or is shorter
    than its own header says (cut by a copy or a full disk): SQLite would find out only
    when it reads a page that is not there, halfway through a run."""
    try:
        size = path.stat().st_size
        if size == 0:
            return  # new: created as the database is opened
        with path.open("rb") as handle:
            header = handle.read(_HEADER)
    except FileNotFoundError:
        return
    except PermissionError:
        raise StateError(f"state database {path} cannot be opened {_whose(path)}") from None
    except OSError as exc:
        raise StateError(f"state database {path}: cannot read it: {exc.strerror}") from exc
    if len(header) < _HEADER or not header.startswith(SQLITE_MAGIC):
        raise StateError(
            f"state database {path} is damaged (not an SQLite database: "
            f"{'too short for' if len(header) < _HEADER else 'its first bytes are not'} "
            f"an SQLite header): {DAMAGED}"
        )
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    # The page count in the header holds only when the change counter matches the
    # version-valid-for number (SQLite's file format, 1.3.8 and 1.3.9).
    valid = pages > 0 and header[24:28] == header[92:96]
    # Pages a checkpoint has not yet copied into the file are in the write-ahead log: a
    # file shorter than its header says is only cut when there is no log to read them from.
    if valid and size < pages * page_size and not _has_log(path):
        raise StateError(
            f"state database {path} is damaged (truncated: {size} bytes of the "
            f"{pages * page_size} its header gives): {DAMAGED}"
        )


def _whose(path: Path) -> str:
    """Whose the file is, who this is, and how to give it back: a state directory or
    database a command run as root left behind is the usual cause."""

    def user(uid: int) -> str:
        try:
            return pwd.getpwuid(uid).pw_name
        except KeyError:
            return f"uid {uid}"

    def group(gid: int) -> str:
        try:
            return grp.getgrgid(gid).gr_name
        except KeyError:
            return str(gid)

    found = path.stat()
    me = user(os.getuid())
    them = f"{user(found.st_uid)}:{group(found.st_gid)}"
    chown = f"sudo chown {me}: {path}*" if path.is_file() else f"sudo chown -R {me}: {path}"
    return (
        f"by {me}: it belongs to {them} (mode {found.st_mode & 0o777:04o}), made by a command "
        f"run as {user(found.st_uid)}; give it back to the user syncd runs as ({chown}), and "
        f"run syncd's commands as that user (sudo -u {me} syncd ...)"
    )


def _has_log(path: Path) -> bool:
    try:
        return path.with_name(path.name + "-wal").stat().st_size > 0
    except OSError:
        return False


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
        if readonly:
            raise StateError(f"state directory {path.parent} is on a read-only file system")
        raise StateError(f"state directory {path.parent} is not writable {_whose(path.parent)}")
    check_file(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except PermissionError:
        raise StateError(f"state database {path} cannot be opened {_whose(path)}") from None
    except OSError as exc:
        raise StateError(f"state database {path}: cannot create it: {exc.strerror}") from exc
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

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> StateError | None:
        # Every statement's SQLite failure, at the edge: a damaged file, a lock held too
        # long, a full disk, a read-only file; a broken constraint is the caller's to handle.
        original = context.original_exception
        if isinstance(original, sqlite3.DatabaseError) and not isinstance(
            original, sqlite3.IntegrityError
        ):
            return state_problem(path, original)
        return None

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        mode = conn.get_execution_options().get("sqlite_begin", "")
        conn.exec_driver_sql(f"BEGIN {mode}".strip())

    try:
        _migrate(engine, path)
    except (sqlite3.DatabaseError, UnicodeDecodeError) as exc:  # in the driver's connect
        engine.dispose()
        raise state_problem(path, exc) from exc
    except StateError:
        engine.dispose()
        raise
    return engine


def _migrate(engine: Engine, path: Path) -> None:
    """Bring the file to this syncd's schema. One that has data is first copied beside
    itself, and what the migration does is logged (WARNING: every command says it once)."""
    with engine.connect() as conn:
        found = conn.exec_driver_sql("PRAGMA user_version").scalar_one()
    if 0 < found < SCHEMA_VERSION:
        kept = _keep_copy(engine, path, found)
        steps = "; ".join(_summary(MIGRATIONS[step]) for step in range(found, SCHEMA_VERSION))
        log.warning(
            "state database %s: schema %d is migrated to %d, for this syncd (%s): %s. "
            "The database as it was is kept in %s",
            path,
            found,
            SCHEMA_VERSION,
            _version(),
            steps,
            kept,
        )
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


def _summary(migration: Callable[[Connection], None]) -> str:
    """What a migration does, in a few words: its docstring's first sentence."""
    text = " ".join((migration.__doc__ or migration.__name__).split())
    return text.split(". ")[0].split(": ")[0].rstrip(".")


def _version() -> str:
    from importlib.metadata import version

    return f"syncd {version('syncd')}"


def _keep_copy(engine: Engine, path: Path, schema: int) -> Path:
    """A consistent copy of the database beside it, before it is migrated: ``syncd.db.schema-5``
    (``.2``, ``.3``... when one exists), readable by this user alone."""
    target = path.with_name(f"{path.name}.schema-{schema}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.schema-{schema}.{n}")
    backup(engine, target)
    return target


def backup(engine: Engine, target: Path) -> int:
    """A consistent copy of the database in ``target``, a new file of mode 0600 (it holds the
    access token): SQLite's online backup, which a run writing meanwhile does not tear.
    Its size in bytes."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError:
        raise StateError(f"{target} exists already: name a new file") from None
    except OSError as exc:
        raise StateError(f"{target}: cannot create it: {exc.strerror}") from exc
    raw = engine.raw_connection()
    try:
        with sqlite3.connect(target) as copy:
            raw.driver_connection.backup(copy)  # type: ignore[union-attr]
        copy.close()
    except sqlite3.Error as exc:
        target.unlink(missing_ok=True)
        raise state_problem(engine.url.database, exc) from exc
    finally:
        raw.close()
    return target.stat().st_size


@contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """One write transaction that takes the database's write lock at once.

    SQLite's own failures (a full disk, a read-only file, a lock held too long) roll it
    back and end as a StateError naming the database (the engine's ``handle_error``).
    """
    with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
        yield conn


@translated
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
