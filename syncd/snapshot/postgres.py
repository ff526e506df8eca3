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
- **The same durability as SQLite's default.** SQLite runs in WAL mode with
  ``synchronous=NORMAL``: a commit is not flushed to disk at once, so a crash of the
  machine may lose the last transactions, never corrupt the file; syncd's journal is made
  for that (a run's outcome lost is found again by the next run's comparison). syncd's
  sessions here run with ``synchronous_commit=off``, the same contract (a server crash may
  lose the last ~0.6 s of commits, never corrupt anything): a 100,000-person first sync
  commits about 1,500 times, and waiting for each flush made it 1.5x slower than on SQLite.
- **The schema version** lives in a one-row table, ``syncd_schema``.
- **A server gone or restarted** fails the statement with a StateError naming the
  server; the pool tests a connection idle for more than ``IDLE_BEFORE_PING_S`` before
  use (SQLAlchemy's ``pool_pre_ping``, without its round trip per checkout within a run),
  and a failure drops every pooled connection: the next run opens fresh ones.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, ExceptionContext, create_engine, event, make_url, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import DisconnectionError

from syncd.errors import StateError
from syncd.snapshot.leases import PROCESS
from syncd.snapshot.tables import BUSY_TIMEOUT_MS

if TYPE_CHECKING:
    from syncd.snapshot.token_rows import StoredToken

log = logging.getLogger("syncd.snapshot")

# pg_advisory_xact_lock keys: any bigint; these spell "syncdWRT" and "syncdTOK".
POSTGRESQL = "postgresql"  # the dialect's name
WRITE_LOCK = 0x73796E6364575254
TOKEN_LOCK = 0x73796E6364544F4B
CONNECT_TIMEOUT_S = 10
# Session guards, set here for every connection of syncd's (the state's and the lease's):
# no statement runs longer than STATEMENT_TIMEOUT_MS (a snapshot of 100,000 people is
# read in seconds); a session idle inside a transaction longer than IDLE_IN_TRANSACTION_MS
# (its process frozen, holding the write lock) is ended by the server, so the lock passes
# on before a waiting writer's lock_timeout (BUSY_TIMEOUT_MS) runs out; TCP keepalives
# and tcp_user_timeout end a connection whose peer vanished without a reset within about
# half a minute, rather than the kernel's two hours.
STATEMENT_TIMEOUT_MS = 300_000
IDLE_IN_TRANSACTION_MS = BUSY_TIMEOUT_MS * 3 // 4
KEEPALIVES = {
    "keepalives": 1,
    "keepalives_idle": 10,
    "keepalives_interval": 5,
    "keepalives_count": 3,
    "tcp_user_timeout": 30_000,
}
_SCHEMA_TABLE = "syncd_schema"
WRITING = "syncd_writing"  # an execution option: the transaction takes the write lock
_BEGIN_WRITE = f"BEGIN; SELECT pg_advisory_xact_lock({WRITE_LOCK})"
_USED = "syncd_used"  # when a pooled connection was last given back (time.monotonic)
IDLE_BEFORE_PING_S = 0.5  # a ping's round trip is then under 1% of the time idle
_LOCK_POLL_S = 0.05


def is_postgresql(bind: Connection | Engine) -> bool:
    return bind.dialect.name == POSTGRESQL


@functools.lru_cache(maxsize=512)
def placeholders(sql: str) -> str:
    """``sql`` written with ``?`` placeholders (sqlite3's style, the statements for both
    engines) in psycopg's ``%s`` style; a statement holds no ``%`` of its own."""
    if "%" in sql:
        raise ValueError(f"a statement for both engines holds a %: {sql[:60]}")
    return sql.replace("?", "%s")


def _run(conn: Connection, sql: str, params: Any = ()) -> Any:
    """One ``?``-style statement on ``conn`` (the token rows' ``execute``)."""
    return conn.exec_driver_sql(placeholders(sql), params)


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
    """The engine: its connections in autocommit, each transaction begun explicitly (as
    SQLite's are), a write's with its lock in the same round trip; a connection idle for
    a while is tested before use. Under load every round trip waits for both processes
    to be scheduled: a batch's transaction costs three (begin and lock, its statements
    pipelined, commit) rather than five."""
    engine = create_engine(
        url,
        isolation_level="AUTOCOMMIT",  # transactions are begun below, explicitly
        use_native_hstore=False,  # no hstore: no lookup of its type on each first connect
        connect_args={
            "connect_timeout": CONNECT_TIMEOUT_S,
            # This process's sessions, by name: a takeover ends them (end_sessions).
            "application_name": f"syncd {PROCESS}",
            # Waits for a lock (the write lock above all) at most as long as SQLite's; its
            # commits as durable as SQLite's (above).
            "options": (
                f"-c lock_timeout={BUSY_TIMEOUT_MS} -c synchronous_commit=off "
                f"-c statement_timeout={STATEMENT_TIMEOUT_MS} "
                f"-c idle_in_transaction_session_timeout={IDLE_IN_TRANSACTION_MS}"
            ),
            **KEEPALIVES,
        },
    )
    place = where(url)

    @event.listens_for(engine, "handle_error")
    def _on_error(context: ExceptionContext) -> StateError | None:
        original = context.original_exception
        if is_failure(original):
            return state_problem(place, original, url.password and str(url.password))
        return None

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Connection) -> None:
        writing = conn.get_execution_options().get(WRITING, False)
        # No parameters: one simple query, both statements in one round trip.
        conn.exec_driver_sql(_BEGIN_WRITE if writing else "BEGIN")

    @event.listens_for(engine, "connect")
    def _on_connect(_dbapi_conn: Any, record: Any) -> None:
        record.info[_USED] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_conn: Any, record: Any) -> None:
        if record is not None:
            record.info[_USED] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
        # A connection idle for a while may be one a restarted server dropped: tested, and
        # if dead replaced by a fresh one (the pool retries on DisconnectionError), so a
        # restarted server never wedges the daemon. Within a run, batches follow each
        # other closely: no test, no round trip.
        if time.monotonic() - record.info.get(_USED, 0.0) < IDLE_BEFORE_PING_S:
            return
        try:
            dbapi_conn.execute(b"SELECT 1")
        except Exception as exc:  # psycopg's OperationalError, InterfaceError
            raise DisconnectionError(f"{place}: connection lost") from exc

    return engine


def end_sessions(conn: Connection, name: str) -> int:
    """End every session of this database named ``name`` (a former holder's: its open
    transactions roll back, the write lock they held passes on); how many. A process frozen
    in the middle of a statement (a pipeline cut before its Sync) is never "idle in
    transaction", so no server timeout would end its session: the new holder does."""
    ended = conn.execute(
        text(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE application_name = :name AND datname = current_database() "
            "AND pid <> pg_backend_pid()"
        ),
        {"name": name},
    ).scalar()
    return int(ended or 0)


def lock_for_writing(conn: Connection) -> Connection:
    """``conn`` set so its transaction, when begun, takes the write lock at once (released
    at its end): ``BEGIN`` and ``pg_advisory_xact_lock`` in one round trip."""
    return conn.execution_options(**{WRITING: True})


def schema_version(conn: Connection) -> int:
    if conn.exec_driver_sql(f"SELECT to_regclass('{_SCHEMA_TABLE}')").scalar() is None:
        return 0
    found = conn.exec_driver_sql(f"SELECT max(version) FROM {_SCHEMA_TABLE}").scalar()  # noqa: S608
    return int(found or 0)


def set_schema_version(conn: Connection, version: int) -> None:
    conn.exec_driver_sql(f"CREATE TABLE IF NOT EXISTS {_SCHEMA_TABLE} (version INTEGER NOT NULL)")
    conn.exec_driver_sql(f"DELETE FROM {_SCHEMA_TABLE}")  # noqa: S608
    conn.execute(text(f"INSERT INTO {_SCHEMA_TABLE} (version) VALUES (:v)"), {"v": int(version)})  # noqa: S608


def damaged(place: str, exc: BaseException) -> StateError:
    """A stored value that no longer reads as written (its bytes not UTF-8, its JSON cut:
    ``engine.translated``), on a server: the advice is the server's dump, not a file's."""
    reason = (
        f"a text value is not UTF-8: {exc.reason}"
        if isinstance(exc, UnicodeDecodeError)
        else str(exc)
    )
    return StateError(
        f"state database {place}: a stored value cannot be read ({reason}): stop syncd and "
        "restore the latest dump of the database (pg_restore --clean --dbname=...), then run "
        "`syncd state rebuild`; or, without a dump, start from an empty database: `syncd "
        'state rebuild` then takes back what syncd wrote on the platform (README, "State '
        'database")'
    )


def backup(place: str) -> StateError:
    return StateError(
        f"state database {place}: syncd state backup copies SQLite files only; back a "
        "PostgreSQL database up with the server's own tools: pg_dump --format=custom "
        "--file=syncd.dump <database_url> (restore: pg_restore --clean --dbname=...), "
        'then syncd state rebuild after a restore (README, "State database")'
    )


def compact(engine: Engine) -> int:
    """VACUUM the database's tables: bytes freed (as the database's size shows it)."""
    size = b"SELECT pg_database_size(current_database())"
    raw = engine.raw_connection()  # in autocommit: VACUUM runs outside a transaction
    try:
        db: Any = raw.driver_connection
        before = int(db.execute(size).fetchone()[0])
        db.execute(b"VACUUM")
        after = int(db.execute(size).fetchone()[0])
    except Exception as exc:
        if not is_failure(exc):
            raise
        raise state_problem(where(engine.url), exc) from exc
    finally:
        raw.close()
    return max(before - after, 0)


# ---------------------------------------------------------------- the token table


class Tokens:
    """The tokens table on the server: renewals take turns under a session advisory lock
    (every host's syncd), the compare-and-set under a transaction one of its own, never
    the write lock (the renewing run may hold it, in another of its connections)."""

    def __init__(self, engine: Engine, place: str) -> None:
        self.engine = engine
        self.place = place

    def read(self, app: str) -> StoredToken | None:
        from syncd.snapshot.token_rows import read_token

        with self.engine.connect() as conn:
            return read_token(partial(_run, conn), app)

    def compare_and_set(
        self,
        app: str,
        expected: tuple[str | None, ...],
        row: StoredToken,
        timeout: float,
    ) -> bool:
        from syncd.snapshot.token_rows import store_token

        del timeout  # nothing here waits for the write lock
        try:
            with self.engine.begin() as conn:
                conn.exec_driver_sql(f"SELECT pg_advisory_xact_lock({TOKEN_LOCK} + 1)")
                store_token(partial(_run, conn), app, expected, row)
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
                    try:
                        conn.exec_driver_sql(f"SELECT pg_advisory_unlock({TOKEN_LOCK})")
                        conn.commit()
                    except StateError:  # never back to the pool still holding the lock
                        conn.invalidate()
