"""Who writes to the platform when several syncd share one state store (docs/ha.md).

A lease row in the store (``snapshot.leases``), not a session advisory lock: a process
paused (SIGSTOP, a VM frozen, a long GC) keeps its database connection, and with it an
advisory lock, for as long as the server does not time the session out, so a paused
leader would keep the lock and wake up still believing it leads; a lease simply
expires, by the store's clock, and a standby takes it. The price is a renewal every
third of the lease, on a thread of its own, and the fence below.

- ``Lease``: this process's claim. The daemon contends for it for its whole life (a
  standby tries every third of the lease and runs at once when it gets it); a shell sync
  takes it for its run, or borrows the lease of the daemon that serves the same state
  directory on this host (their run lock keeps them apart), or stops with LeaseHeld.
- ``Turn``: one run's right to write: the epoch it is stamped with in the journal and
  the fence, ``may_send()``, which the executor asks before every batch. It says no, for
  good, once (a) this host's monotonic clock is past the last successful renewal's start
  plus the lease minus a margin (after a pause it has passed at once), or (b) the store
  no longer names this instance and epoch as the live holder.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, text
from sqlalchemy.exc import SQLAlchemyError

from syncd.config.service import drift_seconds
from syncd.errors import Fenced, LeaseHeld, StateError, SyncdError
from syncd.run.lock import holder as lock_file_holder
from syncd.snapshot import StateStore, leases
from syncd.snapshot.lease_store import LeaseStore
from syncd.snapshot.leases import Claimant, Holder

if TYPE_CHECKING:
    from syncd.config import Settings
    from syncd.plan import Plan

log = logging.getLogger("syncd.leadership")

STALE_AFTER_LEASES = 3  # a member unseen for this many leases is taken for gone


LEADER = "leader"  # a daemon's role while it holds the lease
SHELL = "shell"  # a command's (syncd sync, state rebuild ...), holding it or not


def machine_id() -> str | None:
    """This boot of this machine and this pid namespace: a holder with the same one whose
    pid is gone has died (None where it cannot be known: then only the lease's expiry
    frees its lease)."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        namespace = os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None
    return f"{boot}:{namespace}"


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def claimant(settings: Settings, role: str) -> Claimant:
    host, pid = socket.gethostname(), os.getpid()
    return Claimant(
        instance=f"{host}/{pid}/{leases.PROCESS}",
        host=host,
        pid=pid,
        machine=machine_id(),
        place=str(settings.state_dir.resolve()),
        role=role,
        lease_ms=settings.leadership.lease_seconds * 1000,
    )


def who(held: Holder) -> str:
    """'the daemon (leader), pid 42 on host-b, since 2026-11-26 10:02:00 +0000 (epoch 3)'."""
    since = _when(held.acquired_at)
    role = {LEADER: "the daemon", SHELL: "a shell sync"}.get(held.role or "", held.role or "?")
    return f"{role}, pid {held.pid} on {held.host}, since {since} (epoch {held.epoch})"


def _when(ms: int | None) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000).astimezone().strftime("%Y-%m-%d %H:%M:%S %z")


# ---------------------------------------------------------------- the lease


class Lease:
    """This process's claim on the lease, renewed on a thread of its own.

    ``contend``: also take the lease when it is free (a daemon); without it, only what
    ``claim`` took is renewed (a shell sync). ``on_change(held)`` is called from the
    renewing thread when the lease is taken or lost: it must not write to the state
    database (the daemon hands such work to its main loop).

    The lease is read and written through ``LeaseStore``, never through the state
    database's write lock: no write of this process's run can hold a renewal back.
    ``request_s``: how long one request to the platform may take (``platform.timeout``);
    the local deadline a batch leaves before is the lease less that, less the drift
    margin, so a request that leaves in time is answered (or abandoned) before any other
    instance can take the lease.
    """

    def __init__(
        self,
        state: StateStore,
        me: Claimant,
        *,
        role_waiting: str,
        contend: bool,
        on_change: Callable[[bool], None] | None = None,
        request_s: float = 0.0,
    ) -> None:
        self.state = state
        self.store = state.leases  # the lease's own connections, the state store's
        self.me = me
        self.role_held = me.role
        self.role_waiting = role_waiting
        self.contend = contend
        self.on_change = on_change
        self.lease_s = me.lease_ms / 1000
        self.period = self.lease_s / 3
        # Clock drift and scheduling between a check and the request leaving, plus one
        # request's timeout: what a batch that leaves at the deadline may still take.
        self.drift = drift_seconds(self.lease_s)
        self.margin = self.drift + request_s
        self.held = False
        self.epoch: int | None = None
        self.observed_epoch = 0  # the store's epoch as last seen (metrics)
        self.deadline = 0.0  # monotonic: the lease is surely still ours before it
        self._mutex = threading.Lock()  # one claim at a time
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self._trouble: str | None = None  # the store's last failure, said once

    @classmethod
    def for_settings(
        cls,
        state: StateStore,
        settings: Settings,
        role: str,
        on_change: Callable[[bool], None] | None = None,
    ) -> Lease:
        """This process's lease, by its settings: a daemon's (``role`` LEADER: it contends
        for a free lease and stands by while another instance holds it) or a command's
        (SHELL: it takes a free lease, or borrows its daemon's, and never stands by)."""
        daemon = role == LEADER
        return cls(
            state,
            claimant(settings, role),
            role_waiting="standby" if daemon else SHELL,
            contend=daemon,
            on_change=on_change,
            request_s=request_seconds(settings),
        )

    # ------------------------------------------------------------ claiming

    def claim(self, *, take: bool = True) -> bool:
        """One try: renew the lease if held, take it if ``take`` and it is free (or its
        holder on this host, of this installation, died), and say this member is alive.
        Whether it is held now; a store that cannot be reached leaves it as it was."""
        with self._mutex:
            started = time.monotonic()
            was = self.held
            try:
                # Not behind the write lock: a leader frozen holding it must not keep
                # a standby from taking the lease once it expires.
                with self.store.write(int(self.lease_s * 1000 / 3)) as conn:
                    got, former = self._claim(conn, take or was)
                    leases.join(conn, replace_role(self.me, self._role(got)))
            except (SQLAlchemyError, SyncdError) as exc:
                if self._trouble is None:
                    log.warning("the lease cannot be renewed or taken: %s", exc)
                self._trouble = str(exc)
                return self.held
            if self._trouble is not None:
                log.info("the state store answers again")
                self._trouble = None
            if got is not None:
                self.deadline = started + self.lease_s - self.margin
            self.held = got is not None
            self.epoch = got.epoch if got is not None else None
            if former is not None:
                self._end_sessions(former)
        if was != self.held:
            self._told(got)
        return self.held

    def _end_sessions(self, former: Holder) -> None:
        """A takeover is real: the former holder's sessions on the state database end (a
        leader frozen inside a transaction must not keep the write lock from this one)."""
        assert former.holder is not None
        try:
            ended = self.store.end_sessions(former.holder)
        except (SQLAlchemyError, SyncdError) as exc:
            log.warning(
                "the former holder's sessions (pid %s on %s) could not be ended; a frozen one "
                "keeps the write lock until the server's timeouts end it: %s",
                former.pid, former.host, exc,
            )  # fmt: skip
            return
        if ended:
            log.warning(
                "ended %d session(s) of the former holder, pid %s on %s (epoch %d): what they "
                "had under way rolled back",
                ended, former.pid, former.host, former.epoch,
            )  # fmt: skip

    def _claim(self, conn: Connection, take: bool) -> tuple[Holder | None, Holder | None]:
        """The lease if this instance holds it now, and the holder it was taken from (None:
        not taken from another)."""
        current = leases.holder(conn)
        if current is not None:
            self.observed_epoch = current.epoch
        if not take:
            return None, None
        dead = None
        if current is not None and current.live and current.holder != self.me.instance:
            dead = current.holder if self._died(current) else None
        got = leases.acquire(conn, self.me, dead)
        if got is None:
            return None, None
        self.observed_epoch = got.epoch
        if current is not None and dead is not None:
            log.warning("the lease's holder, pid %s here, died: taken over", current.pid)
        taken = current is not None and current.holder not in (None, self.me.instance)
        return got, current if taken else None

    def _died(self, held: Holder) -> bool:
        """A holder of this installation (state directory) on this machine whose process is gone."""
        return (
            self.me.machine is not None
            and held.machine == self.me.machine
            and held.place == self.me.place
            and held.pid is not None
            and not pid_alive(held.pid)
        )

    def _role(self, got: Holder | None) -> str:
        return self.role_held if got is not None else self.role_waiting

    def _told(self, got: Holder | None) -> None:
        if got is not None:
            log.info(
                "took the lease (epoch %d): this instance (pid %d) writes to the platform",
                got.epoch,
                self.me.pid,
            )
        else:
            log.warning("lost the lease: another instance writes to the platform now")
        if self.on_change is not None:
            self.on_change(self.held)

    def start(self) -> None:
        """Renew (and, contending, try to take) the lease every third of it, until ``close``."""
        self._thread = threading.Thread(target=self._renew, name="lease", daemon=True)
        self._thread.start()

    def _renew(self) -> None:
        while not self._stopped.wait(self.period):
            self.claim(take=self.contend)

    def close(self) -> None:
        """Stop renewing; let the lease go (it expires now) and leave the members.

        Waits a renewal period at most for each: a store that stops answering without
        closing the connection (a server frozen, a network dropping packets) must not
        hold a stopping process for hours. The lease then expires by itself."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(self.period)
        letting_go = threading.Thread(target=self._let_go, name="lease-close", daemon=True)
        letting_go.start()
        letting_go.join(self.period)
        if letting_go.is_alive():
            log.warning(
                "the state store did not answer within %.0f s: the lease is not let go "
                "(it expires by itself)",
                self.period,
            )
        self.held = False

    def _let_go(self) -> None:
        if not self._mutex.acquire(timeout=self.period):  # a claim stuck on the store
            return
        try:
            with self.store.write(int(self.period * 1000)) as conn:
                if self.held and self.epoch is not None:
                    leases.release(conn, self.me.instance, self.epoch)
                leases.leave(conn, self.me.instance)
        except (SQLAlchemyError, SyncdError) as exc:
            log.warning("the lease could not be let go (it expires by itself): %s", exc)
        finally:
            self.held = False
            self._mutex.release()
        self.store.close()

    # ------------------------------------------------------------ runs

    def turn(self) -> Turn:
        """The right to write for one run, under the epoch held now (LeaseHeld if none)."""
        with self._mutex:
            if not self.held or self.epoch is None:
                raise LeaseHeld("this instance does not hold the lease")
            return Turn(
                self.me.instance, self.epoch, check=self._check(self.epoch), store=self.store
            )

    def _check(self, epoch: int) -> Callable[[], str | None]:
        """The local fence: no I/O (the store's part is in every write's commit)."""

        def check() -> str | None:
            late = time.monotonic() - self.deadline
            if late >= 0:
                return (
                    f"the lease (epoch {epoch}) has less than {self.margin:.1f} s left by this "
                    f"host's clock ({late:.1f} s past its deadline) without a renewal (the "
                    "process was paused, or the state store could not be reached)"
                )
            if self.epoch != epoch:
                return f"the lease was lost (epoch {epoch})"
            return None

        return check

    def alive(self) -> Callable[[Connection, Mapping[str, Any]], bool]:
        """Whether a run recorded 'running' is still under way, by its instance (store.
        interrupt_stale_runs): its process is a member seen lately, and not found dead here."""

        def alive(conn: Connection, run: Mapping[str, Any]) -> bool:
            instance = run.get("instance")
            if instance is None or instance == self.me.instance:
                return False
            with self.store.read() as own:
                member = leases.last_seen(own, instance)
            if member is None:
                return False
            pid, machine, seen, at = member
            if machine is not None and machine == self.me.machine and not pid_alive(pid):
                return False
            return seen > at - STALE_AFTER_LEASES * self.me.lease_ms

        return alive

    def may_recover(self) -> bool:
        """Whether this process may resolve what killed runs left sent: it holds the lease,
        or (a shell's dry run) the lease is free or this state directory's daemon's on this
        host. A standing-by daemon never does: the one that takes the lease will."""
        if self.held:
            return True
        if self.contend:
            return False
        try:
            current = self.store.holder()
        except (SQLAlchemyError, SyncdError):
            return False
        return current is None or not current.live or self._borrowable(current)

    def _borrowable(self, held: Holder) -> bool:
        """The live lease of the daemon serving this state directory on this host."""
        if held.place != self.me.place or held.host != self.me.host or held.role != LEADER:
            return False
        daemon = lock_file_holder(Path(self.me.place or ".") / "daemon.lock")
        return daemon is not None and daemon.get("pid") == held.pid

    def borrow(self) -> Turn | None:
        """A turn under the live lease of this state directory's daemon (a shell sync next
        to it: their run lock keeps them apart), or None."""
        current = self.store.holder()
        if current is None or not current.live or not self._borrowable(current):
            return None
        assert current.holder is not None
        holder, epoch = current.holder, current.epoch
        return Turn(
            holder, epoch, check=lambda: _store_says(self.store, holder, epoch), store=self.store
        )

    def record_plan(self, result: Any) -> None:
        """The digest and counts of a run's plan, in this member's row (for ``syncd status``)."""
        the_plan = getattr(result, "plan", None)
        if the_plan is None:
            return
        digest, counts = plan_digest(the_plan)
        try:
            with self.state.read() as conn:  # a read: never the write lock
                started, finished = conn.execute(
                    text("SELECT started_at, finished_at FROM runs WHERE id = :r"),
                    {"r": result.run_id},
                ).one()
                basis = leases.plan_basis(conn, result.run_id, int(started), int(finished or 0))
            with self.store.write(int(self.lease_s * 1000 / 3)) as conn:
                leases.record_plan(
                    conn,
                    self.me.instance,
                    run_id=result.run_id,
                    basis=basis,
                    digest=digest,
                    counts=counts,
                )
        except (SQLAlchemyError, SyncdError) as exc:
            log.warning("could not record the plan's digest: %s", exc)


def replace_role(me: Claimant, role: str) -> Claimant:
    return dataclasses.replace(me, role=role)


def _store_says(store: LeaseStore, instance: str, epoch: int) -> str | None:
    """Why the store no longer names ``instance`` and ``epoch`` the live holder, or None."""
    try:
        current = store.holder()
    except (SQLAlchemyError, SyncdError) as exc:
        return f"the state store cannot be read to check the lease: {exc}"
    if current is not None and current.holder is not None and current.holder != instance:
        return f"the lease (epoch {epoch}) was taken over by {who(current)}"
    return leases.not_held(current, instance, epoch)


class Turn:
    """One run's right to write: its epoch, and the fence.

    The fence has two parts. In the store: every write transaction of the run (the
    journal writer's, which commits each batch's sent mark) checks, before its commit,
    that the lease still names this instance and epoch (``fence``): a batch leaves only
    after that commit. Locally: ``may_send``, asked after the commit and again before
    every attempt of every request that writes (retries and token renewals included),
    says no once the local monotonic deadline has passed (no I/O)."""

    def __init__(
        self,
        instance: str | None,
        epoch: int | None,
        check: Callable[[], str | None],
        store: LeaseStore | None = None,
    ) -> None:
        self.instance = instance
        self.epoch = epoch
        self._check = check
        self._store = store
        self._fenced: str | None = None
        self._lock = threading.Lock()

    def fence(self, conn: Connection) -> None:
        """In a write transaction of the run, before its commit: errors.Fenced (the
        transaction rolls back) unless the store names this turn's instance and epoch; and
        this turn fenced for good. A store that cannot be read fences too."""
        if self._store is None:
            return
        try:
            self._store.check(conn, self.instance, self.epoch)
        except SyncdError as exc:
            reason = str(exc).removeprefix("fenced: ")
            self.refuse(reason)
            if isinstance(exc, Fenced):
                raise
            raise Fenced(f"fenced: {reason}") from exc

    def may_send(self) -> bool:
        """False, for the rest of the run, once the lease is not surely this run's: the
        executor then sends nothing more and the run ends as interrupted."""
        with self._lock:
            if self._fenced is None:
                reason = self._check()
                if reason is not None:
                    self._refused(reason)
            return self._fenced is None

    def ended_by(self, exc: BaseException) -> bool:
        """Whether a failure of the run is the lease lost rather than a fault: the store
        refused a write (Fenced), or a state database error came once the lease is surely
        not this turn's (``lost``). An instance that takes the lease over on PostgreSQL
        ends the former holder's sessions, so a leader frozen past its lease finds, when
        it thaws, its connection closed before the store's own fence could refuse it: that
        run was fenced, not failed by a broken database. The executor and the runner both
        ask this, so they judge alike."""
        return isinstance(exc, Fenced) or (isinstance(exc, StateError) and self.lost())

    def lost(self) -> bool:
        """Whether the lease is surely not this turn's now, asked once a write of the run
        failed: fenced already, past the local deadline, or the store names another live
        holder (read on the lease's own connections, which a takeover that ended this
        run's sessions leaves alone; a store that cannot be read tells nothing here)."""
        if not self.may_send():
            return True
        if self._store is None:
            return False
        try:
            current = self._store.holder()
        except (SQLAlchemyError, SyncdError):
            return False
        reason = leases.not_held(current, self.instance, self.epoch)
        if reason is not None:
            self.refuse(reason)
        return reason is not None

    def refuse(self, reason: str) -> None:
        """Fenced for good, for ``reason``."""
        with self._lock:
            if self._fenced is None:
                self._refused(reason)

    def _refused(self, reason: str) -> None:
        self._fenced = reason
        log.error(
            "fenced: %s; sending nothing more, the run ends as interrupted "
            "(the instance holding the lease goes on from here)",
            reason,
        )

    @property
    def fenced(self) -> str | None:
        return self._fenced


@contextmanager
def run_turn(
    settings: Settings,
    state: StateStore,
    *,
    dry_run: bool,
    lease: Lease | None,
    refused: str = "syncd sync --dry-run needs no lease",
) -> Iterator[tuple[Turn | None, Lease]]:
    """The turn a run writes under (None for a dry run) and the lease it runs by: the
    daemon's, or one of its own, taken for the run and let go after (LeaseHeld when
    another instance holds it and it cannot be borrowed; ``refused`` ends its message)."""
    if lease is not None:
        yield (None if dry_run else lease.turn()), lease
        return
    own = Lease.for_settings(state, settings, SHELL)
    try:
        if dry_run:
            own.claim(take=False)  # a member while it runs, no more
            own.start()
            yield None, own
            return
        if own.claim():
            own.start()
            yield own.turn(), own
            return
        borrowed = own.borrow()
        if borrowed is None:
            current = own.store.holder()
            held = who(current) if current is not None else "another instance"
            raise LeaseHeld(
                f"another syncd sharing the state store holds the lease and writes to the "
                f"platform: {held}; nothing was done here ({refused})"
            )
        own.start()  # a member while it runs
        yield borrowed, own
    finally:
        own.close()


@contextmanager
def holding_lease(settings: Settings, command: str) -> Iterator[None]:
    """The lease held for the block, by a command that writes the state database outside a
    run (``syncd state rebuild``, ``rebind``, ``accept``): taken, or borrowed from this
    state directory's daemon on this host; LeaseHeld (exit 4) naming the holder when
    another instance holds it, and nothing is done. A standby's snapshot changed under
    the leader's feet would make the leader's next plan wrong."""
    with StateStore.open(settings.database, settings.database_url) as state:
        hint = f"run {command} where the lease is held, or once that instance is stopped"
        with run_turn(settings, state, dry_run=False, lease=None, refused=hint):
            yield


def request_seconds(settings: Settings) -> float:
    """How long one request to the platform may take (config: ``request_seconds``); 0
    without a platform section (a dry run's settings)."""
    return settings.platform.request_seconds if settings.platform is not None else 0.0


# ---------------------------------------------------------------- plans


def plan_digest(the_plan: Plan) -> tuple[str, dict[str, int]]:
    """A digest of what a plan would send (each change's kind, action, key and values),
    and its counts by kind.action: two instances planning from the same inputs agree."""
    digest = hashlib.sha256()
    encoder = json.JSONEncoder(ensure_ascii=False, sort_keys=True, default=str)
    for c in the_plan.changes:
        digest.update(encoder.encode([c.kind.value, c.action.value, c.key, c.after]).encode())
        digest.update(b"\n")
    counts = {f"{k.value}.{a.value}": n for (k, a), n in the_plan.counts().items()}
    return digest.hexdigest()[:16], counts
