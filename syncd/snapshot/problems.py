"""Known problems: values the platform refused for a person because another account holds
them, or for their form (see syncd.plan.unique_values). One row per person and field: the
value the source gives, who holds it (or the platform's words refusing its form), and the
run that first found it (a problem is told in that run only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection

from syncd.plan import KnownProblem
from syncd.snapshot import sql

_COLUMNS = (
    "source_id, field, value, username, holder, holder_key, first_run, first_seen, last_run, "
    "refusal"
)
_INSERT = (
    f"INSERT INTO known_problems ({_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?) "  # noqa: S608 (constants)
    "ON CONFLICT (source_id, field) DO UPDATE SET value = excluded.value, "
    "username = excluded.username, holder = excluded.holder, holder_key = excluded.holder_key, "
    "first_run = excluded.first_run, first_seen = excluded.first_seen, "
    "last_run = excluded.last_run, refusal = excluded.refusal"
)
_PROBLEM = "source_id, field, value, holder, holder_key, refusal"  # a KnownProblem's columns
_ROWS = (
    f"SELECT {_COLUMNS} FROM known_problems "  # noqa: S608 (constants)
    f"WHERE {sql.held('known_problems')} ORDER BY first_seen, source_id"
)


def load_problems(conn: Connection) -> dict[str, tuple[KnownProblem, ...]]:
    """Every known problem, by the person's source id; those of people syncd no longer
    holds are left out (and deleted at the next write)."""
    found: dict[str, list[KnownProblem]] = {}
    rows = sql.rows(
        conn,
        f"SELECT {_PROBLEM} FROM known_problems "  # noqa: S608 (constants)
        f"WHERE {sql.held('known_problems')} ORDER BY source_id, field",
    )
    for row in rows:
        found.setdefault(row[0], []).append(KnownProblem(*row))
    return {k: tuple(v) for k, v in found.items()}


def record_problems(
    conn: Connection, run_id: int, now: int, problems: Sequence[tuple[KnownProblem, str]]
) -> list[KnownProblem]:
    """Record (problem, username) pairs found by run ``run_id``; the new ones are returned:
    a problem is new unless the same value was refused for the same person before (then it
    keeps when it was first found, and the holder recorded: a value passed on is followed
    before planning, ``syncd.run.known_problems.follow``, not by the run that meets it again)."""
    new: list[KnownProblem] = []
    for problem, username in problems:
        before = sql.run(
            conn,
            "SELECT value, holder FROM known_problems WHERE source_id = ? AND field = ?",
            (problem.source_id, problem.field),
        ).first()
        if before is not None and before[0] == problem.value:
            sql.run(
                conn,
                "UPDATE known_problems SET last_run = ?, username = ? "
                "WHERE source_id = ? AND field = ?",
                (run_id, username, problem.source_id, problem.field),
            )
            if before[1] == problem.holder:  # the holder's source id, as of this run
                sql.run(
                    conn,
                    "UPDATE known_problems SET holder_key = ? WHERE source_id = ? AND field = ?",
                    (problem.holder_key, problem.source_id, problem.field),
                )
            continue
        new.append(problem)
        sql.run(
            conn,
            _INSERT,
            (
                problem.source_id,
                problem.field,
                problem.value,
                username,
                problem.holder,
                problem.holder_key,
                run_id,
                now,
                run_id,
                problem.refusal,
            ),
        )
    return new


def move_problems(conn: Connection, moved: Sequence[KnownProblem]) -> list[KnownProblem]:
    """Record the accounts that hold these problems' values now (each problem's holder),
    with their source id when syncd holds the account; the problems as recorded. The
    problem is the same one (told once): when it was first found stays."""
    owned = source_ids(conn, [p.holder for p in moved if p.holder])
    recorded = [p._replace(holder_key=owned.get(p.holder or "")) for p in moved]
    sql.run(
        conn,
        "UPDATE known_problems SET holder = ?, holder_key = ? WHERE source_id = ? AND field = ?",
        [(p.holder, p.holder_key, p.source_id, p.field) for p in recorded],
    )
    return recorded


def resolve_problems(conn: Connection, solved: Iterable[tuple[str, str]]) -> None:
    """(source id, field) pairs written with the value at last, or no longer wanted."""
    pairs = list(solved)
    if pairs:
        sql.run(conn, "DELETE FROM known_problems WHERE source_id = ? AND field = ?", pairs)


def forget_gone(conn: Connection) -> None:
    """Problems of people syncd no longer holds (removed, forgotten)."""
    sql.run(
        conn,
        f"DELETE FROM known_problems WHERE NOT {sql.held('known_problems')}",  # noqa: S608
    )


def problem_rows(conn: Connection) -> list[dict[str, Any]]:
    """Every known problem of a person syncd holds, oldest first (status, reports)."""
    rows = sql.run(conn, _ROWS)
    return [dict(r._mapping) for r in rows]


def source_ids(conn: Connection, usernames: Sequence[str]) -> dict[str, str]:
    """Username -> source id, of these usernames that syncd holds."""
    found: dict[str, str] = {}
    for username in dict.fromkeys(usernames):
        row = sql.run(
            conn, "SELECT source_id FROM employees WHERE username = ?", (username,)
        ).first()
        if row is not None:
            found[username] = str(row[0])
    return found


def untold(conn: Connection, run_id: int) -> list[tuple[KnownProblem, str]]:
    """Problems found by a run that was killed or stopped before it could tell them: now
    told by run ``run_id``, which takes them as its own."""
    rows = sql.run(
        conn,
        f"SELECT {_PROBLEM}, username FROM known_problems "  # noqa: S608 (constants)
        "WHERE first_run != ? AND first_run IN (SELECT id FROM runs WHERE outcome = "
        f"'interrupted') AND {sql.held('known_problems')}",
        (run_id,),
    ).all()
    found = [(KnownProblem(*row[:6]), str(row[6])) for row in rows]
    if found:
        sql.run(
            conn,
            "UPDATE known_problems SET first_run = ? WHERE source_id = ? AND field = ?",
            [(run_id, p.source_id, p.field) for p, _ in found],
        )
    return found
