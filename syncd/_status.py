"""``syncd status``: the daemon, its next run, the run lock and the last runs.

It reads what the daemon leaves behind (its lock file and its record in the state
database), so it works from any process on the host. Its exit code says whether the
daemon is healthy, as an LSB init script's status does: 0 running and on schedule, 3
not running, 1 running but its next run is long overdue (the container healthcheck).
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from sqlalchemy import Engine, text

from syncd import snapshot as store
from syncd.config import Settings
from syncd.errors import DaemonNotRunning, DaemonStuck
from syncd.lock import holder
from syncd.runner import lock_holder, now_ms
from syncd.runs import read_with, reading

DAEMON_CURSOR = "daemon"  # JSON: pid, host, started_at, state, status, next_run, next_read
DAEMON_LOCK = "daemon.lock"
OVERDUE_SECONDS = 60  # past next run + misfire grace, an idle daemon counts as stuck
RECENT_RUNS = 5


def daemon_holder(state_dir: Path) -> dict[str, Any] | None:
    """The running daemon's pid, host and start (ms), or None when no daemon holds the lock."""
    return holder(state_dir / DAEMON_LOCK)


def print_status(settings: Settings, console: Console) -> None:
    """The daemon, its next run, the run lock and the last runs; raises when it is not healthy.

    ``console`` prints text as it is, never as markup (``syncd.cli.out``).
    """
    holder = daemon_holder(settings.state_dir)
    if not settings.database.exists():  # do not create a state database just to look at it
        _print_daemon(console, holder, {})
        console.print(f"no runs recorded yet (no state database at {settings.database})")
        _check_health(settings, holder, {})
        return
    engine = store.open_engine(settings.database)
    try:
        record = _daemon_record(engine)
        _print_daemon(console, holder, record)
        _print_lock(console, settings.state_dir)
        _print_runs(console, engine)
    finally:
        engine.dispose()
    _check_health(settings, holder, record)


def _daemon_record(engine: Engine) -> dict[str, Any]:
    try:
        stored = read_with(engine, lambda: store.get_cursor(engine, DAEMON_CURSOR))
        record: dict[str, Any] = json.loads(stored or "{}")
    except ValueError:
        return {}
    return record


def _print_daemon(console: Console, holder: dict[str, Any] | None, record: dict[str, Any]) -> None:
    if holder is None:
        stopped = record.get("updated_at") if record.get("state") == "stopped" else None
        console.print("daemon     not running" + (f" (stopped {when(stopped)})" if stopped else ""))
        return
    console.print(
        f"daemon     running, pid {holder.get('pid')} on {holder.get('host')}, "
        f"started {when(holder.get('since'))}"
    )
    if record.get("status"):
        console.print(f"status     {record['status']}")
    if record.get("next_run"):
        console.print(f"next run   {when(record['next_run'])} ({record.get('next_read')} read)")
    if record.get("reload_error"):
        console.print(f"settings   {record['reload_error']}")


def _print_lock(console: Console, state_dir: Path) -> None:
    held = lock_holder(state_dir)
    if held is None:
        console.print("run lock   free")
        return
    console.print(
        f"run lock   held by {held.get('purpose', '?')}, pid {held.get('pid')} on "
        f"{held.get('host')}, since {when(held.get('since'))}"
    )


def _print_runs(console: Console, engine: Engine) -> None:
    with reading(engine) as conn:
        rows = conn.execute(
            text(
                "SELECT id, trigger, mode, read, started_at, finished_at, outcome FROM runs "
                "ORDER BY id DESC LIMIT :n"
            ),
            {"n": RECENT_RUNS},
        ).all()
    if not rows:
        console.print("last runs  none recorded")
        return
    console.print("last runs")
    for run_id, trigger, mode, read, started, finished, outcome in rows:
        took = f"{(finished - started) / 1000:.1f} s" if finished else "-"
        what = f"{trigger} {'dry run' if mode == 'dry_run' else read}"
        console.print(f"  {run_id:>5}  {when(started)}  {what:<22} {outcome:<12} {took}")


def _check_health(
    settings: Settings, holder: dict[str, Any] | None, record: dict[str, Any]
) -> None:
    """Exit 3 when no daemon runs, 1 when its next run is long overdue and nothing runs."""
    if holder is None:
        raise DaemonNotRunning(f"no syncd daemon (syncd run) serves {settings.state_dir}")
    due = record.get("next_run")
    if not isinstance(due, int) or lock_holder(settings.state_dir) is not None:
        return
    late = (now_ms() - due) / 1000
    if late > settings.schedule.misfire_grace_seconds + OVERDUE_SECONDS:
        raise DaemonStuck(
            f"the daemon's next run was due at {when(due)} and has not started: "
            "it may be stuck (systemctl restart syncd)"
        )


def clock(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%d %H:%M:%S") if at is not None else "-"


def when(ms: Any) -> str:
    if not isinstance(ms, int | float) or not ms:
        return "-"
    return clock(datetime.fromtimestamp(ms / 1000))
