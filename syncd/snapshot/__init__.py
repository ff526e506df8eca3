"""The state database: what syncd pushed, the runs it made, its cursors and the shared token.

One SQLite file in the state directory, in WAL mode, shared by the daemon and every
shell command on the host (``sqlite``); or a PostgreSQL database named by
``database_url``, shared by every syncd that names it (``postgres``). Tables are declared
with SQLModel; reads and writes go through SQL statements on SQLAlchemy Core connections,
one transaction per batch (the ORM is ~10x slower at 100,000 rows). The schema version
lives in ``PRAGMA user_version`` (PostgreSQL: the table ``syncd_schema``);
``MIGRATIONS[n]`` takes a database from version n to n+1.

The package's rooms: ``rows`` (the tables, imported only to create or migrate them),
``tables`` (the schema version and migrations), ``engine`` (opening, write transactions,
cursors), ``sql`` (statements for both engines, the drivers' fast paths), ``sqlite`` and
``postgres`` (each engine's own), ``tokens``, ``records`` (the snapshot's records),
``planning`` (what a plan reads, as plain values), ``journal`` (runs and their items);
``store``: ``StateStore``, the one owner of all of it in a process, which callers outside
the package hold; ``transaction``: the write transaction it hands out
(``StateStore.transaction()``), whose methods are what a run writes.
"""

from __future__ import annotations

from syncd.snapshot.engine import (
    backup,
    compact,
    describe,
    get_cursor,
    json_object,
    open_engine,
    set_cursor,
    write,
    write_apart,
)
from syncd.snapshot.journal import (
    IN_FLIGHT,
    ITEM_COLUMNS,
    OUTCOME,
    SUCCEEDED,
    applied_since,
    copy_rejected,
    failed_displays,
    failure_groups,
    finish_run,
    insert_items,
    insert_rejected,
    interrupt_stale_runs,
    journaled_after,
    last_success,
    load_items,
    mark_sent,
    run_summary,
    set_summary,
    settle_items,
    start_run,
    unsettled_items,
)
from syncd.snapshot.planning import (
    load_snapshot,
    people_for,
    weighed_fields,
    with_fields,
    with_history,
    with_people,
    written_fields,
)
from syncd.snapshot.problems import (
    forget_gone,
    move_problems,
    problem_rows,
    record_problems,
    resolve_problems,
    source_ids,
    untold,
)
from syncd.snapshot.records import (
    FieldLookup,
    Held,
    PlacedLookup,
    SyncedEmployees,
    by_username,
    delete_departments,
    delete_employees,
    forget_employees,
    holding,
    set_department_paths,
    set_locked,
    set_photos,
    set_written,
    upsert_departments,
    upsert_employees,
    usernames,
    written,
)
from syncd.snapshot.store import StateStore
from syncd.snapshot.tables import (
    BUSY_TIMEOUT_MS,
    MIGRATIONS,
    SCHEMA_VERSION,
    WAL_CHECKPOINT_PAGES,
)
from syncd.snapshot.tokens import CachedToken, TokenStore
from syncd.snapshot.transaction import Transaction

__all__ = [
    "BUSY_TIMEOUT_MS",
    "IN_FLIGHT",
    "ITEM_COLUMNS",
    "MIGRATIONS",
    "OUTCOME",
    "SCHEMA_VERSION",
    "SUCCEEDED",
    "WAL_CHECKPOINT_PAGES",
    "CachedToken",
    "FieldLookup",
    "Held",
    "PlacedLookup",
    "StateStore",
    "SyncedEmployees",
    "TokenStore",
    "Transaction",
    "applied_since",
    "backup",
    "by_username",
    "compact",
    "copy_rejected",
    "delete_departments",
    "delete_employees",
    "describe",
    "failed_displays",
    "failure_groups",
    "finish_run",
    "forget_employees",
    "forget_gone",
    "get_cursor",
    "holding",
    "insert_items",
    "insert_rejected",
    "interrupt_stale_runs",
    "journaled_after",
    "json_object",
    "last_success",
    "load_items",
    "load_snapshot",
    "mark_sent",
    "move_problems",
    "open_engine",
    "people_for",
    "problem_rows",
    "record_problems",
    "resolve_problems",
    "run_summary",
    "set_cursor",
    "set_department_paths",
    "set_locked",
    "set_photos",
    "set_summary",
    "set_written",
    "settle_items",
    "source_ids",
    "start_run",
    "unsettled_items",
    "untold",
    "upsert_departments",
    "upsert_employees",
    "usernames",
    "weighed_fields",
    "with_fields",
    "with_history",
    "with_people",
    "write",
    "write_apart",
    "written",
    "written_fields",
]
