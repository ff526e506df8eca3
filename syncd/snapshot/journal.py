"""Runs and their items: the journal a run writes before and after each batch, and reads back."""

from __future__ import annotations

import itertools
import json
import os
import socket
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, text

from syncd.snapshot import sql
from syncd.snapshot.engine import json_object, translated, write
from syncd.snapshot.leases import RUN_HAS_ITEMS
from syncd.snapshot.lineage import next_run_id, remember_run
from syncd.snapshot.records import _ITEMS_PER_STATEMENT, _executemany

_INSERTED_COLUMNS = (
    "run_id", "seq", "kind", "key", "display", "action", "message", "before", "after",
    "outcome", "attempts",
)  # fmt: skip
# Every column of run_items but the outcome, which readers take as ``OUTCOME``.
ITEM_COLUMNS = ", ".join(
    f"run_items.{c}"
    for c in (
        "run_id", "seq", "kind", '"key"', "display", "action", "message", '"before"',
        '"after"', "status", "error", "attempts",
    )
)  # fmt: skip


def start_run(
    engine: Engine,
    *,
    trigger: str,
    mode: str,
    read: str,
    source: str,
    started_at: int,
    epoch: int | None = None,
    instance: str | None = None,
) -> int:
    """Record a run as running, by this process on this host (the instance, and the
    lease's epoch it writes under); returns its id, never one this state directory gave
    before (``lineage``)."""
    with write(engine) as conn:
        run_id = next_run_id(conn, engine)
        sql.run(
            conn,
            'INSERT INTO runs (id, "trigger", mode, read, source, started_at, outcome, pid, '
            "host, summary, epoch, instance) "
            "VALUES (?, ?, ?, ?, ?, ?, 'running', ?, ?, '{}', ?, ?)",
            (
                run_id, trigger, mode, read, source, started_at, os.getpid(),
                socket.gethostname(), epoch, instance,
            ),
        )  # fmt: skip
    remember_run(engine, run_id)
    return run_id


def finish_run(
    engine: Engine, run_id: int, *, outcome: str, exit_code: int, finished_at: int, summary: str
) -> None:
    with write(engine) as conn:
        sql.run(
            conn,
            "UPDATE runs SET finished_at = ?, outcome = ?, exit_code = ?, summary = ? WHERE id = ?",
            (finished_at, outcome, exit_code, summary, run_id),
        )


def interrupt_stale_runs(
    engine: Engine,
    now_ms: int,
    alive: Callable[[Connection, Mapping[str, Any]], bool] | None = None,
) -> list[int]:
    """Runs left 'running' by a process that died are marked interrupted (caller holds the
    lock). ``alive(conn, run)`` (the run's id, pid, host, instance) keeps those whose
    process still runs, on a store other instances share; without it every one is stale."""
    with write(engine) as conn:
        running = sql.run(
            conn, "SELECT id, pid, host, instance FROM runs WHERE outcome = 'running'"
        )
        rows = [dict(r._mapping) for r in running]
        ids = [int(r["id"]) for r in rows if alive is None or not alive(conn, r)]
        if ids:
            conn.execute(
                text(
                    "UPDATE runs SET outcome = 'interrupted', exit_code = 3, finished_at = :t "
                    "WHERE id IN :ids"
                ).bindparams(bindparam("ids", expanding=True)),
                {"t": now_ms, "ids": ids},
            )
    return ids


def insert_items(conn: Connection, run_id: int, items: Iterable[Mapping[str, Any]]) -> None:
    """Rows with seq, kind, key, display, action, message, before, after (JSON text), outcome."""
    rows = (
        (run_id, i["seq"], i["kind"], i["key"], i["display"], i["action"], i["message"],
         i["before"], i["after"], i["outcome"], 0)
        for i in items
    )  # fmt: skip
    while chunk := list(itertools.islice(rows, _ITEMS_PER_STATEMENT)):
        sql.copy(conn, "run_items", _INSERTED_COLUMNS, chunk)


# An item is in flight (sent, its answer not recorded) when it is still ``planned`` inside
# a range of ``sent_batches``; items an earlier syncd marked ``sent`` in place, too. Ranges
# may overlap: a person refused for a value another account holds is sent again, marked
# again, in the same run.
_MARKED = (
    "EXISTS (SELECT 1 FROM sent_batches b WHERE b.run_id = run_items.run_id "
    "AND run_items.seq BETWEEN b.first_seq AND b.last_seq)"
)
IN_FLIGHT = f"(run_items.outcome = 'sent' OR (run_items.outcome = 'planned' AND {_MARKED}))"
# An item's outcome as a person reads it: ``sent`` for one in flight.
OUTCOME = f"CASE WHEN {IN_FLIGHT} THEN 'sent' ELSE run_items.outcome END"
# An answer's attempts are the times its item was sent (``None``: sent and never answered,
# so at least once, as crash recovery settles an item).
_SETTLE = (
    "UPDATE run_items SET outcome = ?, status = ?, error = ?, "
    "attempts = COALESCE(?, CASE WHEN attempts > 0 THEN attempts ELSE 1 END) WHERE run_id = ? AND "
)


def _ranges(seqs: Sequence[int]) -> list[tuple[int, int]]:
    """Seqs as the fewest (first, last) ranges that hold exactly them, in order."""
    found: list[tuple[int, int]] = []
    for seq in sorted(set(seqs)):
        if found and found[-1][1] == seq - 1:
            found[-1] = (found[-1][0], seq)
        else:
            found.append((seq, seq))
    return found


def _batch(conn: Connection, seqs: Sequence[int]) -> tuple[str, tuple[Any, ...]]:
    """The condition naming exactly these items of a run, and its parameters: a range of
    seqs for a batch in plan order, else the list (one parameter on either engine)."""
    ranges = _ranges(seqs)
    if len(ranges) == 1:
        return "seq BETWEEN ? AND ?", ranges[0]
    where, listed = sql.among(conn, sorted(set(seqs)))
    return f"seq {where}", (listed,)


def mark_sent(conn: Connection, run_id: int, seqs: Sequence[int]) -> None:
    """A batch journaled as sent, before it leaves: a row per range of its seqs (one for a
    batch in plan order), never a write to each of its items."""
    sql.bulk(
        conn,
        "INSERT INTO sent_batches (run_id, first_seq, last_seq) VALUES (?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        [(run_id, first, last) for first, last in _ranges(seqs)],
    )


def unmark(conn: Connection, run_id: int, seqs: Sequence[int]) -> None:
    """A batch marked sent that never left: planned again, as every unsent item. (A batch
    sent again whole in the same run adds no mark of its own: unmarked, it takes the first
    one with it. Only people refused for a value another account holds are sent again, and
    their first answer is a refusal: nothing of them was written.)"""
    sql.bulk(
        conn,
        "DELETE FROM sent_batches WHERE run_id = ? AND first_seq = ? AND last_seq = ?",
        [(run_id, first, last) for first, last in _ranges(seqs)],
    )


def forget_answered(conn: Connection, run_id: int) -> None:
    """A run's marks whose items all have their answer: nothing is left in flight there."""
    sql.run(
        conn,
        "DELETE FROM sent_batches WHERE run_id = ? AND NOT EXISTS (SELECT 1 FROM run_items i "
        "WHERE i.run_id = sent_batches.run_id AND i.seq BETWEEN sent_batches.first_seq "
        "AND sent_batches.last_seq AND i.outcome = 'planned')",
        (run_id,),
    )


def settle_items(conn: Connection, run_id: int, results: Sequence[Mapping[str, Any]]) -> None:
    """Rows with seq, outcome (never ``planned``: ``unmark`` is for what never left),
    status, error, attempts (the times it was sent; absent: at least once): one statement
    for each answer that several items share (most often one for the batch: all ok); the
    answers given to one item alone (an error naming its value) in one executemany."""
    answers: dict[tuple[Any, ...], list[int]] = {}
    for r in results:
        answer = (r["outcome"], r.get("status"), r.get("error"), r.get("attempts"))
        answers.setdefault(answer, []).append(r["seq"])
    alone = [(*answer, run_id, seqs[0]) for answer, seqs in answers.items() if len(seqs) == 1]
    _executemany(conn, _SETTLE + "seq = ?", alone)
    for answer, seqs in answers.items():
        if len(seqs) > 1:
            where, params = _batch(conn, seqs)
            sql.run(conn, _SETTLE + where, (*answer, run_id, *params))


@translated
def journaled_after(conn: Connection, run_id: int, first: int, last: int) -> dict[int, str]:
    """The ``after`` JSON text of a run's items ``first`` to ``last`` (by seq), when set."""
    rows = sql.rows(
        conn,
        'SELECT seq, "after" FROM run_items WHERE run_id = ? AND seq BETWEEN ? AND ? '
        'AND "after" IS NOT NULL',
        (run_id, first, last),
    )
    return {int(seq): str(after) for seq, after in rows}


# A real run succeeded when it ran to its end: ok, or partial (it sent all it could; the
# items that failed are pending failures, counted apart and planned again). One sticky
# item must not make syncd look dead: ``syncd status`` and the metrics both go by this.
SUCCEEDED = ("ok", "partial")
_LAST_SUCCESS = text(
    "SELECT MAX(finished_at) FROM runs WHERE mode = 'apply' AND outcome IN :succeeded"
).bindparams(bindparam("succeeded", list(SUCCEEDED), expanding=True))


def last_success(conn: Connection) -> int | None:
    """When the last real run that succeeded (``SUCCEEDED``) finished, in ms; None: never."""
    found = conn.execute(_LAST_SUCCESS).scalar()
    return int(found) if found else None


def run_summary(engine: Engine, run_id: int) -> dict[str, Any]:
    """A run's summary as recorded ({} for a run that is gone or whose summary is damaged)."""
    with engine.connect() as conn:
        value = sql.run(conn, "SELECT summary FROM runs WHERE id = ?", (run_id,)).scalar()
    return json_object(value)


def applied_since(engine: Engine, run_id: int) -> bool:
    """Whether a run after ``run_id`` (or that run itself is gone) may have changed the
    snapshot: a real run that planned anything, sent or not."""
    with engine.connect() as conn:
        if sql.run(conn, "SELECT 1 FROM runs WHERE id = ?", (run_id,)).first() is None:
            return True
        later = sql.run(
            conn,
            "SELECT 1 FROM runs r WHERE r.id > ? AND r.mode = 'apply' "  # noqa: S608
            f"AND {RUN_HAS_ITEMS} LIMIT 1",
            (run_id,),
        )
        return later.first() is not None


def copy_rejected(engine: Engine, from_run: int, to_run: int) -> None:
    """A run's rejected rows recorded again for another run that read the same files."""
    with write(engine) as conn:
        sql.run(
            conn,
            'INSERT INTO rejected_rows (run_id, seq, kind, "where", "key", reason) '
            'SELECT ?, seq, kind, "where", "key", reason FROM rejected_rows WHERE run_id = ?',
            (to_run, from_run),
        )


_UNSETTLED_COLUMNS = 'i.run_id, i.seq, i.kind, i.key, i.display, i.action, i."before", i."after"'


def unsettled_items(engine: Engine) -> list[dict[str, Any]]:
    """Items a crashed run sent without learning the answer: planned inside a batch marked
    sent, or marked ``sent`` in place by an earlier syncd."""
    in_place = f"SELECT {_UNSETTLED_COLUMNS} FROM run_items i WHERE i.outcome = 'sent'"  # noqa: S608
    marked = (
        f"SELECT DISTINCT {_UNSETTLED_COLUMNS} FROM sent_batches b JOIN run_items i "  # noqa: S608
        "ON i.run_id = b.run_id AND i.seq BETWEEN b.first_seq AND b.last_seq "
        "WHERE i.outcome = 'planned'"
    )
    with engine.connect() as conn:
        # A run forgets its marks once their items are answered (forget_answered): marks
        # are left only by a run that stopped with batches in flight. Asked first, so that
        # the join runs only then: on PostgreSQL, before the journal's new rows are
        # analysed, the planner may scan them all for a join with no mark.
        any_marked = sql.rows(conn, "SELECT 1 FROM sent_batches LIMIT 1")
        query = f"{marked} UNION ALL {in_place}" if any_marked else in_place
        items = [dict(r._mapping) for r in sql.run(conn, query)]
        _mark_freeing(conn, items)
        return items


def _mark_freeing(conn: Connection, items: list[dict[str, Any]]) -> None:
    """Each item's ``frees``: whether it is a person's update that only frees values for
    another person in its run (``plan.unique_values``), known by the same person's own
    update that follows it in the run's plan. It writes values held back: recovery
    settles no known problem with it, as the executor does not."""
    by_run: dict[int, list[dict[str, Any]]] = {}
    for item in items:
        item["frees"] = False
        if item["kind"] == "employee" and item["action"] == "update":
            by_run.setdefault(item["run_id"], []).append(item)
    for run_id, updates in by_run.items():
        among, keys = sql.among(conn, {i["key"] for i in updates})
        last = dict(
            sql.rows(
                conn,
                "SELECT key, MAX(seq) FROM run_items WHERE run_id = ? AND kind = 'employee' "  # noqa: S608
                "AND action = 'update' AND key " + among + " GROUP BY key",
                (run_id, keys),
            )
        )
        for item in updates:
            item["frees"] = item["seq"] < last[item["key"]]


def insert_rejected(engine: Engine, run_id: int, rows: Sequence[Mapping[str, Any]]) -> None:
    """Rows with kind, where, key, reason."""
    if rows:
        with write(engine) as conn:
            _executemany(
                conn,
                'INSERT INTO rejected_rows (run_id, seq, kind, "where", "key", reason) '
                "VALUES (?, ?, ?, ?, ?, ?)",
                [
                    (run_id, i, r["kind"], r["where"], r.get("key"), r["reason"])
                    for i, r in enumerate(rows)
                ],
            )


def failure_groups(engine: Engine, run_id: int, limit: int = 10) -> list[tuple[str, int]]:
    """A run's failed items grouped by error text, most frequent first."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT COALESCE(error, 'unknown error'), COUNT(*) AS n FROM run_items "
                "WHERE run_id = :r AND outcome = 'failed' GROUP BY 1 ORDER BY n DESC, 1 LIMIT :l"
            ),
            {"r": run_id, "l": limit},
        )
        return [(str(r[0]), int(r[1])) for r in rows]


def failed_displays(engine: Engine, run_id: int, error: str, limit: int) -> list[str]:
    """Who (or what) failed with this error text in a run: the first ``limit``, in plan order."""
    with engine.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT display FROM run_items WHERE run_id = :r AND outcome = 'failed' "
                "AND COALESCE(error, 'unknown error') = :e ORDER BY seq LIMIT :l"
            ),
            {"r": run_id, "e": error, "l": limit},
        )
        return [str(r[0]) for r in rows]


def load_items(
    engine: Engine, run_id: int, *, limit: int | None = None, outcome: str | None = None
) -> list[dict[str, Any]]:
    """A run's items in plan order, as stored (messages were written before anything was
    sent), those in flight as ``sent``."""
    query = f"SELECT {ITEM_COLUMNS}, {OUTCOME} AS outcome FROM run_items WHERE run_id = :r"  # noqa: S608
    if outcome is not None:
        query += f" AND {OUTCOME} = :o"
    query += " ORDER BY seq"
    if limit is not None:
        query += " LIMIT :l"
    with engine.connect() as conn:
        rows = conn.execute(text(query), {"r": run_id, "o": outcome, "l": limit})
        return [dict(r._mapping) for r in rows]


def set_summary(conn: Connection, run_id: int, summary: Mapping[str, Any]) -> None:
    conn.execute(
        text("UPDATE runs SET summary = :s WHERE id = :r"),
        {"s": json.dumps(summary, ensure_ascii=False), "r": run_id},
    )
