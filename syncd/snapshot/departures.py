"""Departures: the source ids of people who had no access when syncd last knew of them, so
that a run giving them an account again is counted by the guard on access granted
(``syncd.plan.guards``), whether or not syncd holds them now.

Ids only, never a person's data: ``departed`` for an id a read called departed (most of
them never synced: a departed person is not created), ``removed`` for one whose account
syncd removed or let go of (a leaver's grace period ended, an account deleted on the
platform while departed), ``deleted`` for one syncd held active whose account was deleted
on the platform while their row was rejected: not gone, so the account made once the row
is read counts as a wiped platform's do (not unless beside a leaver), whichever run makes
it. An id leaves the table once a run that passed the guards gave its person an account
they hold (read active, held by syncd). Written after a run was
applied: a blocked or dry run changes nothing here, so a status column that turns everyone
active keeps being counted until an admin lets one reviewed run through.
"""

from __future__ import annotations

from collections.abc import Collection

from sqlalchemy import Connection

from syncd.plan.values import DELETED_HELD, DEPARTED  # held active; read departed
from syncd.snapshot import sql

REMOVED = "removed"  # syncd removed their account, or let go of it


def load_departures(conn: Connection) -> dict[str, str]:
    """Source id -> why they had no access (DEPARTED or REMOVED)."""
    return {str(k): str(why) for k, why in sql.rows(conn, "SELECT source_id, why FROM departures")}


def record_departures(
    conn: Connection,
    departed: Collection[str],
    returned: Collection[str],
    let_go: Collection[str],
    deleted: Collection[str] = (),
) -> None:
    """After an applied run: ``departed``, ids its read called departed (an id already kept as
    removed stays so); ``let_go``, ids whose account it removed or let go of (kept as removed
    once syncd no longer holds them); ``deleted``, ids it let go of while they kept their
    access (kept so unless kept already); ``returned``, ids its read called active (gone
    from the table once syncd holds them: the run gave them their account, past the
    guards). In the caller's write transaction."""
    sql.bulk(
        conn,
        "INSERT INTO departures (source_id, why) VALUES (?, ?) ON CONFLICT (source_id) DO NOTHING",
        [(k, DEPARTED) for k in departed],
    )
    sql.bulk(
        conn,
        "INSERT INTO departures (source_id, why) SELECT ?, ? "
        "WHERE NOT EXISTS (SELECT 1 FROM employees WHERE source_id = ?) "
        "ON CONFLICT (source_id) DO UPDATE SET why = excluded.why",
        [(k, REMOVED, k) for k in let_go],
    )
    sql.bulk(
        conn,
        "INSERT INTO departures (source_id, why) SELECT ?, ? "
        "WHERE NOT EXISTS (SELECT 1 FROM employees WHERE source_id = ?) "
        "ON CONFLICT (source_id) DO NOTHING",
        [(k, DELETED_HELD, k) for k in deleted],
    )
    sql.bulk(
        conn,
        "DELETE FROM departures WHERE source_id = ? "
        "AND EXISTS (SELECT 1 FROM employees WHERE source_id = ?)",
        [(k, k) for k in returned],
    )
