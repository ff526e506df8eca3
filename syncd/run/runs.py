"""Recorded runs, from the state database: reports, the run list, a person's history,
and retention.

The I/O side of ``syncd.report``: this module reads rows and hands plain values to the
pure report code. Once a run is recorded the runner applies retention and notifies
(``syncd.run.runner.after_run``): notifications read reports from here, so this module does
not call them (no import circle).
"""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.padding import Padding
from rich.text import Text
from sqlalchemy import Connection, bindparam, text
from sqlalchemy.exc import SQLAlchemyError

from syncd import clock
from syncd import report as rpt
from syncd import snapshot as store
from syncd.config import Settings
from syncd.errors import SyncdError
from syncd.logs import redact
from syncd.snapshot import IN_FLIGHT, ITEM_COLUMNS, OUTCOME

log = logging.getLogger("syncd.runs")

DAY_MS = 86_400_000
HISTORY = 30  # runs in the HTML report's chart
LATEST = "latest"


T = TypeVar("T")


class NoSuchRun(SyncdError):
    """The run asked for is not in the state database."""


# ---------------------------------------------------------------- reading runs


def resolve_run(state: store.StateStore, ref: str) -> int:
    """A run id from ``ref``: a number, or "latest"; SyncdError when there is no such run."""
    with state.read() as conn:
        if ref.strip().lower() == LATEST:
            latest = conn.execute(text("SELECT MAX(id) FROM runs")).scalar()
            if latest is None:
                raise NoSuchRun("no runs are recorded yet: run `syncd sync` first")
            return int(latest)
        if not ref.strip().isdigit():
            raise NoSuchRun(f"{ref!r} is not a run: give a run id or 'latest'")
        run_id = int(ref)
        found = conn.execute(text("SELECT 1 FROM runs WHERE id = :r"), {"r": run_id}).first()
    if found is None:
        raise NoSuchRun(f"no run {run_id} is recorded: see `syncd reports list`")
    return run_id


def load_report(
    state: store.StateStore, ref: str | int, *, failed_only: bool = False, history: int = HISTORY
) -> rpt.RunReport:
    """One run in full: its row, counts, items (or only the failed ones) and rejected rows."""
    run_id = ref if isinstance(ref, int) else resolve_run(state, ref)
    with state.read() as conn:
        row = conn.execute(text("SELECT * FROM runs WHERE id = :r"), {"r": run_id}).first()
        if row is None:
            raise NoSuchRun(f"no run {run_id} is recorded: see `syncd reports list`")
        rejected = conn.execute(
            text("SELECT * FROM rejected_rows WHERE run_id = :r ORDER BY seq"), {"r": run_id}
        )
        rejected_rows = [dict(r._mapping) for r in rejected]
        counts = _counts(conn, [run_id]).get(run_id, [])
        points = _history(conn, run_id, history)
        departments = _department_paths(conn)
    outcome = "failed" if failed_only else None
    with state.reading():
        items = state.load_items(run_id, outcome=outcome)
    return rpt.build_report(
        dict(row._mapping),
        items,
        rejected_rows,
        [_count_dict(c) for c in counts],
        history=points,
        failed_only=failed_only,
        departments=departments,
    )


def _department_paths(conn: Connection) -> dict[str, str]:
    """Source id -> name path, of the departments syncd holds now (to name them in reports)."""
    rows = conn.execute(text("SELECT source_id, name_path FROM departments WHERE name_path != ''"))
    return {str(k): str(p) for k, p in rows}


def _count_dict(count: rpt.Count) -> dict[str, Any]:
    return {"kind": count.kind, "action": count.action, "outcome": count.outcome, "n": count.n}


def _counts(conn: Connection, run_ids: Sequence[int]) -> dict[int, list[rpt.Count]]:
    """Items per run by kind, action and outcome: the truth even for runs cut short."""
    if not run_ids:
        return {}
    query = text(
        f"SELECT run_id, kind, action, {OUTCOME} AS o, COUNT(*) FROM run_items "  # noqa: S608
        "WHERE run_id IN :ids GROUP BY run_id, kind, action, o"
    ).bindparams(bindparam("ids", expanding=True))
    found: dict[int, list[rpt.Count]] = {}
    for run_id, kind, action, outcome, n in conn.execute(query, {"ids": list(run_ids)}):
        found.setdefault(int(run_id), []).append(rpt.Count(kind, action, outcome, int(n)))
    return found


def _rejected_counts(conn: Connection, run_ids: Sequence[int]) -> dict[int, int]:
    if not run_ids:
        return {}
    query = text(
        "SELECT run_id, COUNT(*) FROM rejected_rows WHERE run_id IN :ids GROUP BY run_id"
    ).bindparams(bindparam("ids", expanding=True))
    return {int(r): int(n) for r, n in conn.execute(query, {"ids": list(run_ids)})}


def _runs(
    conn: Connection,
    *,
    last: int,
    upto: int | None = None,
    failed_only: bool = False,
    mode: str | None = None,
) -> list[rpt.RunInfo]:
    """The newest ``last`` runs (up to run ``upto``; of one ``mode``: apply or dry_run)."""
    query = text(
        "SELECT id, trigger, mode, read, source, started_at, finished_at, outcome, exit_code, "
        "host, pid FROM runs WHERE (CAST(:upto AS INTEGER) IS NULL OR id <= :upto) "
        "AND (CAST(:mode AS VARCHAR) IS NULL OR mode = :mode) "
        "AND (NOT :failed_only OR outcome IN :problems) ORDER BY id DESC LIMIT :n"
    ).bindparams(bindparam("problems", expanding=True))
    params = {
        "n": last,
        "upto": upto,
        "mode": mode,
        "failed_only": failed_only,
        "problems": list(rpt.PROBLEM_OUTCOMES),
    }
    return [rpt.run_info(dict(r._mapping)) for r in conn.execute(query, params)]


def _history(conn: Connection, upto: int, limit: int) -> list[rpt.HistoryPoint]:
    # The last real runs, and the last dry runs beside them: a check every five minutes
    # must not push the real runs off the chart.
    runs = sorted(
        _runs(conn, last=limit, upto=upto, mode="apply")
        + _runs(conn, last=limit, upto=upto, mode="dry_run"),
        key=lambda r: r.id,
        reverse=True,
    )
    counts = _counts(conn, [r.id for r in runs])
    return [rpt.history_point(r, counts.get(r.id, [])) for r in reversed(runs)]


def list_runs(
    state: store.StateStore, *, last: int = 20, failed_only: bool = False, dry_runs: bool = False
) -> list[rpt.RunLine]:
    """The newest real runs (or dry runs), newest first, with totals and rejected rows."""
    mode = "dry_run" if dry_runs else "apply"
    with state.read() as conn:
        runs = _runs(conn, last=max(last, 0), failed_only=failed_only, mode=mode)
        ids = [r.id for r in runs]
        counts = _counts(conn, ids)
        rejected = _rejected_counts(conn, ids)
    return [
        rpt.RunLine(r, rpt.totals(r, counts.get(r.id, [])), rejected.get(r.id, 0)) for r in runs
    ]


# Outcomes of items that were sent: what a person's history lists (unless planned ones too).
DONE = ("ok", "failed", "recovered", "sent")


def load_person(
    state: store.StateStore, username: str, *, planned: bool = False
) -> rpt.PersonHistory:
    """Every recorded item about one person: by username, and by any source id it had.

    Only what runs sent (changed, locked, removed, or failed to), unless ``planned``: then
    also what dry runs and blocked runs only planned.
    """
    keys_query = text(
        "SELECT DISTINCT key FROM run_items WHERE kind = 'employee' AND display = :u "
        "UNION SELECT source_id FROM employees WHERE username = :u"
    )
    with state.read() as conn:
        keys = [str(k) for (k,) in conn.execute(keys_query, {"u": username})]
        query = text(
            f"SELECT {ITEM_COLUMNS}, {OUTCOME} AS outcome FROM run_items "  # noqa: S608
            "WHERE kind = 'employee' AND (display = :u OR key IN :keys) "
            f"AND (:planned OR {OUTCOME} IN :done) ORDER BY run_id, seq"
        ).bindparams(bindparam("keys", expanding=True), bindparam("done", expanding=True))
        params = {"u": username, "keys": keys, "planned": planned, "done": list(DONE)}
        items = [dict(r._mapping) for r in conn.execute(query, params)]
        run_ids = sorted({int(i["run_id"]) for i in items})
        runs = {
            int(r.id): dict(r._mapping)
            for r in conn.execute(
                text("SELECT * FROM runs WHERE id IN :ids").bindparams(
                    bindparam("ids", expanding=True)
                ),
                {"ids": run_ids},
            )
        }
        departments = _department_paths(conn)
    rows = [(runs[int(i["run_id"])], i) for i in items if int(i["run_id"]) in runs]
    return rpt.person_history(username, rows, departments)


# ---------------------------------------------------------------- retention


@dataclass(frozen=True)
class Pruned:
    runs: int
    items: int
    rejected: int


def prune(
    state: store.StateStore, keep_days: int, now_ms: int | None = None, *, dry_run: bool = False
) -> Pruned:
    """Delete runs started more than ``keep_days`` ago, with their items and rejected rows
    (``dry_run``: only count them).

    Never the latest run, never a running one, and never one whose items still wait for
    recovery (sent without an answer): the next run needs that journal.
    """
    if keep_days < 0:
        raise SyncdError(f"--keep-days must be 0 or more, not {keep_days}")
    now = clock.now_ms() if now_ms is None else now_ms
    cutoff = now - keep_days * DAY_MS
    with state.write() as conn:
        ids = [
            int(r[0])
            for r in conn.execute(
                text(
                    "SELECT id FROM runs WHERE started_at < :cutoff AND outcome != 'running' "  # noqa: S608
                    "AND id != (SELECT MAX(id) FROM runs) AND NOT EXISTS (SELECT 1 FROM "
                    f"run_items WHERE run_items.run_id = runs.id AND {IN_FLIGHT})"
                ),
                {"cutoff": cutoff},
            )
        ]
        if not ids:
            return Pruned(0, 0, 0)
        if dry_run:
            items = _count(conn, "SELECT COUNT(*) FROM run_items WHERE run_id IN :ids", ids)
            rejected = _count(conn, "SELECT COUNT(*) FROM rejected_rows WHERE run_id IN :ids", ids)
            return Pruned(len(ids), items, rejected)
        items = _delete(conn, "DELETE FROM run_items WHERE run_id IN :ids", ids)
        _delete(conn, "DELETE FROM sent_batches WHERE run_id IN :ids", ids)
        rejected = _delete(conn, "DELETE FROM rejected_rows WHERE run_id IN :ids", ids)
        runs = _delete(conn, "DELETE FROM runs WHERE id IN :ids", ids)
    return Pruned(runs, items, rejected)


def _count(conn: Connection, statement: str, ids: Sequence[int]) -> int:
    query = text(statement).bindparams(bindparam("ids", expanding=True))
    return sum(
        int(conn.execute(query, {"ids": list(ids[start : start + 500])}).scalar_one())
        for start in range(0, len(ids), 500)
    )


def _delete(conn: Connection, statement: str, ids: Sequence[int]) -> int:
    query = text(statement).bindparams(bindparam("ids", expanding=True))
    deleted = 0
    for start in range(0, len(ids), 500):  # SQLite caps the number of bound parameters
        deleted += conn.execute(query, {"ids": list(ids[start : start + 500])}).rowcount
    return deleted


def apply_retention(settings: Settings, state: store.StateStore) -> Pruned | None:
    """Prune by ``reports.keep_days``; a failure is logged, not raised (it can wait a run)."""
    try:
        pruned = prune(state, settings.reports.keep_days)
    except (SyncdError, SQLAlchemyError) as exc:
        log.warning("pruning old run reports failed: %s", redact(str(exc)))
        return None
    if pruned.runs:
        log.info(
            "pruned %d runs older than %d days (%d items, %d rejected rows)",
            pruned.runs,
            settings.reports.keep_days,
            pruned.items,
            pruned.rejected,
        )
    return pruned


# ---------------------------------------------------------------- the commands


def print_run_list(
    settings: Settings,
    console: Console,
    *,
    last: int,
    failed_only: bool,
    fmt: str = "text",
    dry_runs: bool = False,
) -> None:
    """``fmt``: text or json (the command line's Output)."""
    lines = _with_state(
        settings,
        lambda state: list_runs(state, last=last, failed_only=failed_only, dry_runs=dry_runs),
    )
    if fmt == "json":
        _print_as_is(console, rpt.render_run_list_json(lines))
        return
    if not lines:
        which = "dry runs" if dry_runs else "runs"
        console.print(f"no failed {which} recorded" if failed_only else f"no {which} recorded yet")
        return
    _print_table(console, lines)


def _with_state(
    settings: Settings, use: Callable[[store.StateStore], T], *, writes: bool = False
) -> T:
    """``use(state)`` on the state database, closed afterwards. Only a command that
    ``writes`` migrates a database of an older schema (store.open_engine)."""
    state = store.StateStore.open(settings.database, settings.database_url, migrate=writes)
    try:
        return use(state)
    finally:
        state.close()


def _check_format(fmt: str, known: Sequence[str]) -> None:
    if fmt not in known:
        hint = " (to write to a file, give --file PATH)" if "/" in fmt or "." in fmt else ""
        raise SyncdError(f"unknown output format {fmt!r}: use {', '.join(known)}{hint}")


def _print_wrapped(console: Console, rendered: str) -> None:
    """Text at a terminal: each line wrapped between words to its width, the wrapped part
    under the line's own start (a terminal would cut it mid-word at its edge)."""
    for line in rendered.splitlines():
        body = line.lstrip(" ")
        indent = len(line) - len(body)
        console.print(Padding(Text(body, overflow="fold"), (0, 0, 0, indent), expand=False))


def _print_as_is(console: Console, rendered: str) -> None:
    console.file.write(rendered)  # as rendered: no console markup, wrapping or emoji codes
    console.file.flush()


def _print_table(console: Console, lines: Sequence[rpt.RunLine]) -> None:
    """On a terminal, the columns that fit it; in a pipe or file, every column, whole."""
    if console.is_terminal:  # wrapped, unlike the console's other lines: the caption too
        console.print(rpt.run_table(lines, console.width), soft_wrap=False)
        return
    table = rpt.run_table(lines)
    wide = Console(width=10_000, no_color=True, file=io.StringIO())
    width = wide.measure(table).maximum
    buffer = io.StringIO()
    Console(file=buffer, width=width, no_color=True, color_system=None).print(table)
    console.file.write("".join(line.rstrip() + "\n" for line in buffer.getvalue().splitlines()))


def show_run(
    settings: Settings,
    console: Console,
    run: str,
    *,
    fmt: str = "text",
    failed_only: bool = False,
    output: Path | None = None,
    limit: int | None = None,
) -> None:
    """Print one run's report, or write it to the file ``output``; text lists up to
    ``limit`` changes of each action and rejected rows (None: all).

    ``console`` prints text as it is, never as markup (``syncd.cli.out``).
    """
    _check_format(fmt, tuple(rpt.RENDERERS))
    report = _with_state(settings, lambda state: load_report(state, run, failed_only=failed_only))
    rendered = rpt.render(report, fmt, limit)
    _deliver(console, rendered, output, f"run {report.run.id}: {fmt} report", fmt == "text")


def show_person(
    settings: Settings,
    console: Console,
    username: str,
    *,
    fmt: str = "text",
    planned: bool = False,
    output: Path | None = None,
) -> None:
    """Print (or write to ``output``) what the recorded runs did to one person."""
    _check_format(fmt, tuple(rpt.PERSON_RENDERERS))
    history = _with_state(settings, lambda state: load_person(state, username, planned=planned))
    rendered = rpt.PERSON_RENDERERS[fmt](history)
    _deliver(console, rendered, output, f"{rpt.shown(username)}: {fmt} history", fmt == "text")


def _deliver(
    console: Console, rendered: str, output: Path | None, what: str, text: bool = False
) -> None:
    if output is None and text and console.is_terminal:
        _print_wrapped(console, rendered)
        return
    if output is None:
        _print_as_is(console, rendered)
        return
    _write(output, rendered)
    console.print(f"{what} written to {output}")


def _write(path: Path, content: str) -> None:
    try:
        # newline="": CSV rows end in \r\n as the csv module wrote them
        with path.open("w", encoding="utf-8", newline="") as handle:
            handle.write(content)
    except OSError as exc:
        raise SyncdError(f"{path}: cannot write the report: {exc.strerror}") from exc


def prune_runs(
    settings: Settings,
    console: Console,
    *,
    keep_days: int,
    dry_run: bool = False,
    confirm: Callable[[str], bool] | None = None,
) -> None:
    """``syncd reports prune``: what it would delete (``dry_run``, or when ``confirm``
    says no), or delete it and give the file's space back."""

    def use(state: store.StateStore) -> None:
        found = prune(state, keep_days, dry_run=True)
        what = (
            f"{found.runs:,} runs started more than {keep_days:,} days ago "
            f"({found.items:,} items, {found.rejected:,} rejected rows)"
        )
        if dry_run or not found.runs:
            console.print(f"would prune {what}" if found.runs else f"pruned 0 {what[2:]}")
            return
        if confirm is not None and not confirm(f"Delete {what}?"):
            console.print("not pruned: nothing was deleted")
            return
        pruned = prune(state, keep_days)
        freed = state.compact(settings.database)
        console.print(
            f"pruned {pruned.runs:,} runs started more than {keep_days:,} days ago "
            f"({pruned.items:,} items, {pruned.rejected:,} rejected rows); "
            f"{freed / 1e6:,.1f} MB given back"
        )

    _with_state(settings, use, writes=True)
