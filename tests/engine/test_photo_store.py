"""The snapshot's photos: migration 3 on a database of version 2, loading, and the rows
going with their person."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path

from syncd import snapshot as store
from tests.support.snapshot_rows import person


def test_a_version_2_database_gets_the_photos_table_and_keeps_its_data(tmp_path: Path) -> None:
    path = tmp_path / "syncd.db"
    engine = store.open_engine(path)
    with store.write(engine) as conn:
        store.upsert_employees(conn, [person("E1", "ann")])
    engine.dispose()
    with closing(sqlite3.connect(path)) as db:  # as syncd with schema version 2 left it
        db.execute("DROP TABLE photos")
        db.execute("ALTER TABLE employees DROP COLUMN matched_by")
        db.execute("PRAGMA user_version = 2")
        db.commit()

    engine = store.open_engine(path)

    with closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (store.SCHEMA_VERSION,)
        columns = {r[1] for r in db.execute("PRAGMA table_info(employees)")}
        assert "matched_by" in columns  # migration 3 on the way
    with store.write(engine) as conn:
        store.set_photos(conn, [("E1", "d1", "m1")])
    snapshot = store.load_snapshot(engine)
    assert set(snapshot.employees) == {"E1"}
    assert snapshot.photos == {"E1": "d1"}


def test_photo_rows_are_replaced_and_go_with_their_person(tmp_path: Path) -> None:
    engine = store.open_engine(tmp_path / "syncd.db")
    with store.write(engine) as conn:
        store.upsert_employees(conn, [person("E1", "ann"), person("E2", "bob")])
        store.set_photos(conn, [("E1", "d1", "m1"), ("E2", "d2", "m2")])
        store.set_photos(conn, [("E1", "d3", "m3")])
        # An update of the person keeps the photo; removing the person drops it.
        store.upsert_employees(conn, [{**person("E1", "ann"), "hash": "changed"}])
        store.delete_employees(conn, [("E2", "bob")])
    assert store.load_snapshot(engine).photos == {"E1": "d3"}
    with store.write(engine) as conn:
        store.forget_employees(conn, ["E1"])  # re-keyed: the new key's photo is set anew
    assert store.load_snapshot(engine).photos == {}
