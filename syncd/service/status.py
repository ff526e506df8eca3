"""``syncd status``: the daemon, its next run, the run lock, the last runs, and its health.

It reads what the daemon leaves behind (its lock file and its record in the state
database), so it works from any process on the host. Its exit code says whether syncd is
healthy, for a container's health check or a monitoring check: 0 healthy; 1 unhealthy:
the last real run failed or was blocked, set aside rows for a status value nobody named
(a departed person keeps their access until the settings name it: syncd.sources.set_aside)
or rows that kept it from looking for leavers,
no run succeeded (``SUCCEEDED``: ok or partial) within ``status.max_success_age_minutes``,
or the daemon's next run is long overdue; 3
not running (as an LSB init script's status): the daemon is expected and none runs, or
nothing syncs here at all (no daemon, no real run recorded).

Who syncs here, the daemon (``syncd run``) or a timer's ``syncd sync``, is told by the
newest real run: the daemon is expected when that run was the daemon's (trigger
``schedule``). A timer's set-up is healthy without a daemon, then, and a daemon's
set-up whose daemon died is not. A sync made by hand after the daemon's last run makes
a dead daemon unexpected; the success age still finds that nothing syncs any more.
Dry runs (``--dry-run``, ``--check``) are listed apart and never count for health.
"""

from __future__ import annotations

import logging
import socket
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text
from sqlalchemy import text

from syncd import snapshot as store
from syncd.clock import now_ms
from syncd.config import Settings
from syncd.errors import DaemonNotRunning, SyncdError, Unhealthy
from syncd.run.lock import FileLock, holder, lock_holder
from syncd.service.cluster import print_cluster, read_cluster
from syncd.sources.set_aside import LEAVERS_UNKNOWN, UNNAMED, leavers_unknown

run_log = logging.getLogger("syncd.run")  # what a run did, for the daemon and the shell alike

DAEMON_CURSOR = "daemon"  # JSON: pid, host, started_at, state, status, next_run, next_read
DAEMON_LOCK = "daemon.lock"
OVERDUE_SECONDS = 60  # past next run + misfire grace, an idle daemon counts as stuck
RECENT_RUNS = 5
FAILED = ("failed", "blocked")  # a last run that makes syncd unhealthy (success: SUCCEEDED)
DAEMON_TRIGGER = "schedule"  # a run the daemon started


def daemon_cursor(state_dir: Path) -> str:
    """The cursor a daemon keeps its record in: one per host and state directory, as
    several daemons may share one state store."""
    return f"{DAEMON_CURSOR}:{socket.gethostname()}:{state_dir.resolve()}"


def daemon_lock(state_dir: Path) -> FileLock:
    """Held for the daemon's lifetime: one daemon per state directory, and proof it lives
    (``daemon_holder`` reads it)."""
    return FileLock(
        state_dir / DAEMON_LOCK, f"another syncd daemon serves {state_dir} ({{holder}})"
    )


def daemon_holder(state_dir: Path) -> dict[str, Any] | None:
    """The running daemon's pid, host and start (ms), or None when no daemon holds the lock."""
    return holder(state_dir / DAEMON_LOCK)


@dataclass(frozen=True)
class Run:
    id: int
    trigger: str
    mode: str  # apply or dry_run
    read: str
    started_at: int
    finished_at: int | None
    outcome: str

    def document(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "trigger": self.trigger,
            "dry_run": self.mode == "dry_run",
            "read": self.read,
            "started_at": iso(self.started_at),
            "finished_at": iso(self.finished_at),
            "outcome": self.outcome,
        }


@dataclass
class Status:
    """What ``syncd status`` found, and the problem that makes syncd unhealthy, if any."""

    state_dir: Path
    database: Path | None  # None: no state database yet
    daemon: dict[str, Any] | None  # the daemon lock's holder: pid, host, since
    record: dict[str, Any]  # what the daemon last wrote: status, next run, reload error
    run_lock: dict[str, Any] | None
    runs: list[Run] = field(default_factory=list)  # the last real runs, newest first
    last_dry_run: Run | None = None
    last_success: int | None = None  # when the last run that succeeded finished (ms)
    first_run: int | None = None  # when the oldest real run recorded started (ms)
    problem: SyncdError | None = None
    settings_problem: str | None = None  # the settings file does not load: why
    settings_given: bool = True  # False: no --config, SYNCD_CONFIG or SYNCD_* at all
    # Known problems (values another account holds): told once, listed here, not unhealthy.
    known: list[dict[str, Any]] = field(default_factory=list)
    cluster: dict[str, Any] | None = None  # the lease and the members (syncd.service.cluster)
    # Status values nobody named, with their rows, as the last finished real run set aside.
    unnamed: dict[str, int] = field(default_factory=dict)
    # The last real run's rows that kept its read from naming leavers (set_aside), if partial.
    leavers_unknown: dict[str, Any] = field(default_factory=dict)

    @property
    def daemon_expected(self) -> bool:
        """Whether the daemon syncs here: the newest real run was the daemon's."""
        return bool(self.runs) and self.runs[0].trigger == DAEMON_TRIGGER

    def document(self) -> dict[str, Any]:
        """``syncd status --output json``: the shape README.md documents."""
        record, daemon = self.record, self.daemon
        return {
            "healthy": self.problem is None,
            "problem": str(self.problem) if self.problem is not None else None,
            "exit_code": self.problem.exit_code if self.problem is not None else 0,
            "daemon_expected": self.daemon_expected,
            "settings_problem": self.settings_problem,
            "daemon": None
            if daemon is None
            else {
                "pid": daemon.get("pid"),
                "host": daemon.get("host"),
                "started_at": iso(daemon.get("since")),
                "status": record.get("status"),
                "next_run": iso(record.get("next_run")),
                "next_read": record.get("next_read"),
                "settings_error": record.get("reload_error"),
            },
            "run_lock": None
            if self.run_lock is None
            else {
                "held_by": self.run_lock.get("purpose"),
                "pid": self.run_lock.get("pid"),
                "host": self.run_lock.get("host"),
                "since": iso(self.run_lock.get("since")),
            },
            "leadership": self.cluster,
            "last_success": iso(self.last_success),
            "runs": [r.document() for r in self.runs],
            "last_dry_run": self.last_dry_run.document() if self.last_dry_run else None,
            "known_problems": [
                {
                    "username": k["username"],
                    "source_id": k["source_id"],
                    "field": k["field"],
                    "value": k["value"],
                    "holder": k["holder"],
                    "first_run": k["first_run"],
                    "since": iso(k["first_seen"]),
                }
                for k in self.known
            ],
        }


def read_status(settings: Settings) -> Status:
    """Everything ``syncd status`` shows; reads the state database only, creates nothing."""
    found = Status(
        settings.state_dir,
        None,
        daemon_holder(settings.state_dir),
        {},
        lock_holder(settings.state_dir),
    )
    # Do not create a state database just to look at it (a PostgreSQL one is there to use).
    if settings.database_url is not None or settings.database.exists():
        found.database = settings.database
        opened = store.StateStore.open(settings.database, settings.database_url, migrate=False)
        with opened as state:
            found.record = _daemon_record(state, settings.state_dir)
            _read_runs(state, found)
            found.cluster = read_cluster(state, settings.leadership.lease_seconds)
    found.problem = _problem(settings, found, now_ms())
    return found


def _daemon_record(state: store.StateStore, state_dir: Path) -> dict[str, Any]:
    return store.json_object(state.cursor(daemon_cursor(state_dir)))


_RUNS = "SELECT id, trigger, mode, read, started_at, finished_at, outcome FROM runs"


def _read_runs(state: store.StateStore, found: Status) -> None:
    with state.read() as conn:
        rows = conn.execute(
            text(_RUNS + " WHERE mode = 'apply' ORDER BY id DESC LIMIT :n"), {"n": RECENT_RUNS}
        ).all()
        dry = conn.execute(text(_RUNS + " WHERE mode = 'dry_run' ORDER BY id DESC LIMIT 1"))
        last_dry = dry.first()
        found.last_success = store.last_success(conn)
        first = conn.execute(text("SELECT MIN(started_at) FROM runs WHERE mode = 'apply'"))
        found.first_run = first.scalar()
        found.known = store.problem_rows(conn)
    found.runs = [Run(*row) for row in rows]
    found.last_dry_run = Run(*last_dry) if last_dry is not None else None
    finished = [r for r in found.runs if r.outcome != "running"]
    if finished and finished[0].outcome == "partial":
        source = state.run_summary(finished[0].id).get("source") or {}
        found.unnamed = dict(source.get(UNNAMED) or {})
        found.leavers_unknown = dict(source.get(LEAVERS_UNKNOWN) or {})


def _problem(settings: Settings, found: Status, now: int) -> SyncdError | None:
    """Why syncd is not healthy, or None."""
    daemon, no_daemon = found.daemon, f"no syncd daemon (syncd run) serves {settings.state_dir}"
    if daemon is None and found.daemon_expected:
        newest = found.runs[0].id
        return DaemonNotRunning(f"{no_daemon}, and the last real run, {newest}, was the daemon's")
    if daemon is None and not found.runs:
        return DaemonNotRunning(f"nothing syncs here: {no_daemon}, and no real run is recorded")
    due = found.record.get("next_run") if daemon is not None else None
    late = (now - due) / 1000 if isinstance(due, int) else 0
    if found.run_lock is None and late > settings.schedule.misfire_grace_seconds + OVERDUE_SECONDS:
        return Unhealthy(
            f"the daemon's next run was due at {when(due)} and has not started: "
            "it may be stuck (systemctl restart syncd)"
        )
    last_run = _last_run_problem(found)
    if last_run is not None:
        return last_run
    max_age = settings.status.max_success_age_minutes
    # Never succeeded yet: judged from the daemon's start, or from the first real run.
    began = daemon.get("since") if daemon is not None else found.first_run
    since = max(found.last_success or 0, int(began or 0))
    if max_age and now - since > max_age * 60_000:
        latest = f"the last at {when(found.last_success)}" if found.last_success else "none yet"
        return Unhealthy(
            f"no run has succeeded for {max_age} minutes ({latest}; status.max_success_age_minutes)"
        )
    return None


def _last_run_problem(found: Status) -> SyncdError | None:
    """The last finished real run failed or was blocked, set aside rows for a status value
    nobody named, or could not look for leavers (syncd.sources.set_aside); or None."""
    finished = [r for r in found.runs if r.outcome != "running"]
    if not finished:
        return None
    last = finished[0]
    if last.outcome in FAILED:
        return Unhealthy(
            f"the last run, {last.id}, {last.outcome} at {when(last.finished_at)}: "
            f"syncd reports show {last.id}"
        )
    if found.unnamed:
        n = sum(found.unnamed.values())
        values = ", ".join(repr(v) for v in found.unnamed)
        return Unhealthy(
            f"the last run, {last.id}, set aside {n:,} row{'' if n == 1 else 's'} for a status "
            f"value nobody named ({values}): a departed person keeps their access until the "
            f"settings name it (active_values or departed_values; syncd reports show {last.id})"
        )
    if found.leavers_unknown:
        return Unhealthy(
            f"the last run, {last.id}, could not look for leavers: "
            f"{leavers_unknown(found.leavers_unknown)} (syncd reports show {last.id})"
        )
    return None


# ---------------------------------------------------------------- text


# Where the shipped units (systemd/) and the README's install put the settings.
UNITS_SETTINGS = Path("/etc/syncd/syncd.toml")


def _how_to_give() -> str:
    """What a bare ``syncd status`` should have been given, with the file that is there."""
    if UNITS_SETTINGS.is_file():
        return f"{UNITS_SETTINGS} is there: syncd status --config {UNITS_SETTINGS}"
    return (
        "syncd status --config FILE, or SYNCD_CONFIG=FILE "
        f"(the shipped units read {UNITS_SETTINGS}, which does not exist here)"
    )


def print_status(found: Status, console: Console) -> None:
    """``console`` prints text as it is, never as markup (``syncd.cli.out``).

    The problem, if any, is told once: on the health line (the exit code says the rest).
    """
    if not found.settings_given:
        console.print(Text.assemble("settings   ", ("none given: ", "yellow"), _how_to_give()))
        console.print(f"           shown: the default state directory, {found.state_dir}")
    elif found.settings_problem is not None:
        running = "the daemon runs on the settings it loaded before" if found.daemon else ""
        told = "; ".join(filter(None, [found.settings_problem, running]))
        console.print(Text.assemble("settings   ", ("BROKEN: ", "red"), told))
    _print_daemon(console, found)
    print_cluster(console, found.cluster)
    if found.database is None:
        database = found.state_dir / "syncd.db"
        console.print(f"no runs recorded yet (no state database at {database})")
        _print_health(console, found.problem)
        return
    _print_lock(console, found.run_lock)
    _print_health(console, found.problem)
    if not found.runs:
        console.print("last runs  none recorded")
    else:
        console.print("last runs")
        for run in found.runs:
            console.print("  " + _run_line(run))
    if found.last_dry_run is not None:
        console.print("last dry run")
        console.print("  " + _run_line(found.last_dry_run))
    _print_known(console, found.known)


def _print_known(console: Console, known: list[dict[str, Any]], shown: int = 10) -> None:
    """Known problems: told once by the run that found them, listed here while they last."""
    if not known:
        return
    console.print(
        f"known problems  {len(known)} (values another account holds or the platform "
        "refuses; not failing)"
    )
    for k in known[:shown]:
        holder = k["holder"] or "an account the platform did not name"
        why = f"refused ({k['refusal']})" if k.get("refusal") else f"held by {holder}"
        console.print(
            f"  {k['username']}: {k['field']} {k['value']} {why}, since run {k['first_run']}"
        )
    if len(known) > shown:
        console.print(f"  … and {len(known) - shown} more (syncd status --output json)")


def _print_health(console: Console, problem: SyncdError | None) -> None:
    console.print(
        Text.assemble("health     ", ("ok", "green") if problem is None else (str(problem), "red"))
    )


def _print_daemon(console: Console, found: Status) -> None:
    holder, record = found.daemon, found.record
    if holder is None:
        stopped = record.get("updated_at") if record.get("state") == "stopped" else None
        notes = [f"stopped {when(stopped)}"] if stopped else []
        if found.runs and not found.daemon_expected:
            last = found.runs[0]
            notes.append(f"none expected: the last real run, {last.id}, was a {last.trigger} sync")
        console.print("daemon     not running" + (f" ({'; '.join(notes)})" if notes else ""))
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


def _print_lock(console: Console, held: dict[str, Any] | None) -> None:
    if held is None:
        console.print("run lock   free")
        return
    console.print(
        f"run lock   held by {held.get('purpose', '?')}, pid {held.get('pid')} on "
        f"{held.get('host')}, since {when(held.get('since'))}"
    )


def _run_line(run: Run) -> str:
    took = f"{(run.finished_at - run.started_at) / 1000:.1f} s" if run.finished_at else "-"
    what = f"{run.trigger} {'dry run' if run.mode == 'dry_run' else run.read}"
    return f"{run.id:>5}  {when(run.started_at)}  {what:<22} {run.outcome:<12} {took}"


# ---------------------------------------------------------------- a run's failures


NAMED = 5  # people named in a failure's WARNING line (its JSON ``failed`` field: 50)


def log_failures(state: store.StateStore, run_id: int) -> None:
    """One WARNING per reason the run's items failed, with how many and who (the first
    few in the line, up to 50 in JSON's ``failed`` field; each item: DEBUG)."""
    for error, n in state.failure_groups(run_id):
        who = state.failed_displays(run_id, error, 50)
        named = ", ".join(who[:NAMED]) + (f", and {n - NAMED:,} more" if n > NAMED else "")
        run_log.warning(
            "run %d: %s %s failed: %s (%s)",
            run_id,
            f"{n:,}",
            "item" if n == 1 else "items",
            error,
            named,
            extra={"run_id": run_id, "failed": who, "count": n, "reason": error},
        )


# ---------------------------------------------------------------- times


def clock(at: datetime | None) -> str:
    """A moment as ``2026-11-23 14:08:05 +0100``: with its zone, as every time syncd shows."""
    return at.astimezone().strftime("%Y-%m-%d %H:%M:%S %z") if at is not None else "-"


def when(ms: Any) -> str:
    """A time in milliseconds, local, with its zone: ``2026-11-23 14:08:05 +0100``."""
    if not isinstance(ms, int | float) or not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


def iso(ms: Any) -> str | None:
    """A time in milliseconds as local ISO 8601 with its zone, for JSON; None when unset."""
    if not isinstance(ms, int | float) or not ms:
        return None
    return datetime.fromtimestamp(ms / 1000).astimezone().isoformat(timespec="milliseconds")
