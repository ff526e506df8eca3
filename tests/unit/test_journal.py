"""The journal's batch updates, on a real state database: a batch in plan order with one
outcome is written as a range, anything else row by row, and both touch exactly the rows
named."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import Engine

from syncd import snapshot as store
from syncd.snapshot import sql as store_sql
from tests.support.snapshot_rows import planned_run


@pytest.fixture
def journal(tmp_path: Path, store_url: str | None) -> tuple[Engine, int]:
    engine = store.open_engine(tmp_path / "syncd.db", store_url)  # each engine in turn
    return engine, planned_run(engine, 10)


def outcomes(engine: Engine, run_id: int) -> dict[int, tuple[str, int, int | None, str | None]]:
    with engine.connect() as conn:
        found = store_sql.run(
            conn,
            "SELECT seq, outcome, attempts, status, error FROM run_items WHERE run_id = ?",
            (run_id,),
        )
        return {r[0]: (r[1], r[2], r[3], r[4]) for r in found}


@pytest.mark.parametrize("seqs", [[2, 3, 4, 5], [2, 4, 5], [5, 3, 4], [7]], ids=str)
def test_marked_sent_are_exactly_the_batch(journal: tuple[Engine, int], seqs: list[int]) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, seqs)
        store.mark_sent(conn, run_id, [])
    found = outcomes(engine, run_id)
    assert {s for s, (o, *_) in found.items() if o == "sent"} == set(seqs)
    assert all(found[s][1] == 1 for s in seqs)  # one attempt each
    assert all(found[s] == ("planned", 0, None, None) for s in found if s not in seqs)


@pytest.mark.parametrize(
    "results",
    [
        [(3, "ok", None, None), (4, "ok", None, None), (5, "ok", None, None)],
        [(3, "ok", None, None), (5, "ok", None, None)],  # a gap: 4 is not this batch's
        [(3, "ok", None, None), (4, "failed", 400, "bad mobile"), (5, "ok", None, None)],
        [(3, "failed", 500, "down"), (4, "failed", 500, "down")],
    ],
    ids=["one outcome", "gap", "mixed", "all failed"],
)
def test_settled_are_exactly_the_answers(
    journal: tuple[Engine, int], results: list[tuple[int, str, int | None, str | None]]
) -> None:
    engine, run_id = journal
    with store.write(engine) as conn:
        store.mark_sent(conn, run_id, [3, 4, 5])
        store.settle_items(
            conn,
            run_id,
            [{"seq": s, "outcome": o, "status": st, "error": e} for s, o, st, e in results],
        )
    found = outcomes(engine, run_id)
    for seq, outcome, status, error in results:
        assert found[seq] == (outcome, 1, status, error)
    settled = {seq for seq, *_ in results}
    assert all(found[s][0] == "sent" for s in {3, 4, 5} - settled)
    assert all(found[s][0] == "planned" for s in set(found) - {3, 4, 5})


def test_a_version_4_database_indexes_only_the_items_sent(tmp_path: Path) -> None:
    path = tmp_path / "syncd.db"
    store.open_engine(path).dispose()
    with closing(sqlite3.connect(path)) as db:  # as syncd with schema version 4 left it
        db.execute("DROP INDEX ix_run_items_sent")
        db.execute("CREATE INDEX ix_run_items_outcome ON run_items (outcome)")
        db.execute("PRAGMA user_version = 4")
        db.commit()

    store.open_engine(path).dispose()

    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
        indexes = {r[1]: r[4] for r in db.execute("PRAGMA index_list(run_items)")}
        assert "ix_run_items_outcome" not in indexes
        assert indexes["ix_run_items_sent"] == 1  # partial
        plan = db.execute(
            "EXPLAIN QUERY PLAN SELECT run_id, seq FROM run_items WHERE outcome = 'sent'"
        ).fetchall()
        assert "ix_run_items_sent" in str(plan)  # crash recovery's look-up still uses it
