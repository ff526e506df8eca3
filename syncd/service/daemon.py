"""``syncd run``: sync on a schedule until stopped, as a systemd service or in a container.

- One run at a time on a host: every run takes the run lock that ``syncd sync`` takes
  from the shell. A scheduled run that finds it held is skipped, with the holder logged;
  the next tick tries again. A second daemon on the same state directory refuses to
  start (``daemon.lock``, held for the daemon's lifetime; ``syncd status`` reads it).
- LDAP sources read incrementally on the regular schedule and fully on ``full_cron``:
  only a full read finds leavers. Every CSV run is a full read. The first run, at
  start, is a full read. A full read that could not run (another run in progress, or
  the lock held) is made by the next run instead.
- SIGTERM/SIGINT: no new runs; the current one stops sending between batches and is
  recorded as interrupted, within ``stop_timeout_seconds``; exit 0. A second signal
  exits at once: the run's journal lets the next run resolve what was in flight.
- SIGHUP reloads the settings: a broken file is reported and the old settings kept.
- Several daemons sharing one state store (docs/ha.md): the one holding the lease
  (``leadership``) syncs; the others stand by, planning dry on the schedule, and the
  first to take the lease once it expires runs at once.
- systemd notify protocol: READY=1, WATCHDOG=1 while the main loop and the scheduler
  live, STATUS= (last outcome, next run), STOPPING=1. The same state goes to the state
  database, for ``syncd status``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import random
import select
import signal
import socket
import threading
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.base import BaseTrigger
from apscheduler.triggers.date import DateTrigger
from apscheduler.triggers.interval import IntervalTrigger
from sqlalchemy.exc import SQLAlchemyError

from syncd import snapshot as store
from syncd.clock import now_ms
from syncd.config import Settings, load_settings, log_format_hint
from syncd.config.cron import cron_trigger
from syncd.errors import ConfigError, LockHeld, SyncdError
from syncd.logs import (
    LogProgress,
    add_log_fields,
    journal_prefix,
    log_context,
    register_secret,
    setup_logging,
)
from syncd.run.leadership import LEADER, Lease, request_seconds
from syncd.run.lock import FileLock
from syncd.run.runner import RunRequest, RunResult, run_sync
from syncd.service.metrics import RunMetrics, write_textfile
from syncd.service.sd_notify import Notifier, start_watchdog, watchdog_interval
from syncd.service.status import clock, daemon_cursor, daemon_lock, log_failures

log = logging.getLogger("syncd.daemon")

Read = Literal["full", "incremental"]

BEAT_SECONDS = 1.0  # how often the main loop shows it is alive
# Handed to the main loop as a signal is (no signal has number 0): publish the status.
PUBLISH = 0


def serve(config_path: Path | None) -> int:
    """Run the daemon until a signal stops it; returns the exit code."""
    # Until the settings are loaded, the format they ask for: a broken file is told in it.
    setup_logging(fmt=log_format_hint(config_path))
    try:
        daemon = Daemon.start(config_path)
    except SyncdError as exc:
        log.error("syncd daemon cannot start: %s", exc)
        return exc.exit_code
    return daemon.run_until_stopped()


def load(config_path: Path | None) -> Settings:
    return load_settings(config_path, warn=log.warning)


def use(settings: Settings) -> None:
    """Make these settings' logging and secret redaction current."""
    for secret in settings.secret_values():
        register_secret(secret)
    setup_logging(settings.log_level, settings.log_format)


# ---------------------------------------------------------------- the daemon


class Daemon:
    """The scheduler and its runs, and what it tells systemd, the state database and metrics."""

    def __init__(
        self,
        config_path: Path | None,
        settings: Settings,
        state: store.StateStore,
        lock: FileLock,
        metrics: RunMetrics | None,
        lease: Lease,
    ) -> None:
        self.config_path = config_path
        self.settings = settings
        self.state = state  # the state database: this process's one StateStore
        self.lock = lock
        self.metrics = metrics
        self.lease = lease  # held: this daemon syncs; else it stands by and plans dry
        lease.on_change = self._on_lease
        self.notify = Notifier.from_environment()
        self.scheduler = BackgroundScheduler(daemon=True)
        self.started_at = now_ms()
        self.stop_run = threading.Event()  # the current run stops between batches when set
        # A standby's dry run ends at once when set: the lease was taken, a real run is due.
        self.abandon_dry_run = threading.Event()
        self.stopping = False
        self.busy = threading.Lock()  # held while a scheduled run is under way
        self.flags = threading.Lock()  # guards full_pending
        self.full_pending = False
        self.activity: str | None = None  # "run in progress ..." while one is
        self.last = "no run yet"
        self.reload_error: str | None = None
        self._publish_lock = threading.Lock()
        self._beat = time.monotonic()
        self._beat_seconds = BEAT_SECONDS
        self._stop_signals = 0
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_write.setblocking(False)

    @classmethod
    def start(cls, config_path: Path | None) -> Daemon:
        """Settings valid, state database open, daemon lock held, metrics served: or raise."""
        settings = load(config_path)
        use(settings)
        state = store.StateStore.open(settings.database, settings.database_url)
        lock = daemon_lock(settings.state_dir)
        lock.acquire()
        lease = Lease.for_settings(state, settings, LEADER)
        try:
            lease.claim()
            metrics = None
            if settings.metrics.enabled:
                metrics = RunMetrics()
                metrics.recall(state)  # the last run and success survive a restart
                metrics.serve(settings.metrics.host, settings.metrics.port)
        except SyncdError:
            lease.close()
            lock.release()
            raise
        return cls(config_path, settings, state, lock, metrics, lease)

    # ------------------------------------------------------------ life cycle

    def run_until_stopped(self) -> int:
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._on_signal)
        self.scheduler.start(paused=True)
        self._schedule(first=True)
        self.notify.send("READY=1", f"STATUS=started; {self._next_text()}")
        self.scheduler.resume()
        log.info(
            "syncd daemon started (pid %d, state in %s); %s",
            os.getpid(),
            self.settings.state_dir,
            self._next_text(),
        )
        self._on_lease(self.lease.held, start=True)
        self.lease.start()
        self._publish()
        interval = watchdog_interval()
        if interval is not None and self.notify.enabled:
            self._beat_seconds = min(BEAT_SECONDS, interval)
            start_watchdog(self.notify, interval, self._healthy)
        return self._main_loop()

    def _healthy(self) -> bool:
        """The main loop beats, and the scheduler's thread lives (the watchdog asks)."""
        alive = time.monotonic() - self._beat < 3 * self._beat_seconds
        thread = getattr(self.scheduler, "_thread", None)  # BackgroundScheduler's own thread
        scheduling = self.stopping or (thread is not None and thread.is_alive())
        return alive and scheduling

    def _main_loop(self) -> int:
        while True:
            self._beat = time.monotonic()
            ready, _, _ = select.select([self._wake_read], [], [], self._beat_seconds)
            if not ready:
                continue
            for signum in self._wake_read.recv(64):
                if signum == PUBLISH:
                    self._publish()
                elif signum == signal.SIGHUP:
                    self._reload()
                else:
                    return self._shutdown(signum)

    def _on_signal(self, signum: int, _frame: object) -> None:
        # Runs between two bytecodes of the main thread, maybe inside a lock it holds:
        # take no lock here (logging does), only hand the signal to the main loop.
        if signum != signal.SIGHUP:
            self._stop_signals += 1
            if self._stop_signals > 1:
                self._emergency_line("second stop signal: exiting at once")
                os._exit(128 + signum)
        with contextlib.suppress(BlockingIOError):  # full: the main loop has plenty to read
            self._wake_write.send(bytes([signum]))

    def _emergency_line(self, message: str) -> None:
        """One log line written without the logging module's locks."""
        line = f"syncd.daemon: {message}"
        if self.settings.log_format == "json":
            stamp = datetime.now().astimezone().isoformat(timespec="milliseconds")
            entry = {"time": stamp, "level": "warning", "logger": __name__, "message": message}
            line = json.dumps(entry)
        os.write(2, (journal_prefix(logging.WARNING) + line + "\n").encode())

    def _shutdown(self, signum: int) -> int:
        self.stopping = True
        timeout = self.settings.schedule.stop_timeout_seconds
        log.info("%s: stopping (a run in progress stops after its batch in flight)", _name(signum))
        self.notify.send("STOPPING=1", "STATUS=stopping")
        self.scheduler.shutdown(wait=False)
        self.stop_run.set()
        self.abandon_dry_run.set()
        if not self._wait_idle(timeout):
            log.warning(
                "the run did not stop within %d s (schedule.stop_timeout_seconds): exiting "
                "anyway; the next run resolves what it left in flight",
                timeout,
            )
            # Recorded if the store answers within a renewal period: a store that stopped
            # answering without a reset (the run stuck in it is why it did not stop)
            # must not keep the daemon from exiting.
            recording = threading.Thread(
                target=self._record,
                kwargs={"state": "stopped", "status": "stopped; a run was abandoned"},
                name="last-status",
                daemon=True,
            )
            recording.start()
            recording.join(self.settings.leadership.lease_seconds / 3)
            logging.shutdown()
            os._exit(0)  # the run's thread cannot be joined: leave without waiting for it
        self._close()
        log.info("syncd daemon stopped")
        return 0

    def _wait_idle(self, timeout: float) -> bool:
        """Wait for the current run to end, still showing the watchdog that we are alive."""
        deadline = time.monotonic() + timeout
        while True:
            self._beat = time.monotonic()
            remaining = deadline - self._beat
            if self.busy.acquire(timeout=max(0.0, min(remaining, self._beat_seconds))):
                self.busy.release()
                return True
            if remaining <= 0:
                return False

    def _close(self) -> None:
        self._record(state="stopped", status="stopped", next_run=None)
        self.lease.close()  # a standby takes it at its next try
        self.lock.release()
        if self.metrics is not None:
            self.metrics.close()
        self.notify.close()
        self.state.close()

    # ------------------------------------------------------------ settings and schedule

    def _reload(self) -> None:
        """SIGHUP: new settings, or the old ones kept; the schedule moves only if it changed."""
        log.info("SIGHUP: reloading the settings")
        # systemd (253+) waits for READY=1 after RELOADING=1; the time tells it which reload.
        monotonic_usec = time.clock_gettime_ns(time.CLOCK_MONOTONIC) // 1000
        self.notify.send("RELOADING=1", f"MONOTONIC_USEC={monotonic_usec}")
        try:
            settings = load(self.config_path)
            self._check_reloadable(settings)
        except SyncdError as exc:
            self.reload_error = f"settings reload failed, running on the previous settings: {exc}"
            log.error("%s", self.reload_error)
        else:
            use(settings)
            self.lease.margin = self.lease.drift + request_seconds(settings)
            before, self.settings, self.reload_error = self.settings, settings, None
            if _timing(before) != _timing(settings):
                self._schedule(first=False)
            log.info("settings reloaded; %s", self._next_text())
        self._publish()
        self.notify.send("READY=1")

    def _check_reloadable(self, new: Settings) -> None:
        old = self.settings
        for name in ("state_dir", "metrics", "leadership"):
            if getattr(new, name) != getattr(old, name):
                raise ConfigError(f"{name} changed: restart syncd for that (reload cannot)")

    def _schedule(self, *, first: bool) -> None:
        """Add (or replace) the jobs: the first run if asked, the regular runs, the full reads."""
        s = self.settings.schedule
        options: dict[str, Any] = {
            "coalesce": True,
            "max_instances": 1,
            "misfire_grace_time": s.misfire_grace_seconds,
            "replace_existing": True,
        }
        if first:
            at = datetime.now().astimezone() + timedelta(
                seconds=random.uniform(0, s.jitter_seconds)
            )
            self._add("start", DateTrigger(run_date=at), "full", options)
        ldap = self.settings.source is not None and self.settings.source.kind == "ldap"
        regular: BaseTrigger
        if s.cron:
            regular = cron_trigger(s.cron, jitter=s.jitter_seconds)
        else:
            seconds = s.interval.total_seconds()
            regular = IntervalTrigger(seconds=seconds, jitter=s.jitter_seconds or None)
        self._add("regular", regular, "incremental" if ldap else "full", options)
        if ldap:
            self._add("full", cron_trigger(s.full_cron, jitter=s.jitter_seconds), "full", options)
        elif self.scheduler.get_job("full") is not None:
            self.scheduler.remove_job("full")

    def _add(self, job_id: str, trigger: BaseTrigger, read: Read, options: dict[str, Any]) -> None:
        name = f"{job_id} ({read} read)"
        self.scheduler.add_job(self._tick, trigger, args=[read], id=job_id, name=name, **options)

    # ------------------------------------------------------------ runs

    def _tick(self, read: Read) -> None:
        """A job fired: run now, unless a run is under way (a full read then comes next)."""
        if not self.busy.acquire(blocking=False):
            if read == "full":
                with self.flags:
                    self.full_pending = True
            log.info("a run is still in progress: this %s read is left to the next run", read)
            return
        try:
            self._run_while_due(read)
        finally:
            self.busy.release()

    def _run_while_due(self, read: Read) -> None:
        while not self.stopping:
            with self.flags:
                read = "full" if self.full_pending else read
                self.full_pending = False
            ran = self._run_once(read)
            with self.flags:
                if not ran and read == "full":
                    self.full_pending = True  # the lock was held: the next tick reads fully
                again = ran and self.full_pending
            if not again:
                return

    def _run_once(self, read: Read) -> bool:
        """One scheduled run (a dry one standing by); False when the run lock was held."""
        self.abandon_dry_run.clear()  # before the lease is read: a takeover after it sets it
        leading = self.lease.held
        doing = "run" if leading else "standby dry run"
        self.activity = f"{doing} in progress since {clock(datetime.now())} ({read} read)"
        self._publish()
        ran = True
        try:
            with log_context():
                result = run_sync(
                    self.settings,
                    RunRequest(
                        dry_run=not leading,
                        read=read,
                        trigger="schedule" if leading else "standby",
                    ),
                    state=self.state,
                    progress=LogProgress(log),
                    stop=self.stop_run if leading else self.abandon_dry_run,
                    on_planned=lambda planned: add_log_fields(run_id=planned.run_id),
                    lease=self.lease,
                )
            self._observe(result)
        except LockHeld as exc:
            ran = False
            self.last = f"run skipped at {clock(datetime.now())}: {exc}"
            log.warning("scheduled %s read skipped: %s", read, exc)
            if self.metrics is not None:
                self.metrics.skipped.inc()
        except SyncdError as exc:  # could not start: state database, settings
            self.last = f"run could not start at {clock(datetime.now())}: {exc}"
            log.error("scheduled %s read could not start: %s", read, exc)
        except Exception:  # a bug: keep the schedule, say so loudly
            self.last = f"run crashed at {clock(datetime.now())} (see the log)"
            log.exception("scheduled %s read crashed", read)
        finally:
            self.activity = None
            self._publish()
        return ran

    def _observe(self, result: RunResult) -> None:
        self.lease.record_plan(result)
        if result.dry_run:  # standing by: what it would send, for syncd status
            planned = len(result.plan.changes) if result.plan is not None else 0
            self.last = f"standing by; dry run {result.run_id} planned {planned} changes"
            log.info("%s (%s)", self.last, result.outcome)
            return
        summary = self.state.run_summary(result.run_id)
        counts = result.applied.counts if result.applied is not None else {}
        applied = sum(n for (_, _, outcome), n in counts.items() if outcome == "ok")
        failed = sum(n for (_, _, outcome), n in counts.items() if outcome == "failed")
        read = (result.source or {}).get("read", "full")
        took = float(summary.get("duration_ms") or 0) / 1000
        self.last = (
            f"last run {result.run_id} {result.outcome} at {clock(datetime.now())} "
            f"({read} read, {applied} applied, {failed} failed)"
        )
        log_failures(self.state, result.run_id)
        level = logging.INFO if result.outcome == "ok" else logging.WARNING
        log.log(
            level,
            "run %d %s (%s read): %d applied, %d failed, in %.1f s",
            result.run_id,
            result.outcome,
            read,
            applied,
            failed,
            took,
            extra={"run_id": result.run_id},
        )
        if self.metrics is not None:
            self.metrics.observe(result.outcome, result.finished_at or now_ms(), summary, counts)
        if self.settings.metrics.textfile is not None:
            try:
                write_textfile(self.state, self.settings.metrics.textfile)
            except SyncdError as exc:
                log.warning("%s", exc)

    # ------------------------------------------------------------ telling the world

    def _next_run(self) -> tuple[datetime | None, str | None]:
        if self.stopping:
            return None, None
        jobs = [j for j in self.scheduler.get_jobs() if getattr(j, "next_run_time", None)]
        if not jobs:
            return None, None
        job = min(jobs, key=lambda j: j.next_run_time)
        return job.next_run_time, str(job.args[0])

    def _next_text(self) -> str:
        at, read = self._next_run()
        return f"next run {clock(at)} ({read} read)" if at else "no run scheduled"

    def _publish(self) -> None:
        """Tell systemd, the state database and the metrics what the daemon does next."""
        with self._publish_lock:
            at, read = self._next_run()
            parts = [self.reload_error, self.activity or self.last, self._next_text()]
            status = "; ".join(p for p in parts if p)
            self.notify.send(f"STATUS={status}")
            next_ms = int(at.timestamp() * 1000) if at else None
            self._record(state="running", status=status, next_run=next_ms, next_read=read)
            if self.metrics is not None and at is not None:
                self.metrics.next_run.set(at.timestamp())

    def _record(self, **values: Any) -> None:
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_at": self.started_at,
            "reload_error": self.reload_error,
            "updated_at": now_ms(),
            **values,
        }
        try:
            with self.state.transaction() as tx:
                cursor = daemon_cursor(self.settings.state_dir)
                tx.set_cursor(cursor, json.dumps(record, ensure_ascii=False))
        # A busy database, or a server restarting, must not stop the schedule.
        except (SQLAlchemyError, SyncdError) as exc:
            log.warning("could not record the daemon's state: %s", exc)

    def _on_lease(self, held: bool, start: bool = False) -> None:
        """The lease taken or lost (from its thread): metrics, and a run at once when taken.
        The status is written by the main loop, never here: a write to the state database
        waits for its write lock, and the lease thread must never wait behind a write
        (it would miss its renewal, and leadership would flap)."""
        if self.metrics is not None:
            self.metrics.leader.set(1 if held else 0)
            self.metrics.epoch.set(self.lease.epoch or self.lease.observed_epoch)
        if start:
            log.info("%s", "leading: this daemon syncs" if held else "standing by: another leads")
        elif held and not self.stopping:  # taken over: sync now, a full read
            self.abandon_dry_run.set()  # a standby dry run under way: it ends at once
            at = datetime.now().astimezone()
            self._add("takeover", DateTrigger(run_date=at), "full", {"replace_existing": True})
        if not start:
            with contextlib.suppress(BlockingIOError):  # full: a publish is on its way
                self._wake_write.send(bytes([PUBLISH]))


def _timing(settings: Settings) -> tuple[Any, ...]:
    """What the jobs' triggers are made from: a reload that keeps it keeps the next run."""
    return (settings.schedule, settings.source.kind if settings.source is not None else "joined")


def _name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"
