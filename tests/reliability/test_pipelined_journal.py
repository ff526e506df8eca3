"""The journal written by a thread of its own while batches are on the wire (syncd.executor.writer).

A batch's sent mark may be written while the batches before it are in flight, and their
answers settled in the same transactions as later marks; what must hold whatever the
interleaving:

- no batch leaves before its sent mark is committed (checked at each send, from another
  connection, which sees only what is committed);
- a run killed at any point of a pipelined apply (a statement of the writer's
  transactions, before or after it runs, or a request on the wire), then a normal run:
  nothing twice on the platform, nothing lost, the snapshot agreeing with it, no item
  left unanswered (points drawn at random from seeds: ``--long`` draws more);
- batches journaled ahead that a platform outage keeps from leaving are planned again,
  not left for recovery;
- the writer failing (the disk full) stops the run with the state database's error, and
  nothing reaches the platform that the journal does not hold as sent.
"""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, event

import syncd.snapshot
import syncd.snapshot.engine
from syncd.errors import EXIT_FAILED, EXIT_OK
from syncd.executor.employees import Employees
from syncd.executor.pipeline import Item
from syncd.platform import ImportResult
from syncd.snapshot import OUTCOME
from tests.support.snapshot_rows import IN_FLIGHT_ITEMS

from .support import Rig, assert_converged, big_company, query, when_requests
from .test_crashes import MARK_SENT, SETTLE, Point, killed_then_synced

PEOPLE = 60  # 30 batches of people and 25 of departments, 4 in flight
STATEMENTS = (MARK_SENT, SETTLE, "INSERT INTO employees", "INSERT INTO departments")


def pipelined(rig: Rig) -> Rig:
    rig.platform_options.update(batch_size=2, concurrency=4)
    rig.company = big_company(PEOPLE)
    rig.company.write(rig.folder)
    rig.write_config()
    return rig


def random_point(seed: int) -> Point:
    """A kill point drawn from ``seed``: a writer statement (the first 20 of each kind
    come in every run of this company) or one of the first requests importing people."""
    draw = random.Random(seed)
    if draw.random() < 0.2:
        return Point("import-employees", draw.randint(1, 12))
    return Point(draw.choice(STATEMENTS), draw.randint(1, 20), draw.choice(("before", "after")))


def journal(database: Path) -> dict[str, str]:
    """The last run's items: username or serial (display) -> outcome."""
    rows = query(
        database,
        f"SELECT display, {OUTCOME} AS outcome FROM run_items "  # noqa: S608
        "WHERE run_id = (SELECT MAX(id) FROM runs)",
    )
    return {str(r["display"]): str(r["outcome"]) for r in rows}


def killed_then_recovered(rig: Rig, point: Point) -> None:
    pipelined(rig)
    killed_then_synced(rig, point)
    assert not query(rig.database, IN_FLIGHT_ITEMS)
    assert [r["outcome"] for r in rig.runs()][-2] == "interrupted"
    assert rig.sync().plan.changes == ()  # type: ignore[union-attr]


@pytest.mark.parametrize("seed", range(6))
def test_a_pipelined_sync_killed_at_a_random_point_converges(rig: Rig, seed: int) -> None:
    killed_then_recovered(rig, random_point(seed))


@pytest.mark.long
@pytest.mark.parametrize("seed", range(6, 40))
def test_more_random_kill_points(rig: Rig, seed: int) -> None:
    killed_then_recovered(rig, random_point(seed))


def test_every_batch_leaves_with_its_sent_mark_committed(
    rig: Rig, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipelined(rig)
    send = Employees._send_import_employees
    seen: list[list[str]] = []

    def checked(self: Employees, batch: list[Item]) -> ImportResult:
        # Another connection sees what is committed, nothing else.
        with sqlite3.connect(rig.database) as db:
            outcomes = [
                str(row[0])
                for item in batch
                for row in db.execute(
                    f"SELECT {OUTCOME} FROM run_items WHERE run_id = ? AND seq = ?",  # noqa: S608
                    (self.run.run_id, item.seq),
                )
            ]
        seen.append(outcomes)
        return send(self, batch)

    monkeypatch.setattr(Employees, "_send_import_employees", checked)

    result = rig.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert len(seen) == PEOPLE // 2
    assert all(outcomes == ["sent", "sent"] for outcomes in seen), seen
    assert_converged(rig)


@pytest.fixture
def full_disk_after(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The state database fills up (SQLite's own limit on its pages) once the snapshot has
    this many people: ``limit[0]``, set by the test."""
    limit = [0]
    real_open = syncd.snapshot.open_engine

    def open_engine(path: Path, *args: Any, **kwargs: Any) -> Engine:
        engine = real_open(path, *args, **kwargs)  # whatever else the real one takes
        written = 0

        def count(conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            nonlocal written
            if statement.startswith("INSERT INTO employees"):
                written += 1
                if written == limit[0]:
                    raw = conn.connection.dbapi_connection
                    (pages,) = raw.execute("PRAGMA page_count").fetchone()
                    raw.execute(f"PRAGMA max_page_count = {pages}")

        event.listen(engine, "after_cursor_execute", count)
        return engine

    monkeypatch.setattr(syncd.snapshot, "open_engine", open_engine)
    monkeypatch.setattr(syncd.snapshot.engine, "open_engine", open_engine)  # the StateStore's
    yield limit


def test_a_full_disk_stops_sending_and_nothing_sent_is_unjournaled(
    rig: Rig, full_disk_after: list[int]
) -> None:
    pipelined(rig)
    rig.company = big_company(400)  # enough rows that the next ones need new pages
    full_disk_after[0] = 3

    result = rig.sync()

    assert result.exit_code == EXIT_FAILED
    assert "database or disk is full" in str(result.error), result.error
    on_platform = set(rig.platform().people)
    journaled = {k for k, outcome in journal(rig.database).items() if outcome in ("sent", "ok")}
    assert on_platform - journaled == set()  # nothing left without its sent mark
    assert len(on_platform) < 400  # it stopped: the rest was never sent
    full_disk_after[0] = 0

    again = rig.sync()

    assert again.exit_code == EXIT_OK, again.error
    assert_converged(rig)


def test_batches_marked_ahead_and_never_sent_are_planned_again(rig: Rig) -> None:
    pipelined(rig)
    rig.emulator.set_faults(latency_ms=20)

    def go_down() -> None:
        rig.emulator.set_faults(down=True)

    with when_requests(rig.emulator, "import-employees", 3, go_down) as down:
        result = rig.sync()
    assert down.is_set()

    assert result.exit_code == EXIT_FAILED  # the platform went away: the run stops
    outcomes = journal(rig.database)
    assert "sent" not in outcomes.values(), outcomes  # nothing left for recovery
    assert "planned" in outcomes.values()
    rig.emulator.set_faults()

    again = rig.sync()

    assert again.exit_code == EXIT_OK, again.error
    assert_converged(rig)
