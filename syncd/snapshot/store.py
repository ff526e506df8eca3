"""The state database's one owner in a process: ``StateStore``.

Opened once per process (each command of the command line, the daemon) and handed
explicitly to what reads or writes the state: the runner, the survey, the executor,
leadership, rebuild, the runs' records, status, notifications, metrics. It owns the
engine (SQLite or PostgreSQL: ``sqlite`` and ``postgres`` are the adapters, each setting
its own session guards — pragmas, timeouts, keepalives — where it makes its engine), the
write transactions, the token store, lineage, the lease's store and the journal writer;
its methods are named for what they do. Closing it (``with StateStore.open(...) as
store``) lets the lease store and the engine go.

A real run writes through ``store.fenced(turn.fence)``: the same store (engine, token
store, lease store), whose every write transaction checks the run's fence before its
commit, so nothing a run writes to the state others go on from (the snapshot, the
journal's items, cursors, dates, departures, known problems, its memo) is kept once
another instance has taken the lease over. As SQLAlchemy's ``Engine.execution_options``:
a view sharing its owner's pool, which only the owner closes. The run's own record (its
row, its rejected rows) is written whoever holds the lease: it says what the run did.

Composition, as SQLAlchemy's Engine and Connection or httpx's Client: the store holds the
engine and calls the package's modules, which stay its implementation; nothing outside
``syncd.snapshot`` needs an ``Engine`` of its own. Writes go through the transactions it
hands out (``transaction()``: a ``Transaction``, whose methods are what a run writes, as
a Connection is what an Engine hands out); ``write()`` is the bare connection, for the
statements of the package's own callers (rebuild, retention).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import DatabaseError

from syncd.model import Directory
from syncd.plan import PlatformView, Snapshot, SyncedDepartment, SyncedEmployee
from syncd.snapshot import dates, departures, engine, journal, lineage, planning, sql
from syncd.snapshot.lease_store import LeaseStore
from syncd.snapshot.records import Held
from syncd.snapshot.tokens import TokenStore
from syncd.snapshot.transaction import Transaction

Fence = Callable[[Connection], None]


@dataclass
class _Owned:
    """What a store and its fenced views share: made at first use, closed by the owner."""

    tokens: TokenStore | None = None
    leases: LeaseStore | None = None


class StateStore:
    """The state database of this process, and everything that reads or writes it."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._owned = _Owned()
        self._fence: Fence | None = None  # set on a fenced view only

    def fenced(self, fence: Fence) -> StateStore:
        """This store for a real run: each write transaction it opens runs ``fence(conn)``
        after its writes and before its commit (errors.Fenced rolls it back). Shares the
        engine, the token store and the lease store; closing it leaves them to the owner."""
        view = StateStore(self._engine)
        view._owned, view._fence = self._owned, fence
        return view

    @classmethod
    def open(cls, path: Path, url: Any = None, *, migrate: bool = True) -> StateStore:
        """The store of the SQLite file ``path`` or of the PostgreSQL database ``url``
        names, created and migrated as needed (``engine.open_engine``: ``migrate=False``
        for the commands that only read), or StateError."""
        return cls(engine.open_engine(path, url, migrate=migrate))

    def __enter__(self) -> StateStore:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Let the lease store's connections and the engine's pool go (a fenced view's
        owner's to close: nothing)."""
        if self._fence is not None:
            return
        if self._owned.leases is not None:
            self._owned.leases.close()
            self._owned.leases = None
        self._engine.dispose()

    def __repr__(self) -> str:
        return f"StateStore({self.describe()})"

    # ---------------------------------------------------------------- the database

    @property
    def engine(self) -> Engine:
        """The engine itself, for the store's own modules (and the callers not moved yet)."""
        return self._engine

    @property
    def dialect(self) -> str:
        """The engine's name: "sqlite" or "postgresql"."""
        return sql.kind(self._engine)

    @property
    def on_postgresql(self) -> bool:
        return sql.is_postgresql(self._engine)

    def describe(self) -> str:
        """The database as messages name it: the SQLite file, or the PostgreSQL database
        and its server (never the URL's password)."""
        return engine.describe(self._engine)

    @property
    def state_dir(self) -> Path:
        """The state directory the store was opened for."""
        return engine.state_dir(self._engine)

    @contextmanager
    def write(self) -> Iterator[Connection]:
        """One write transaction holding the database's write lock (``engine.write``); on a
        fenced view, refused before its commit unless the run's lease still holds."""
        with engine.write(self._engine) as conn:
            yield conn
            if self._fence is not None:
                self._fence(conn)

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """One write transaction (``write``), with what a run writes in it named for intent
        (``transaction.Transaction``)."""
        with self.write() as conn:
            yield Transaction(conn)

    @contextmanager
    def write_apart(self, wait_ms: int) -> Iterator[Connection]:
        """A write transaction that goes on while another holds the write lock
        (``engine.write_apart``)."""
        with engine.write_apart(self._engine, wait_ms) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[Connection]:
        """A connection for reading, given back at the end; a database that cannot be read
        (damaged, a table missing, a lock held too long, a server gone) raises StateError
        naming it, rather than reaching the operator as an internal error."""
        with self.reading(), self._engine.connect() as conn:
            yield conn

    @contextmanager
    def reading(self) -> Iterator[None]:
        """SQLAlchemy's failures of the reads in the block as the StateError an operator
        reads, naming the database."""
        try:
            yield
        except (DatabaseError, UnicodeDecodeError) as exc:  # OperationalError included
            raise engine.state_problem(self.describe(), exc) from exc

    def backup(self, target: Path) -> int:
        """A consistent copy of the SQLite database in ``target``: its size in bytes
        (PostgreSQL: StateError, pg_dump backs it up)."""
        return engine.backup(self._engine, target)

    def compact(self, path: Path) -> int:
        """Give the space of deleted rows back (VACUUM): bytes freed."""
        return engine.compact(self._engine, path)

    def cursor(self, name: str) -> str | None:
        """The cursor ``name`` as stored (None: never set)."""
        with self.reading():
            return engine.get_cursor(self._engine, name)

    # ---------------------------------------------------------------- what it owns

    @property
    def tokens(self) -> TokenStore:
        """The application's token, shared by every syncd on this database (one per store)."""
        if self._owned.tokens is None:
            self._owned.tokens = TokenStore(self._engine)
        return self._owned.tokens

    @property
    def leases(self) -> LeaseStore:
        """The lease's own store (its own file or pool), made at first use, closed with
        the store."""
        if self._owned.leases is None:
            self._owned.leases = LeaseStore.open(self._engine)
        return self._owned.leases

    # ---------------------------------------------------------------- lineage

    def last_run_given(self) -> int:
        """The newest run id this state directory gave (0: none)."""
        return lineage.last_run_given(self._engine)

    def checked(self) -> bool:
        """Whether the database was compared with the platform since it was made or restored."""
        return lineage.checked(self._engine)

    def set_checked(self, how: str, at_ms: int) -> None:
        lineage.set_checked(self._engine, how, at_ms)

    def set_unchecked(self) -> None:
        """The next complete read compares the database with the platform."""
        lineage.set_unchecked(self._engine)

    def bound_identity(self) -> dict[str, Any] | None:
        """The platform's identity the database is bound to (None: not yet bound)."""
        return lineage.bound_identity(self._engine)

    def bind(self, identity: dict[str, Any]) -> None:
        lineage.bind(self._engine, identity)

    def others(self) -> frozenset[str]:
        """The source ids on the platform accepted as another program's or installation's."""
        return lineage.others(self._engine)

    def set_found(self, ids: Collection[str]) -> None:
        """Keep the source ids a continuity check found unknown, for ``accept``."""
        lineage.set_found(self._engine, ids)

    def accept_found(self, at_ms: int) -> int:
        """The records the last check found are others': how many were accepted."""
        return lineage.accept_found(self._engine, at_ms)

    def unknown_ids(self, ids: Collection[str]) -> set[str]:
        """Which of these source ids the database holds no person for."""
        return lineage.unknown_ids(self._engine, ids)

    # ---------------------------------------------------------------- runs and their items

    def start_run(
        self,
        *,
        trigger: str,
        mode: str,
        read: str,
        source: str,
        started_at: int,
        epoch: int | None = None,
        instance: str | None = None,
    ) -> int:
        """Record a run as running, by this process on this host (the instance, and the lease's
        epoch it writes under). (``journal.start_run``)"""
        return journal.start_run(
            self._engine,
            trigger=trigger,
            mode=mode,
            read=read,
            source=source,
            started_at=started_at,
            epoch=epoch,
            instance=instance,
        )

    def finish_run(
        self, run_id: int, *, outcome: str, exit_code: int, finished_at: int, summary: str
    ) -> None:
        """Record how a run ended. (``journal.finish_run``)"""
        return journal.finish_run(
            self._engine,
            run_id,
            outcome=outcome,
            exit_code=exit_code,
            finished_at=finished_at,
            summary=summary,
        )

    def run_summary(self, run_id: int) -> dict[str, Any]:
        """A run's summary as recorded ({} for a run that is gone or whose summary is damaged).
        (``journal.run_summary``)"""
        return journal.run_summary(self._engine, run_id)

    def insert_rejected(self, run_id: int, rows: Sequence[Mapping[str, Any]]) -> None:
        """Rows with kind, where, key, reason. (``journal.insert_rejected``)"""
        return journal.insert_rejected(self._engine, run_id, rows)

    def copy_rejected(self, from_run: int, to_run: int) -> None:
        """A run's rejected rows recorded again for another run that read the same files.
        (``journal.copy_rejected``)"""
        return journal.copy_rejected(self._engine, from_run, to_run)

    def failed_displays(self, run_id: int, error: str, limit: int) -> list[str]:
        """Who (or what) failed with this error text in a run: the first ``limit``, in plan order.
        (``journal.failed_displays``)"""
        return journal.failed_displays(self._engine, run_id, error, limit)

    def failure_groups(self, run_id: int, limit: int = 10) -> list[tuple[str, int]]:
        """A run's failed items grouped by error text, most frequent first.
        (``journal.failure_groups``)"""
        return journal.failure_groups(self._engine, run_id, limit)

    def interrupt_stale_runs(
        self,
        now_ms: int,
        alive: Callable[[Connection, Mapping[str, Any]], bool] | None = None,
    ) -> list[int]:
        """Runs left 'running' by a process that died are marked interrupted (caller holds the
        lock). (``journal.interrupt_stale_runs``)"""
        return journal.interrupt_stale_runs(self._engine, now_ms, alive)

    def load_items(
        self, run_id: int, *, limit: int | None = None, outcome: str | None = None
    ) -> list[dict[str, Any]]:
        """A run's items in plan order, as stored (messages were written before anything was sent).
        (``journal.load_items``)"""
        return journal.load_items(self._engine, run_id, limit=limit, outcome=outcome)

    def unsettled_items(self) -> list[dict[str, Any]]:
        """Items a crashed run sent without learning the answer. (``journal.unsettled_items``)"""
        return journal.unsettled_items(self._engine)

    def applied_since(self, run_id: int) -> bool:
        """Whether a run after ``run_id`` (or that run itself is gone) may have changed the
        snapshot: a real run that planned anything, sent or not.
        (``journal.applied_since``)"""
        return journal.applied_since(self._engine, run_id)

    # ---------------------------------------------------------------- what a plan reads

    def load_snapshot(self, *, everyone: bool = True, fields: bool = False) -> Snapshot:
        """What syncd last wrote, as plain values. (``planning.load_snapshot``)"""
        return planning.load_snapshot(self._engine, everyone=everyone, fields=fields)

    def held(self, departments: Mapping[str, SyncedDepartment], people: int) -> Held:
        """What syncd holds, asked by the platform reader on connections of its own."""
        return Held(self._engine, departments, people)

    def people_for(
        self,
        head: Snapshot,
        directory: Directory,
        view: PlatformView,
        *,
        everyone: bool,
        loaded: dict[str, SyncedEmployee] | None = None,
    ) -> Snapshot:
        """The snapshot with the people a plan of this read weighs. (``planning.people_for``)"""
        return planning.people_for(
            self._engine, head, directory, view, everyone=everyone, loaded=loaded
        )

    def weighed_fields(
        self, snapshot: Snapshot, directory: Directory, view: PlatformView
    ) -> Snapshot:
        """The third step: the fields planning weighs (``syncd.plan.needs``), and who of syncd's
        people is placed in the departments the read no longer names.
        (``planning.weighed_fields``)"""
        return planning.weighed_fields(self._engine, snapshot, directory, view)

    def with_fields(
        self,
        snapshot: Snapshot,
        people: Collection[str] | None,
        placed_in: Collection[str] = (),
        departments: Collection[str] | None = None,
    ) -> Snapshot:
        """The snapshot with these people's fields and these departments' (None: everyone's).
        (``planning.with_fields``)"""
        return planning.with_fields(self._engine, snapshot, people, placed_in, departments)

    def with_history(self, snapshot: Snapshot, view: PlatformView) -> Snapshot:
        """``snapshot``, with the source ids syncd's history wrote under the usernames of the
        platform's accounts a plan may adopt (``view.people``).
        (``planning.with_history``)"""
        return planning.with_history(self._engine, snapshot, view)

    def with_people(
        self, snapshot: Snapshot, source_ids: Collection[str] | None = None
    ) -> Snapshot:
        """The snapshot with everyone's records (``source_ids`` None), or with those of these people
        that syncd holds added to the ones it has. (``planning.with_people``)"""
        return planning.with_people(self._engine, snapshot, source_ids)

    def written_fields(self, source_ids: Collection[str]) -> dict[str, Mapping[str, Any] | None]:
        """The fields syncd last wrote for these people, by source id (None: none recorded): what a
        plan's changes show as before (``syncd.plan.finish``).
        (``planning.written_fields``)"""
        return planning.written_fields(self._engine, source_ids)

    # ---------------------------------------------------------------- dates, departures

    def record_applied(
        self,
        changes: Mapping[str, tuple[str | None, str | None]] | None,
        departed: Collection[str] = (),
        returned: Collection[str] = (),
        let_go: Collection[str] = (),
        deleted: Collection[str] = (),
        *,
        run_id: int | None = None,
    ) -> None:
        """After an applied run, in one write transaction: the effective dates read now, by
        source id (``dates.record_dates``; None: none read, none let go), the departures
        (``departures.record_departures``), and the run's (``run_id``) sent marks whose
        items all have their answer let go of (``journal.forget_answered``)."""
        with self.write() as conn:
            if run_id is not None:
                journal.forget_answered(conn, run_id)
            if changes is not None:
                dates.record_dates(conn, changes)
            if departed or returned or let_go or deleted:
                departures.record_departures(conn, departed, returned, let_go, deleted)
