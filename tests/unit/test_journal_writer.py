"""The executor's journal writer, on a real state database: writes are committed in the
order given, a ticket's wait returns once its write is visible to another connection,
and a write that fails stops everything after it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.errors import StateError
from syncd.executor.writer import JournalWriter, Write
from tests.support.examples import examples
from tests.support.snapshot_rows import planned_run

SEQS = 20


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Engine, Path]]:
    path = tmp_path_factory.mktemp("writer") / "syncd.db"
    engine = store.open_engine(path)
    yield engine, path
    engine.dispose()


def new_run(engine: Engine) -> int:
    return planned_run(engine, SEQS)


def committed(path: Path, run_id: int) -> dict[int, str]:
    """The outcomes another connection sees: what is committed, nothing else."""
    with closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT seq, outcome FROM run_items WHERE run_id = ?", (run_id,))
        return {int(seq): str(outcome) for seq, outcome in rows}


def settling(run_id: int, seq: int, outcome: str) -> Write:
    return lambda tx: tx.settle_items(run_id, [{"seq": seq, "outcome": outcome}])


@settings(max_examples=examples(25), deadline=None)
@given(
    writes=st.lists(
        st.tuples(st.integers(0, SEQS - 1), st.sampled_from(["sent", "ok", "failed"])),
        min_size=1,
        max_size=30,
    ),
    hand_over_every=st.integers(1, 8),
)
def test_writes_are_committed_in_the_order_given(
    database: tuple[Engine, Path], writes: list[tuple[int, str]], hand_over_every: int
) -> None:
    engine, path = database
    run_id = new_run(engine)
    writer = JournalWriter(store.StateStore(engine))
    expected = dict.fromkeys(range(SEQS), "planned")
    try:
        for n, (seq, outcome) in enumerate(writes, 1):
            ticket = writer.submit(settling(run_id, seq, outcome))
            expected[seq] = outcome
            if n % hand_over_every == 0:
                writer.wait(ticket)
                assert committed(path, run_id) == expected  # this one and all before it
    finally:
        writer.close()
    assert committed(path, run_id) == expected


def test_a_failed_write_stops_the_writer_and_nothing_after_it_is_committed(
    database: tuple[Engine, Path],
) -> None:
    engine, path = database
    run_id = new_run(engine)
    writer = JournalWriter(store.StateStore(engine))

    def broken(tx: store.Transaction) -> None:
        tx.connection.exec_driver_sql("UPDATE no_such_table SET x = 1")  # a damaged database

    first = writer.submit(settling(run_id, 0, "ok"))
    writer.wait(first)
    writer.submit(settling(run_id, 1, "ok"))
    failing = writer.submit(broken)
    writer.submit(settling(run_id, 2, "ok"))

    with pytest.raises(StateError, match="no_such_table"):
        writer.wait(failing)
    with pytest.raises(StateError):
        writer.submit(settling(run_id, 3, "ok"))  # nothing more is taken
    with pytest.raises(StateError):
        writer.close()
    # The failed write's transaction is rolled back, with what was given along with it.
    outcomes = committed(path, run_id)
    assert outcomes[0] == "ok"
    assert outcomes[1] == "planned" and outcomes[2] == "planned" and outcomes[3] == "planned"
