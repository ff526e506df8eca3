"""Effective dates as last read, for the people syncd holds (syncd.plan.schedule): each
one's end date, and a start date still ahead.

Kept so that a person is locked at the end of their end date, and a hire created before
their start unlocked on the start day, even when their row is not read again (an
incremental read, a rejected row); loaded whole, as plain data, before planning. Written
after an apply, for the people syncd holds then (one made by that run included).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import Connection

from syncd.snapshot import sql


def load_dates(conn: Connection) -> tuple[dict[str, str], dict[str, str]]:
    """Source id -> ISO start date, and -> ISO end date, of the people syncd holds."""
    starts: dict[str, str] = {}
    ends: dict[str, str] = {}
    rows = sql.rows(
        conn,
        "SELECT source_id, start_date, end_date FROM effective_dates "  # noqa: S608 (constants)
        f"WHERE {sql.held('effective_dates')}",
    )
    for key, start, end in rows:
        if start:
            starts[str(key)] = str(start)
        if end:
            ends[str(key)] = str(end)
    return starts, ends


def record_dates(conn: Connection, changes: Mapping[str, tuple[str | None, str | None]]) -> None:
    """Source id -> (start date, end date) read now (None: none to keep), for those syncd
    holds; rows of people syncd no longer holds go (a source id made again later must not
    find an earlier date). In the caller's write transaction."""
    sql.bulk(conn, "DELETE FROM effective_dates WHERE source_id = ?", [(k,) for k in changes])
    rows = [(k, s, e, k) for k, (s, e) in changes.items() if s is not None or e is not None]
    sql.bulk(
        conn,
        "INSERT INTO effective_dates (source_id, start_date, end_date) SELECT ?, ?, ? "
        "WHERE EXISTS (SELECT 1 FROM employees WHERE source_id = ?)",
        rows,
    )
    conn.exec_driver_sql(
        f"DELETE FROM effective_dates WHERE NOT {sql.held('effective_dates')}"  # noqa: S608
    )
