"""Dry runs in the run history: recorded like real runs, kept for a shorter time.

``syncd sync --dry-run`` and ``--check`` record a run each, with its whole plan (mode
``dry_run`` in the runs table): a monitoring check every five minutes would otherwise
fill the history and the database. They are kept ``reports.dry_run_keep_days``; real
runs ``reports.keep_days``. ``syncd status`` and the metrics leave them out.
"""

from __future__ import annotations

import logging

from sqlalchemy import text

from syncd import clock
from syncd.snapshot import StateStore

log = logging.getLogger("syncd.dry_runs")

DAY_MS = 86_400_000
# Finished dry runs started before the cutoff; never the latest run of all.
_OLD_DRY_RUNS = (
    "SELECT id FROM runs WHERE mode = 'dry_run' AND outcome != 'running' "
    "AND started_at < :cutoff AND id != (SELECT MAX(id) FROM runs)"
)
# Their items and rejected rows first, while the runs still say which they are.
_DELETES = tuple(
    text(statement + " IN (" + _OLD_DRY_RUNS + ")")
    for statement in (
        "DELETE FROM run_items WHERE run_id",
        "DELETE FROM rejected_rows WHERE run_id",
        "DELETE FROM runs WHERE id",
    )
)


def prune_dry_runs(state: StateStore, keep_days: int, now_ms: int | None = None) -> int:
    """Delete dry runs started more than ``keep_days`` ago, with their items and rejected
    rows; returns how many runs went."""
    now = clock.now_ms() if now_ms is None else now_ms
    cutoff = {"cutoff": now - keep_days * DAY_MS}
    with state.write() as conn:
        deleted = [conn.execute(statement, cutoff).rowcount for statement in _DELETES]
    runs = int(deleted[-1])
    if runs:
        log.info("pruned %d dry runs older than %d days", runs, keep_days)
    return runs
