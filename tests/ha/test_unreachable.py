"""PostgreSQL that stops answering without closing the connection: nothing of syncd's waits
for it for hours.

The server's processes are frozen (SIGSTOP, the postmaster and each backend): the kernel
still acknowledges every packet, so neither TCP nor the server's own timeouts end a
statement; a lease let go at shutdown waited until the server came back (issue 33:
``Lease.close()`` could hang for hours). A server of this test's own, so no other test
sees it frozen.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy import make_url, text

from syncd import snapshot as store
from syncd.emulator import RunningEmulator
from syncd.run.leadership import Lease
from syncd.snapshot import StateStore
from syncd.snapshot.postgres import IDLE_IN_TRANSACTION_MS, KEEPALIVES, STATEMENT_TIMEOUT_MS
from tests.support.postgres import start_server, stop_server
from tests.support.tap import Tap
from tests.support.waiting import scaled

from .support import Cluster, frozen_leader, no_duplicates, people, wait_for
from .test_lease import claimant

DEADLINE = 60.0  # seconds: twice a renewal period of the 30 s lease, each wait's bound
# A daemon asked to stop: the run under way gets schedule.stop_timeout_seconds (60 s by
# default) to end, then the daemon exits anyway; Lease.close() waits a renewal period at
# most (docs/ha.md). This bounds it all with a lease's slack, far from "hours".
STOP_BOUND = 60.0 + 2 * 9


@contextmanager
def frozen(postmaster: int) -> Iterator[None]:
    """The server and every process it started, stopped (SIGSTOP) for the block: each
    backend is a session of its own (setsid), so the postmaster's group is not enough."""
    pids = [postmaster, *children(postmaster)]
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in pids:
            with suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)


def children(parent: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError):
            fields = stat.read_text(encoding="ascii", errors="replace").rsplit(")", 1)[1].split()
            if int(fields[1]) == parent:  # the field after the state: the parent's pid
                found.append(int(stat.parent.name))
    return found


def test_a_lease_lets_go_within_a_renewal_period_of_a_frozen_server(tmp_path: Path) -> None:
    server = start_server()
    try:
        engine = store.open_engine(tmp_path / "syncd.db", server.url(server.create_database()))
        with engine.connect() as conn:  # the session guards, set for every connection
            guards: dict[str, str] = dict(
                conn.execute(
                    text(
                        "SELECT name, setting FROM pg_settings WHERE name IN "
                        "('statement_timeout', 'idle_in_transaction_session_timeout')"
                    )
                ).all()
            )
            fd = conn.connection.driver_connection.pgconn.socket  # type: ignore[union-attr]
            with socket.socket(fileno=os.dup(fd)) as client:
                keepalive = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)
                unacked = client.getsockopt(socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT)
        assert guards == {
            "statement_timeout": str(STATEMENT_TIMEOUT_MS),
            "idle_in_transaction_session_timeout": str(IDLE_IN_TRANSACTION_MS),
        }
        assert (keepalive, unacked) == (
            KEEPALIVES["keepalives_idle"],
            KEEPALIVES["tcp_user_timeout"],
        )
        lease = Lease(StateStore(engine), claimant(1), role_waiting="standby", contend=True)
        assert lease.claim()
        lease.start()
        with frozen(server.process.pid):
            closing = threading.Thread(target=lease.close, name="closing", daemon=True)
            closing.start()
            closing.join(DEADLINE)
            assert not closing.is_alive(), "Lease.close() waited for the frozen server"
            assert not lease.held
        engine.dispose()
    finally:
        stop_server(server)


def test_a_leader_cut_off_from_the_store_stops_writing_and_stops_when_asked(
    tmp_path: Path, emulator: RunningEmulator, postgres_url: str
) -> None:
    """The leader's connections to PostgreSQL go silent in the middle of its apply (a
    tests.support.tap.Tap stops forwarding and reading, and closes nothing: no reset, the
    kernel still acknowledges): it sends nothing to the platform from the lease's last
    deadline the store knows; a standby that still reaches the store takes over and
    converges; and the cut-off daemon stops when asked (SIGTERM), within a bound."""
    upstream = make_url(postgres_url).port
    assert upstream is not None
    with Tap(upstream) as tap, Cluster(tmp_path / "c", emulator, people(24), postgres_url) as c:
        leader, standby = frozen_leader(c, tap, "store")
        tap.silence()
        seen: list[int] = []  # the expiry of each lease row the cut-off leader held

        def taken_over() -> bool:
            held = c.lease()
            if held is not None and held.pid == leader.pid:
                seen.append(held.expires_at)
            return held is not None and held.pid == standby.pid and held.live

        wait_for(taken_over, "the standby takes the lease from the cut-off leader")
        deadline = max(seen, default=0)  # its last renewal's, by the store's clock
        assert deadline > 0
        wait_for(lambda: c.writes(standby) > 0, "the new leader writes")
        wait_for(c.converged, "the platform holds every person once")
        no_duplicates(emulator)
        assert c.writes(leader, since_ms=deadline) == 0, emulator.callers()
        leader.signal(signal.SIGTERM)
        assert leader.process is not None
        try:
            leader.process.wait(timeout=scaled(STOP_BOUND))
        except subprocess.TimeoutExpired:
            print(leader.log()[-3000:])
            raise AssertionError("the daemon cut off from its store did not stop") from None
