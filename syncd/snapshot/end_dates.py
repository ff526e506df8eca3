"""End dates: the last end date read for each person syncd holds (syncd.plan.schedule).

Kept so that a person is locked at the end of their end date even when their row is not
read again; loaded whole, as plain data, before planning. Written after an apply, for the
people syncd holds then (one made by that run included).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from sqlalchemy import Connection, Engine

from syncd.snapshot.engine import translated, write

TABLE = """
CREATE TABLE IF NOT EXISTS end_dates (
    source_id VARCHAR NOT NULL PRIMARY KEY,
    end_date VARCHAR NOT NULL
)
"""


def create_table(conn: Connection) -> None:
    conn.exec_driver_sql(TABLE)


def load_end_dates(raw: sqlite3.Connection) -> dict[str, str]:
    """Source id -> ISO end date, of the people syncd holds."""
    rows = raw.execute(
        "SELECT source_id, end_date FROM end_dates "
        "WHERE source_id IN (SELECT source_id FROM employees)"
    )
    return {str(k): str(d) for k, d in rows}


@translated
def record_end_dates(engine: Engine, changes: Mapping[str, str | None]) -> None:
    """Source id -> the end date read now (None: none any more), for those syncd holds;
    rows of people syncd no longer holds go (a source id made again later must not find
    an earlier end date)."""
    with write(engine) as conn:
        keys = [(k,) for k in changes]
        if keys:
            conn.exec_driver_sql("DELETE FROM end_dates WHERE source_id = ?", keys)
        rows = [(k, d, k) for k, d in changes.items() if d is not None]
        if rows:
            conn.exec_driver_sql(
                "INSERT INTO end_dates (source_id, end_date) SELECT ?, ? "
                "WHERE EXISTS (SELECT 1 FROM employees WHERE source_id = ?)",
                rows,
            )
        conn.exec_driver_sql(
            "DELETE FROM end_dates WHERE source_id NOT IN (SELECT source_id FROM employees)"
        )
