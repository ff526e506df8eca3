"""The PostgreSQL engine: the state database on a server, shared by every syncd that names it.

Chosen by the ``database_url`` setting (``postgresql://user:password@host:port/name``, or
``postgresql+psycopg://``); psycopg 3 through SQLAlchemy. The URL's password is a secret:
it is shown nowhere (``where`` names host, port and database only). libpq's own
``PGPASSWORD``, ``~/.pgpass`` and ``PGPASSFILE`` work too, with no password in the URL.

What SQLite gives by its nature is made here:

- **One writer at a time.** SQLite's ``BEGIN IMMEDIATE`` takes the file's write lock; a
  write transaction here starts with ``pg_advisory_xact_lock(WRITE_LOCK)``, held to its
  commit, so writers on every host take turns exactly as on one SQLite file (run ids,
  token renewals, rebuild rely on it). It is waited for ``BUSY_TIMEOUT_MS`` at most.
- **The schema version** lives in a one-row table, ``syncd_schema``.
- **A server gone or restarted** fails the statement with a StateError naming the
  server; the pool tests each connection before use (``pool_pre_ping``), so the next run
  opens fresh connections rather than reusing dead ones.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

from sqlalchemy import Connection, Engine, ExceptionContext, create_engine, event, make_url, text
from sqlalchemy.engine import URL

from syncd.errors import StateError
from syncd.snapshot.tables import BUSY_TIMEOUT_MS

log = logging.getLogger("syncd.snapshot")

# pg_advisory_xact_lock keys: any bigint; these spell "syncdWRT" and "syncdTOK".
WRITE_LOCK = 0x73796E6364575254
TOKEN_LOCK = 0x73796E6364544F4B
CONNECT_TIMEOUT_S = 10
_SCHEMA_TABLE = "syncd_schema"
_LOCK_POLL_S = 0.05


def parse(url: str) -> URL:
    """The URL, for psycopg 3; StateError (never quoting the URL) if it is not one."""
    try:
        parsed = make_url(url)
        parsed.port  # noqa: B018 - a port that is not a number raises here
    except Exception:  # its text would quote the URL, password and all
        raise StateError(
            "database_url: not a PostgreSQL URL (postgresql://user:password@host:port/database)"
        ) from None
    if parsed.drivername not in ("postgresql", "postgresql+psycopg"):
        raise StateError(
            f"database_url: {parsed.drivername}:// is not PostgreSQL (postgresql://"
            "user:password@host:port/database); leave it unset for SQLite in state_dir"
        )
    if not parsed.database:
        raise StateError(
            f"database_url: it names no database (postgresql://{parsed.host or 'host'}/name)"
        )
    return parsed.set(drivername="postgresql+psycopg")


def where(url: URL) -> str:
    """The database and its server, as messages name them (never the password)."""
    host = url.host or "the local socket"
    port = url.port or 5432
    return f"{url.database} on {host}:{port} (PostgreSQL)"


def state_problem(place: str, exc: BaseException, password: str | None = None) -> StateError:
    """psycopg's failure as the error an operator reads: the server and database, what failed."""
    original = getattr(exc, "orig", None) or exc
    reason = " ".join(str(original).split()) or type(original).__name__
    if password:
        reason = reason.replace(password, "***")
    sqlstate = getattr(original, "sqlstate", None)
    if sqlstate == "55P03":  # lock_not_available: lock_timeout ran out
        return StateError(
            f"state database {place}: another syncd has held the write lock for more than "
            f"{BUSY_TIMEOUT_MS // 1000} s (a stuck syncd? see pg_locks): try again"
        )
    if type(original).__name__ in ("OperationalError", "InterfaceError") or sqlstate is None:
        return StateError(f"state database {place}: the server cannot be used: {reason}")
    return StateError(f"state database {place}: {reason}")


def is_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is psycopg's failure the operator must read (not a broken constraint,
    which is the caller's to handle)."""
    import psycopg

    return isinstance(exc, psycopg.Error) and not isinstance(exc, psycopg.IntegrityError)


def create(url: URL) -> Engine:
    engine = create_engine(
        url,
        pool_pre_ping=True,  # a restarted server: the next run opens fresh connections
        connect_args={
            "connect_timeout": CONNECT_TIMEOUT_S,
            "application_name": "syncd",
            # Waits for a lock (the write lock above all) at most as long as SQLite's.
            "options": f"-c lock_timeout={BUSY_TIMEOUT_MS}",
        },
    )
    place = where(url)

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> StateError | None:
        original = context.original_exception
        if is_failure(original):
            return state_problem(place, original, url.password and str(url.password))
        return None

    return engine


def lock_for_writing(conn: Connection) -> None:
    """Take the database's write lock for this transaction (released at its end)."""
    conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({WRITE_LOCK})")


def schema_version(conn: Connection) -> int:
    if conn.exec_driver_sql(f"SELECT to_regclass('{_SCHEMA_TABLE}')").scalar() is None:
        return 0
    found = conn.exec_driver_sql(f"SELECT max(version) FROM {_SCHEMA_TABLE}").scalar()  # noqa: S608
    return int(found or 0)


def set_schema_version(conn: Connection, version: int) -> None:
    conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {_SCHEMA_TABLE} (version INTEGER NOT NULL)")
    conn.exec_driver_sql(f"DELETE FROM {_SCHEMA_TABLE}")  # noqa: S608
    conn.execute(text(f"INSERT INTO {_SCHEMA_TABLE} (version) VALUES (:v)"), {"v": int(version)})  # noqa: S608


def backup(place: str) -> StateError:
    return StateError(
        f"state database {place}: syncd state backup copies SQLite files only; back a "
        "PostgreSQL database up with the server's own tools: pg_dump --format=custom "
        "--file=syncd.dump <database_url> (restore: pg_restore --clean --dbname=...), "
        'then syncd state rebuild after a restore (README, "State database")'
    )


def compact(engine: Engine) -> int:
    """VACUUM the database's tables: bytes freed (as the database's size shows it)."""
    with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        size = "SELECT pg_database_size(current_database())"
        before = int(conn.exec_driver_sql(size).scalar_one())
        conn.exec_driver_sql("VACUUM")
        after = int(conn.exec_driver_sql(size).scalar_one())
    return max(before - after, 0)


# ---------------------------------------------------------------- the token table


class Tokens:
    """The tokens table on the server: renewals take turns under a session advisory lock
    (every host's syncd), the compare-and-set under a transaction one of its own, never
    the write lock (the renewing run may hold it, in another of its connections)."""

    def __init__(self, engine: Engine, place: str) -> None:
        self.engine = engine
        self.place = place

    def read(self, app: str) -> tuple[str, int, int | None] | None:
        with self.engine.connect() as conn:
            row = conn.execute(
                text("SELECT access_token, expire_time, issued_time FROM tokens WHERE app = :a"),
                {"a": app},
            ).first()
        return None if row is None else (str(row[0]), int(row[1]), row[2])

    def compare_and_set(
        self,
        app: str,
        expected: tuple[str | None, ...],
        row: tuple[str, int, int | None],
        timeout: float,
    ) -> bool:
        from syncd.snapshot.sql import run
        from syncd.snapshot.sqlite import upsert_token

        del timeout  # nothing here waits for the write lock
        try:
            with self.engine.begin() as conn:
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({TOKEN_LOCK} + 1)")
                found = conn.execute(
                    text("SELECT access_token FROM tokens WHERE app = :a"), {"a": app}
                ).first()
                if (None if found is None else str(found[0])) in expected:
                    for sql, params in upsert_token(app, row):
                        run(conn, sql, params)
        except StateError as exc:
            log.warning("state database %s: the renewed token was not stored: %s", self.place, exc)
        return True

    @contextlib.contextmanager
    def renewal_lock(self) -> Iterator[None]:
        """A session advisory lock held while a token is fetched, waited for at most the
        busy timeout (a process stuck holding it must not stop every other one)."""
        with self.engine.connect() as conn:
            deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
            held = False
            while not held:
                held = bool(
                    conn.exec_driver_sql(f"SELECT pg_try_advisory_lock({TOKEN_LOCK})").scalar()
                )
                conn.commit()
                if held:
                    break
                if time.monotonic() >= deadline:
                    log.warning(
                        "state database %s: another process renews the token for too long; "
                        "renewing anyway",
                        self.place,
                    )
                    break
                time.sleep(_LOCK_POLL_S)
            try:
                yield
            finally:
                if held:
                    with contextlib.suppress(StateError):
                        conn.exec_driver_sql(f"SELECT pg_advisory_unlock({TOKEN_LOCK})")
                        conn.commit()
