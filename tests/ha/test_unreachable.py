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
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from sqlalchemy import text

from syncd import snapshot as store
from syncd.run.leadership import Lease
from syncd.snapshot import StateStore
from syncd.snapshot.postgres import IDLE_IN_TRANSACTION_MS, KEEPALIVES, STATEMENT_TIMEOUT_MS
from tests.support.postgres import start_server, stop_server

from .test_lease import claimant

DEADLINE = 60.0  # seconds: twice a renewal period of the 30 s lease, each wait's bound


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
