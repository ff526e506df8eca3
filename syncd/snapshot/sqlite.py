"""The SQLite engine: the state database as one file in the state directory, in WAL mode.

Everything here is SQLite's own: the file checks made before SQLite reads a file, the
connection's PRAGMAs, the schema version in ``PRAGMA user_version``, the online backup,
VACUUM, the failures' wording, and the token table's own short connections (``tokens``).
No other module imports ``sqlite3``.
"""

from __future__ import annotations

import contextlib
import grp
import logging
import os
import pwd
import sqlite3
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, ExceptionContext, create_engine, event

from syncd.errors import StateError
from syncd.ownership import not_owned_by
from syncd.snapshot.tables import BUSY_TIMEOUT_MS, WAL_CHECKPOINT_PAGES
from syncd.snapshot.token_rows import StoredToken, read_token, store_token

log = logging.getLogger("syncd.snapshot")

SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER = 100
DAMAGED = (
    "stop syncd, move the file aside (keep it: it may be inspected) and restore the latest "
    'backup in its place (README, "Backup and upgrade"), then run `syncd state rebuild`; '
    "or, without a backup, start with no state database: `syncd state rebuild` then takes "
    "back what syncd wrote on the platform"
)
Error = sqlite3.Error
DatabaseError = sqlite3.DatabaseError
IntegrityError = sqlite3.IntegrityError


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
    except PermissionError as exc:
        raise StateError(f"state database {path} cannot be opened {_whose(path)}") from exc
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
    if path.is_file():  # the database, and every other file a run as root left beside it
        taken = not_owned_by(path.parent, os.getuid()) or [path]
        chown = f"sudo chown {me}: {' '.join(str(p) for p in taken)}"
    else:
        chown = f"sudo chown -R {me}: {path}"
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


def prepare_directory(path: Path) -> None:
    """The state directory of the database ``path``, made for this user alone, or StateError
    (on PostgreSQL too: the run lock and ``last-run`` are kept in it)."""
    try:
        # The database holds the platform's access token: made for this user alone,
        # whatever the umask (SQLite gives its -wal and -shm files the database's mode).
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StateError(
            f"state directory {path.parent}: cannot create it: {exc.strerror}"
        ) from exc
    if not os.access(path.parent, os.W_OK):
        readonly = os.statvfs(path.parent).f_flag & os.ST_RDONLY
        if readonly:
            raise StateError(f"state directory {path.parent} is on a read-only file system")
        raise StateError(f"state directory {path.parent} is not writable {_whose(path.parent)}")


def prepare_file(path: Path) -> None:
    """The state directory and the database file, made for this user alone, or StateError."""
    prepare_directory(path)
    check_file(path)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600))
    except PermissionError as exc:
        raise StateError(f"state database {path} cannot be opened {_whose(path)}") from exc
    except OSError as exc:
        raise StateError(f"state database {path}: cannot create it: {exc.strerror}") from exc


def create(path: Path) -> Engine:
    """The engine of the SQLite file ``path`` (checked and made by ``prepare_file``)."""
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

    return engine


def schema_version(conn: Connection) -> int:
    return int(conn.exec_driver_sql("PRAGMA user_version").scalar_one())


def set_schema_version(conn: Connection, version: int) -> None:
    conn.exec_driver_sql(f"PRAGMA user_version={int(version)}")


def backup(engine: Engine, target: Path) -> int:
    """A consistent copy of the database in ``target``, a new file of mode 0600 (it holds the
    access token): SQLite's online backup, which a run writing meanwhile does not tear.
    Its size in bytes."""
    try:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
    except FileExistsError as exc:
        raise StateError(f"{target} exists already: name a new file") from exc
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


# ---------------------------------------------------------------- the token table


class Tokens:
    """The tokens table through short connections of its own, which never wait for the
    database's write lock longer than asked (``syncd.snapshot.tokens``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock_path = path.parent / "token.lock"

    def _connect(self, timeout: float) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=timeout, isolation_level=None)

    def read(self, app: str) -> StoredToken | None:
        try:
            with contextlib.closing(self._connect(BUSY_TIMEOUT_MS / 1000)) as db:
                return read_token(db.execute, app)
        except sqlite3.DatabaseError as exc:
            raise StateError(
                f"state database {self.path}: reading the shared token: {exc}"
            ) from exc

    def compare_and_set(
        self,
        app: str,
        expected: tuple[str | None, ...],
        row: StoredToken,
        timeout: float,
    ) -> bool:
        """Store ``row`` (token, expiry, issued) for ``app`` if the stored token is one of
        ``expected``; False when the write lock was not free within ``timeout`` seconds."""
        try:
            with contextlib.closing(self._connect(timeout)) as db:
                db.execute("BEGIN IMMEDIATE")
                try:
                    store_token(db.execute, app, expected, row)
                    db.execute("COMMIT")
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                return False
            log.warning("state database %s: the renewed token was not stored: %s", self.path, exc)
        except sqlite3.DatabaseError as exc:
            log.warning("state database %s: the renewed token was not stored: %s", self.path, exc)
        return True
