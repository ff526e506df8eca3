"""The departures table (syncd.snapshot.departures), on both engines: ids only, kept across
runs for the guard on access granted, and made by one migration step from schema 9."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from syncd import snapshot as store
from syncd.snapshot import SCHEMA_VERSION, sql
from syncd.snapshot.departures import load_departures


def test_departures_are_kept_let_go_of_and_taken_back_by_their_ids(
    tmp_path: Path, store_url: str | None
) -> None:
    engine = store.open_engine(tmp_path / "syncd.db", store_url)
    try:
        with store.write(engine) as conn:  # syncd holds e1 (active) and e2
            sql.bulk(
                conn,
                "INSERT INTO employees (source_id, username, fields, hash, adopted, locked) "
                "VALUES (?, ?, '{}', '', ?, ?)",
                [("e1", "one", False, False), ("e2", "two", False, True)],
            )
        state = store.StateStore(engine)
        state.record_applied(None, departed=["x1", "x2", "e2"], let_go=["e3", "e2"])
        with engine.connect() as conn:
            # e2 is still held: not kept as removed (it is departed, as read).
            assert load_departures(conn) == {
                "x1": "departed",
                "x2": "departed",
                "e2": "departed",
                "e3": "removed",
            }
        # x1 read active but not held (its create failed): kept; e2 read active and held: gone.
        state.record_applied(None, departed=["e3"], returned=["x1", "e2"])
        with engine.connect() as conn:
            assert load_departures(conn) == {"x1": "departed", "x2": "departed", "e3": "removed"}
        # Let go of while keeping their access (deleted on the platform, the row rejected):
        # e4 kept so; e3 stays removed (the stronger word); e1 is still held: not kept.
        state.record_applied(None, deleted=["e4", "e3", "e1"])
        snapshot = store.load_snapshot(engine, everyone=False)
        assert snapshot.departures == {
            "x1": "departed",
            "x2": "departed",
            "e3": "removed",
            "e4": "deleted",
        }
    finally:
        engine.dispose()


def test_a_state_database_of_schema_9_gets_the_departures_table(
    tmp_path: Path, store_url: str | None
) -> None:
    engine = store.open_engine(tmp_path / "syncd.db", store_url)
    with store.write(engine) as conn:  # as syncd before departures left it
        conn.execute(text("DROP TABLE departures"))
        if store_url is None:
            conn.exec_driver_sql("PRAGMA user_version = 9")
        else:
            conn.execute(text("UPDATE syncd_schema SET version = 9"))
    engine.dispose()
    assert SCHEMA_VERSION >= 10
    engine = store.open_engine(tmp_path / "syncd.db", store_url)
    try:
        store.StateStore(engine).record_applied(None, departed=["x1"])
        with engine.connect() as conn:
            assert load_departures(conn) == {"x1": "departed"}
    finally:
        engine.dispose()
