"""Schema step 10: known_problems.refusal (a value the platform refuses for its form),
added to a database of schema 9 with its known problems kept; both engines."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from syncd import snapshot as store
from syncd.plan import KnownProblem
from syncd.snapshot.problems import load_problems
from syncd.snapshot.sql import is_postgresql


def test_a_schema_9_database_gains_the_refusal_column_and_keeps_its_problems(
    tmp_path: Path, store_url: str | None
) -> None:
    database = tmp_path / "state" / "syncd.db"
    engine = store.open_engine(database, store_url)
    with store.write(engine) as conn:  # as schema 9 left it: no refusal column
        conn.exec_driver_sql("ALTER TABLE known_problems DROP COLUMN refusal")
        conn.exec_driver_sql(
            "INSERT INTO employees (source_id, username, employee_id, fields, hash, adopted, "
            "locked) VALUES ('E9', 'gus', 7, '{}', 'h', false, false)"
        )
        conn.exec_driver_sql(
            "INSERT INTO known_problems (source_id, field, value, username, holder, "
            "holder_key, first_run, first_seen, last_run) "
            "VALUES ('E9', 'mobile', '139', 'gus', 'outsider', NULL, 1, 0, 1)"
        )
        if is_postgresql(conn):
            conn.execute(text("UPDATE syncd_schema SET version = 9"))
        else:
            conn.exec_driver_sql("PRAGMA user_version = 9")
    engine.dispose()

    engine = store.open_engine(database, store_url)  # migrated
    try:
        with engine.connect() as conn:
            assert load_problems(conn) == {
                "E9": (KnownProblem("E9", "mobile", "139", "outsider", None, None),)
            }
        with store.write(engine) as conn:
            refused = KnownProblem("E9", "email", "bob@", refusal="invalid email: bob@")
            assert store.record_problems(conn, 2, 5, [(refused, "gus")]) == [refused]
        with engine.connect() as conn:
            assert load_problems(conn)["E9"] == (
                refused,
                KnownProblem("E9", "mobile", "139", "outsider", None, None),
            )
    finally:
        engine.dispose()
