"""The daemon's lease thread never waits for the state database's write lock.

A renewal that waits behind a write (the run's, or the daemon's own status write made
from the lease thread when leadership changed) misses its turn: the lease runs out, the
daemon is fenced, and leadership flaps (issue 33: the epoch reached 8 in 3 minutes). Here
the state database is held write-locked by another connection the whole time, as a long
write transaction would; the lease is lost and taken again, and each change is told to
the main loop, which writes the status, rather than written from the lease thread.
"""

from __future__ import annotations

import sqlite3
import threading

from sqlalchemy import Engine, text

from syncd import snapshot as store
from syncd.errors import EXIT_NOT_LEADER, EXIT_OK
from syncd.service.daemon import PUBLISH, Daemon
from syncd.snapshot import leases
from syncd.snapshot.lease_store import LeaseStore
from syncd.snapshot.leases import Claimant

from .support import Site

DEADLINE = 30.0  # seconds: half the write lock's busy timeout, which a wait would run into


def test_the_lease_is_lost_and_taken_while_the_state_database_is_write_locked(
    site: Site,
) -> None:
    daemon = Daemon.start(site.config)
    rival = Claimant("elsewhere/4242/t", "elsewhere", 4242, "m2", "/elsewhere", "leader", 90_000)
    kept = daemon.state.leases
    locker = sqlite3.connect(site.state_dir / "syncd.db", isolation_level=None)
    daemon._wake_read.settimeout(DEADLINE)
    try:
        assert daemon.lease.held
        locker.execute("BEGIN IMMEDIATE")  # held to the end: a run's long write transaction
        for held in (False, True):
            with kept.write(1000) as conn:
                conn.execute(text("UPDATE leadership SET expires_at = 0"))
                if not held:
                    assert leases.acquire(conn, rival) is not None  # another instance took it
            claiming = threading.Thread(target=daemon.lease.claim)
            claiming.start()
            claiming.join(DEADLINE)
            assert not claiming.is_alive(), "the lease thread waited for the write lock"
            assert daemon.lease.held is held
            assert PUBLISH in daemon._wake_read.recv(64)  # the status: the main loop's to write
    finally:
        locker.close()
        daemon.lease.close()
        daemon.lock.release()
        daemon.state.close()


def cursors(engine: Engine) -> dict[str, str]:
    with engine.connect() as conn:
        return {str(k): str(v) for k, v in conn.execute(text("SELECT name, value FROM cursors"))}


def test_state_commands_that_write_refuse_while_another_instance_holds_the_lease(
    site: Site,
) -> None:
    """``syncd state rebuild``, ``rebind`` and ``accept`` change the snapshot the leader
    plans from: only the instance holding the lease may (exit 4 elsewhere, naming it)."""
    rival = Claimant("elsewhere/4242/t", "elsewhere", 4242, "m2", "/elsewhere", "leader", 90_000)
    engine = store.open_engine(site.state_dir / "syncd.db")
    kept = LeaseStore.open(engine)
    try:
        with kept.write(1000) as conn:
            assert leases.acquire(conn, rival) is not None
        before = cursors(engine)
        for command in ("rebuild", "rebind", "accept"):
            done = site.cli("state", command)
            assert done.returncode == EXIT_NOT_LEADER, (command, done.stdout, done.stderr)
            assert "pid 4242 on elsewhere" in done.stderr, done.stderr
        assert cursors(engine) == before  # nothing was bound, accepted or taken back
        assert site.cli("state", "rebuild", "--dry-run").returncode == EXIT_OK  # no lease needed
    finally:
        kept.close()
        engine.dispose()
