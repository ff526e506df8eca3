"""A write transaction of the state database, and what a run writes in it, named for intent.

``StateStore.transaction()`` opens one on ``StateStore.write()`` (the database's write
lock; on a real run's fenced store, the fence before its commit) and hands it out, as an
Engine hands out a Connection: the runner, the journal writer, recovery, the cursors and
known problems write through its methods, never through the package's modules on a bare
connection. The methods are the package's modules (``journal``, ``records``, ``problems``,
``engine``), which stay its implementation and are tested as such; ``connection`` is the
transaction's own, for a statement of the store's own (rebuild's).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection

from syncd.plan import KnownProblem
from syncd.snapshot import engine, journal, problems, records


class Transaction:
    """One write transaction: its statements commit together, or none does."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    # ---------------------------------------------------------------- the run's journal

    def insert_items(self, run_id: int, items: Iterable[Mapping[str, Any]]) -> None:
        """Journal a plan's items (``journal.item_rows``), before anything is sent."""
        journal.insert_items(self.connection, run_id, items)

    def set_summary(self, run_id: int, summary: Mapping[str, Any]) -> None:
        """Record a run's summary as it stands."""
        journal.set_summary(self.connection, run_id, summary)

    def mark_sent(self, run_id: int, seqs: Sequence[int]) -> None:
        """Mark a batch's items as sent, before it leaves."""
        journal.mark_sent(self.connection, run_id, seqs)

    def unmark(self, run_id: int, seqs: Sequence[int]) -> None:
        """Mark a batch that never left as planned again."""
        journal.unmark(self.connection, run_id, seqs)

    def settle_items(self, run_id: int, results: Sequence[Mapping[str, Any]]) -> None:
        """Record items' answers (seq, outcome, status, error)."""
        journal.settle_items(self.connection, run_id, results)

    def forget_answered(self, run_id: int) -> None:
        """Let go of a run's sent marks whose items all have their answer."""
        journal.forget_answered(self.connection, run_id)

    def journaled_after(self, run_id: int, first: int, last: int) -> dict[int, str]:
        """The ``after`` JSON text journaled for a run's items ``first`` to ``last``."""
        return journal.journaled_after(self.connection, run_id, first, last)

    # ---------------------------------------------------------------- the snapshot

    def upsert_departments(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Keep departments as written (source_id, node_id, name_path, fields, hash, adopted)."""
        records.upsert_departments(self.connection, rows)

    def set_department_paths(self, paths: Mapping[str, str]) -> None:
        """Departments' name paths as the platform has them now, by source id."""
        records.set_department_paths(self.connection, paths)

    def delete_departments(self, source_ids: Sequence[str]) -> None:
        records.delete_departments(self.connection, source_ids)

    def upsert_employees(self, rows: Sequence[Mapping[str, Any]]) -> None:
        """Keep people as written (source_id, username, employee_id, fields, hash, ...)."""
        records.upsert_employees(self.connection, rows)

    def set_written(self, rows: Sequence[tuple[str, str, str, str]]) -> None:
        """(fields, hash, source_id, username): the fields an update was found to have written."""
        records.set_written(self.connection, rows)

    def set_locked(
        self, source_ids: Sequence[str], locked: bool, reason: str | None, since: int | None
    ) -> None:
        records.set_locked(self.connection, source_ids, locked, reason, since)

    def set_photos(self, rows: Sequence[tuple[str, str, str]]) -> None:
        """(source_id, digest, media_id) of photos set as avatars."""
        records.set_photos(self.connection, rows)

    def forget_employees(self, source_ids: Sequence[str]) -> None:
        """Forget re-keyed records by source id alone, whatever their username (and the
        known problems of the ids no longer held)."""
        records.forget_employees(self.connection, source_ids)
        problems.forget_gone(self.connection)

    def delete_employees(self, keys: Sequence[tuple[str, str]]) -> None:
        """Forget removed people by (source_id, username), so a replacement account is kept
        (and the known problems of the ids no longer held)."""
        records.delete_employees(self.connection, keys)
        problems.forget_gone(self.connection)

    # ---------------------------------------------------------------- known problems

    def record_problems(
        self, run_id: int, now: int, found: Sequence[tuple[KnownProblem, str]]
    ) -> list[KnownProblem]:
        """Record (problem, username) pairs a run found; the new ones."""
        return problems.record_problems(self.connection, run_id, now, found)

    def resolve_problems(self, solved: Iterable[tuple[str, str]]) -> None:
        """(source id, field) pairs written with the value at last, or no longer wanted."""
        problems.resolve_problems(self.connection, solved)

    def forget_gone(self) -> None:
        """Forget the problems of people syncd no longer holds."""
        problems.forget_gone(self.connection)

    def move_problems(self, moved: Sequence[KnownProblem]) -> list[KnownProblem]:
        """Record the accounts that hold these problems' values now."""
        return problems.move_problems(self.connection, moved)

    def untold(self, run_id: int) -> list[tuple[KnownProblem, str]]:
        """Problems a killed or stopped run found and could not tell: told by ``run_id``."""
        return problems.untold(self.connection, run_id)

    def source_ids(self, usernames: Sequence[str]) -> dict[str, str]:
        """Username -> source id, of these usernames that syncd holds."""
        return problems.source_ids(self.connection, usernames)

    # ---------------------------------------------------------------- cursors

    def set_cursor(self, name: str, value: str) -> None:
        engine.set_cursor(self.connection, name, value)
