"""Opening the state database (created and migrated as needed), its write transactions, cursors.

Two engines behind one seam: SQLite, a file in the state directory (``sqlite``), the
default; PostgreSQL, named by the ``database_url`` setting (``postgres``). One schema and
one migration path serve both (``tables``); the SQL that runs on both is in ``sql``.
"""

from __future__ import annotations

import json
import logging
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, text

from syncd.errors import StateError
from syncd.snapshot import postgres, sqlite
from syncd.snapshot.failures import describe as describe
from syncd.snapshot.failures import driver_failure as driver_failure
from syncd.snapshot.failures import postgres_failure as postgres_failure
from syncd.snapshot.failures import state_problem as state_problem
from syncd.snapshot.failures import translated as translated
from syncd.snapshot.postgres import is_postgresql
from syncd.snapshot.tables import MIGRATIONS, SCHEMA_VERSION

log = logging.getLogger("syncd.snapshot")

DAMAGED = sqlite.DAMAGED
check_file = sqlite.check_file
# The state directory of each open engine (a PostgreSQL database has none of its own).
_STATE_DIRS: weakref.WeakKeyDictionary[Engine, Path] = weakref.WeakKeyDictionary()


def state_dir(engine: Engine) -> Path:
    """The state directory the engine was opened for (the SQLite file's own directory)."""
    found = _STATE_DIRS.get(engine)
    return found if found is not None else Path(str(engine.url.database)).parent


def open_engine(path: Path, url: Any = None, *, migrate: bool = True) -> Engine:
    """Open (creating and migrating as needed) the state database, or raise StateError:
    the SQLite file ``path``, or the PostgreSQL database ``url`` names (a str or a
    pydantic SecretStr; ``path``'s directory is then the state directory all the same).

    ``migrate=False`` (the commands that only read: status, reports): a database of an
    older schema is left as it is, and StateError says what migrates it; a new, empty
    one is still made."""
    if url is not None and hasattr(url, "get_secret_value"):
        url = url.get_secret_value()
    if url:
        parsed = postgres.parse(str(url))
        sqlite.prepare_directory(path)
        engine = postgres.create(parsed)
        place = postgres.where(parsed)
    else:
        sqlite.prepare_file(path)
        engine = sqlite.create(path)
        place = str(path)
    _STATE_DIRS[engine] = path.parent
    try:
        if not migrate:
            _refuse_to_migrate(engine, place)
        _migrate(engine, place)
    except (sqlite.DatabaseError, UnicodeDecodeError) as exc:  # in the driver's connect
        engine.dispose()
        raise sqlite.state_problem(path, exc) from exc
    except StateError:
        engine.dispose()
        raise
    except Exception as exc:
        engine.dispose()
        problem = driver_failure(engine, exc)
        if problem is None:
            raise
        raise problem from exc
    return engine


def schema_version(conn: Connection) -> int:
    """The database's schema version (0: a new database)."""
    if is_postgresql(conn):
        return postgres.schema_version(conn)
    return sqlite.schema_version(conn)


def set_schema_version(conn: Connection, version: int) -> None:
    if is_postgresql(conn):
        postgres.set_schema_version(conn, version)
    else:
        sqlite.set_schema_version(conn, version)


def _refuse_to_migrate(engine: Engine, place: str) -> None:
    """StateError for a database of an older schema, which a read-only command must not
    migrate (its first write would be a migration an admin did not ask for)."""
    with engine.connect() as conn:
        found = schema_version(conn)
    if 0 < found < SCHEMA_VERSION:
        raise StateError(
            f"state database {place} has schema version {found}, older than this syncd's "
            f"({SCHEMA_VERSION}, {_version()}); this command only reads it and leaves it as "
            "it is: the next sync migrates it, keeping a copy of it as it was (syncd sync "
            "--dry-run is enough), then this command reads it"
        )


def _migrate(engine: Engine, place: str) -> None:
    """Bring the database to this syncd's schema. An SQLite file that has data is first
    copied beside itself, and what the migration does is logged (WARNING: every command
    says it once)."""
    with engine.connect() as conn:
        found = schema_version(conn)
    if 0 < found < SCHEMA_VERSION:
        kept = _keep_copy(engine, found)
        steps = "; ".join(_summary(MIGRATIONS[step]) for step in range(found, SCHEMA_VERSION))
        log.warning(
            "state database %s: schema %d is migrated to %d, for this syncd (%s): %s. %s",
            place,
            found,
            SCHEMA_VERSION,
            _version(),
            steps,
            f"The database as it was is kept in {kept}" if kept else "",
        )
    with write(engine) as conn:
        version = schema_version(conn)
        if version < 0:  # no syncd writes one: a damaged header (SQLite's user_version)
            raise StateError(
                f"state database {place} has schema version {version}, which no syncd "
                "writes: it is damaged; restore it from a backup"
            )
        if version > SCHEMA_VERSION:
            raise StateError(
                f"state database {place} has schema version {version}, newer than this syncd "
                f"({SCHEMA_VERSION}): upgrade syncd"
            )
        for step in range(version, SCHEMA_VERSION):
            MIGRATIONS[step](conn)
        if version != SCHEMA_VERSION:
            set_schema_version(conn, SCHEMA_VERSION)


def _summary(migration: Callable[[Connection], None]) -> str:
    """What a migration does, in a few words: its docstring's first sentence."""
    text = " ".join((migration.__doc__ or migration.__name__).split())
    return text.split(". ")[0].split(": ")[0].rstrip(".")


def _version() -> str:
    from importlib.metadata import version

    return f"syncd {version('syncd')}"


def _keep_copy(engine: Engine, schema: int) -> Path | None:
    """A consistent copy of an SQLite database beside it, before it is migrated:
    ``syncd.db.schema-5`` (``.2``, ``.3``... when one exists), readable by this user alone.
    None on PostgreSQL: its backups are pg_dump's (README, "State database")."""
    if is_postgresql(engine):
        return None
    path = Path(str(engine.url.database))
    target = path.with_name(f"{path.name}.schema-{schema}")
    n = 1
    while target.exists():
        n += 1
        target = path.with_name(f"{path.name}.schema-{schema}.{n}")
    backup(engine, target)
    return target


def backup(engine: Engine, target: Path) -> int:
    """A consistent copy of the SQLite database in ``target``, a new file of mode 0600 (it
    holds the access token), which a run writing meanwhile does not tear: its size in
    bytes. A PostgreSQL database is backed up with pg_dump: StateError saying so."""
    if is_postgresql(engine):
        raise postgres.backup(describe(engine))
    return sqlite.backup(engine, target)


@contextmanager
def write(engine: Engine) -> Iterator[Connection]:
    """One write transaction that takes the database's write lock at once: one writer at a
    time, across every process and (PostgreSQL) every host.

    SQLite: ``BEGIN IMMEDIATE``, the file's write lock. PostgreSQL: the transaction's first
    statement is ``pg_advisory_xact_lock(postgres.WRITE_LOCK)``, held to its end. What
    relies on it (run ids, token renewals, rebuild) holds on both. Either waits
    ``BUSY_TIMEOUT_MS`` at most. The engine's failures (a full disk, a lock held too long,
    a server gone) roll it back and end as a StateError naming the database.
    """
    if is_postgresql(engine):
        with postgres.lock_for_writing(engine.connect()) as conn, conn.begin():
            yield conn
        return
    with engine.connect().execution_options(sqlite_begin="IMMEDIATE") as conn, conn.begin():
        yield conn


@contextmanager
def write_apart(engine: Engine, wait_ms: int) -> Iterator[Connection]:
    """A write transaction that goes on while another holds the database's write lock:
    the lease's (syncd.run.leadership), which a standby must be able to take from a leader
    frozen (SIGSTOP, a VM paused) in the middle of a write transaction.

    PostgreSQL: no ``pg_advisory_xact_lock``; the rows it writes are locked as usual,
    waited for ``wait_ms`` at most (``lock_timeout``), then StateError and the next try.
    SQLite: as ``write``, since the file has one write lock for everyone (docs/ha.md says
    what that leaves out)."""
    if is_postgresql(engine):
        with engine.connect() as conn, conn.begin():
            conn.exec_driver_sql(f"SET LOCAL lock_timeout = {int(wait_ms)}")
            yield conn
        return
    with write(engine) as conn:
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
    """Give the space of deleted rows back (VACUUM): bytes freed. SQLite: the file's size;
    PostgreSQL: the database's (VACUUM there frees space for reuse, not to the disk)."""
    if is_postgresql(engine):
        return postgres.compact(engine)
    return sqlite.compact(engine, path)
