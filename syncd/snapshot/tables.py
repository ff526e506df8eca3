"""The state database's schema version and the migrations that bring an older one up to date
(the tables themselves are declared in ``rows``)."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, text

from syncd.model import serial_no

SCHEMA_VERSION = 12
# How long a statement waits for another connection's lock (a batch's transaction, a
# backup) before the run fails with "database is locked". Token renewals never wait for it
# (``tokens``): they take turns under a lock file of their own.
BUSY_TIMEOUT_MS = 60_000
# Checkpoint the WAL every ~40 MB rather than SQLite's 4 MB: a 100,000-person first sync
# writes ~100 MB, and each checkpoint syncs the files to disk (335 fdatasync calls -> 26).
WAL_CHECKPOINT_PAGES = 10_000

# The tables added by later migrations, written out in SQL (the first ones are ``rows``'s).
KNOWN_PROBLEMS = """
CREATE TABLE IF NOT EXISTS known_problems (
    source_id VARCHAR NOT NULL,
    field VARCHAR NOT NULL,
    value VARCHAR NOT NULL,
    username VARCHAR NOT NULL,
    holder VARCHAR,
    holder_key VARCHAR,
    first_run INTEGER NOT NULL,
    first_seen BIGINT NOT NULL,
    last_run INTEGER NOT NULL,
    refusal VARCHAR,
    PRIMARY KEY (source_id, field)
)
"""

EFFECTIVE_DATES = """
CREATE TABLE IF NOT EXISTS effective_dates (
    source_id VARCHAR NOT NULL PRIMARY KEY,
    start_date VARCHAR,
    end_date VARCHAR
)
"""

DEPARTURES = """
CREATE TABLE IF NOT EXISTS departures (
    source_id VARCHAR NOT NULL PRIMARY KEY,
    why VARCHAR NOT NULL
)
"""

# The journal's marks: a batch journaled as sent is one row, the range of its items' seqs
# (a batch whose items are not one range is a row per range). An item still ``planned``
# inside a range was sent and never answered: crash recovery looks it up (``journal``).
SENT_BATCHES = """
CREATE TABLE IF NOT EXISTS sent_batches (
    run_id INTEGER NOT NULL,
    first_seq INTEGER NOT NULL,
    last_seq INTEGER NOT NULL,
    PRIMARY KEY (run_id, first_seq, last_seq)
)
"""


def _create_v1(conn: Connection) -> None:
    from sqlmodel import SQLModel

    import syncd.snapshot.rows  # noqa: F401 - declares the tables in SQLModel.metadata

    SQLModel.metadata.create_all(conn)
    conn.exec_driver_sql("CREATE INDEX IF NOT EXISTS ix_run_items_outcome ON run_items (outcome)")


def _v2_safe_serials(conn: Connection) -> None:
    """Departments whose serial_no an earlier syncd sent with '/' and the like: compared
    again at the next run, whose update writes the serial_no that is safe in a URL."""
    ids = [r[0] for r in conn.exec_driver_sql("SELECT source_id FROM departments")]
    unsafe = [{"k": k} for k in ids if serial_no(k) != k]
    if unsafe:
        conn.execute(text("UPDATE departments SET hash = '' WHERE source_id = :k"), unsafe)


def _v3_matched_by(conn: Connection) -> None:
    """employees.matched_by (a fresh database has it already: its tables are made whole)."""
    from sqlalchemy import inspect

    columns = {c["name"] for c in inspect(conn).get_columns("employees")}
    if "matched_by" not in columns:
        conn.exec_driver_sql("ALTER TABLE employees ADD COLUMN matched_by VARCHAR")


def _v4_photos(conn: Connection) -> None:
    """The photos table (a new database has it from _create_v1 already)."""
    from syncd.snapshot.rows import PhotoRow

    PhotoRow.__table__.create(conn, checkfirst=True)  # type: ignore[attr-defined]


def _v5_sent_index(conn: Connection) -> None:
    """The journal's index on outcome keeps only the items sent and not yet answered, all
    crash recovery looks up: kept whole, it was rewritten at every item's every outcome
    (about 3% of a 100,000-person first sync)."""
    conn.exec_driver_sql("DROP INDEX IF EXISTS ix_run_items_outcome")
    conn.exec_driver_sql(
        "CREATE INDEX IF NOT EXISTS ix_run_items_sent ON run_items (outcome) WHERE outcome = 'sent'"
    )


def _v6_known_problems(conn: Connection) -> None:
    """The known problems table (values another account holds: syncd.snapshot.problems)."""
    conn.exec_driver_sql(KNOWN_PROBLEMS)


def _v7_token_keys(conn: Connection) -> None:
    """Tokens are kept under a key that carries a digest of the application's secret (a
    changed secret must not go on using the old one's token): those kept under the old
    key, without it, are let go. The next call fetches a token, as after an expiry."""
    conn.execute(text("DELETE FROM tokens WHERE app NOT LIKE '%#%'"))


def _v8_leadership(conn: Connection) -> None:
    """The lease and members tables, and each run's epoch and instance (high availability:
    syncd.snapshot.leases)."""
    from syncd.snapshot.leases import create_tables

    create_tables(conn)


def _v9_effective_dates(conn: Connection) -> None:
    """The effective dates table (syncd.snapshot.dates)."""
    conn.exec_driver_sql(EFFECTIVE_DATES)


def _v10_departures(conn: Connection) -> None:
    """The departures table: ids of people without access, for the guard on access granted
    (syncd.snapshot.departures)."""
    conn.exec_driver_sql(DEPARTURES)


def _v11_refused_forms(conn: Connection) -> None:
    """known_problems.refusal: the platform's words when it refused a value for its form (a
    malformed mobile), a known problem too (a new database has the column already)."""
    from sqlalchemy import inspect

    columns = {c["name"] for c in inspect(conn).get_columns("known_problems")}
    if "refusal" not in columns:
        conn.exec_driver_sql("ALTER TABLE known_problems ADD COLUMN refusal VARCHAR")


def _v12_sent_batches(conn: Connection) -> None:
    """The journal marks a batch sent with one row of its own, not by rewriting each of its
    items (``sent_batches``); items an earlier syncd left ``sent`` are still recovered."""
    conn.exec_driver_sql(SENT_BATCHES)


MIGRATIONS: list[Callable[[Connection], None]] = [
    _create_v1,
    _v2_safe_serials,
    _v3_matched_by,
    _v4_photos,
    _v5_sent_index,
    _v6_known_problems,
    _v7_token_keys,
    _v8_leadership,
    _v9_effective_dates,
    _v10_departures,
    _v11_refused_forms,
    _v12_sent_batches,
]
assert len(MIGRATIONS) == SCHEMA_VERSION
