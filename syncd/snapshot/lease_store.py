"""Where the lease and the members are kept: apart from the run's own writes, by construction.

The lease is renewed every third of it; a renewal that waits behind this process's own
write transactions (a plan of 100,000 rows journaled in one transaction, the journal
writer's groups) lets the lease run out under a lone sync, which then fences itself. So
the lease never shares a lock with those writes:

- **SQLite**: the ``leadership`` and ``members`` tables live in a small database file
  of their own beside the state database (``syncd.db-lease``, found through the state
  database's real path, so every process sharing that file shares this one too). Its
  write lock is held only by lease transactions, each a few statements long: the state
  database's write lock (``BEGIN IMMEDIATE``, which the run holds for as long as its
  writes take) is never asked for. The same tables in the state database itself (schema
  8) are left unused on SQLite.
- **PostgreSQL**: an engine (a pool) of its own, so the lease thread never waits for a
  connection the run holds, and transactions without ``pg_advisory_xact_lock`` (the
  run's write lock): the rows it writes are locked as usual, waited for at most the
  time asked (``lock_timeout``), then the next try. A leader frozen in the middle of a
  journal transaction holds the write lock, never the lease row; one frozen inside its
  lease transaction holds the row for as long at most
  (``idle_in_transaction_session_timeout``, set for the lease's transactions).

``LeaseStore`` is this process's owner of those pieces (its connection or file, the fence
check): the lease (``syncd.run.leadership``), ``syncd status`` and the journal writer's fence
reach the lease through it, never through free functions over the state engine.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import Connection, Engine

from syncd.errors import Fenced, StateError
from syncd.snapshot import leases, postgres, sqlite
from syncd.snapshot.sql import is_postgresql

LEASE_FILE_SUFFIX = "-lease"
OPEN_WAIT_MS = 10_000  # making the lease's tables: another process may be renewing


def lease_file(database: Path) -> Path:
    """The lease's own SQLite file beside the state database (its real path: a state
    directory whose ``syncd.db`` is a link to a shared file shares that file's lease)."""
    real = database.resolve()
    return real.with_name(real.name + LEASE_FILE_SUFFIX)


class LeaseStore:
    """The lease's own connections (SQLite: its own file; PostgreSQL: its own pool), never
    held back by this process's write lock, and the fence check for the run's writes."""

    def __init__(self, engine: Engine, own: Engine) -> None:
        self.state = engine  # the state database: the runs' writes
        self.engine = own  # the lease's own: the lease and the members

    @classmethod
    def open(cls, engine: Engine) -> LeaseStore:
        """The lease store of the state database ``engine`` (its file or pool made as needed)."""
        if is_postgresql(engine):
            return cls(engine, postgres.create(engine.url))
        path = lease_file(Path(str(engine.url.database)))
        sqlite.prepare_file(path)
        own = sqlite.create(path)
        store = cls(engine, own)
        try:
            with store.write(OPEN_WAIT_MS) as conn:
                leases.create_lease_tables(conn)
        except StateError:
            own.dispose()
            raise
        return store

    @property
    def apart(self) -> bool:
        """Whether the lease lives in a database of its own (SQLite)."""
        return not is_postgresql(self.state)

    @contextmanager
    def write(self, wait_ms: int) -> Iterator[Connection]:
        """One lease transaction, waiting at most ``wait_ms`` for the lease's rows (another
        instance's lease transaction): never for this process's run's writes."""
        wait = max(int(wait_ms), 1)
        if self.apart:
            with self.engine.connect() as conn:
                conn.exec_driver_sql(f"PRAGMA busy_timeout={wait}")
                conn.commit()
                with conn.execution_options(sqlite_begin="IMMEDIATE").begin():
                    yield conn
            return
        with self.engine.connect() as conn, conn.begin():
            # No statement of the lease's runs longer than that either (the server's clock),
            # and a process frozen inside this transaction (its UPDATE holds the lease
            # row's lock) has its session ended by the server after as long: the row is
            # free for a standby's next try, not held for the session-wide idle timeout.
            conn.exec_driver_sql(
                f"SET LOCAL lock_timeout = {wait}; SET LOCAL statement_timeout = {wait}; "
                f"SET LOCAL idle_in_transaction_session_timeout = {wait}"
            )
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        with self.engine.connect() as conn:
            yield conn

    def holder(self) -> leases.Holder | None:
        with self.read() as conn:
            return leases.holder(conn)

    def check(self, conn: Connection, instance: str | None, epoch: int | None) -> None:
        """The fence, inside a write transaction of a real run (``conn``, the state
        database's): errors.Fenced (the transaction rolls back, nothing of it is kept)
        unless the store names ``instance`` and ``epoch`` the live holder.
        On PostgreSQL it is read in that transaction itself; on SQLite from the lease's
        file, read while the transaction holds the state database's write lock."""
        if self.apart:
            with self.read() as own:
                current = leases.holder(own)
        else:
            current = leases.holder(conn)
        reason = leases.not_held(current, instance, epoch)
        if reason is not None:
            raise Fenced(f"fenced: {reason}")

    def end_sessions(self, instance: str) -> int:
        """PostgreSQL: end the state database sessions of ``instance``, a former holder
        whose lease was taken over (frozen, cut off, or stopped in the middle of a
        statement: whatever transaction it had open rolls back and its write lock passes
        on); how many. SQLite: 0 (a frozen process's file lock is what a busy timeout
        ends). The caller logs a failure (a role that may not end them)."""
        if self.apart:
            return 0
        with self.engine.connect() as conn:
            return postgres.end_sessions(conn, leases.session_name(instance))

    def close(self) -> None:
        self.engine.dispose()
