"""A lone sync never fences itself, however long its own write transactions take.

The lease is renewed every third of it; a renewal that waits behind the run's own write
transactions (SQLite's ``BEGIN IMMEDIATE``, the write lock the journal writer holds) lets
the lease run out under a sync that has no rival at all (issue 33: a 100,000-person sync
on a loaded host fenced itself). Load did not reproduce it reliably; the mechanism is the
renewal waiting behind the run's writes, so the test makes those writes slow on purpose:
a hook on the test's engine holds each of the journal writer's transactions open, just
before its commit, until the lease has been renewed (or two leases have passed: then the
renewal was held back, and the run finds its lease run out).
"""

from __future__ import annotations

import threading
from pathlib import Path

from sqlalchemy import Connection, Engine, event

from syncd import snapshot as store
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from syncd.run.leadership import SHELL, Lease
from syncd.run.runner import RunRequest, run_sync
from syncd.snapshot import postgres
from tests.reliability.support import Rig, big_company
from tests.support.waiting import scaled

LEASE_SECONDS = 9
HOOKED = 4  # journal transactions held open until a renewal


class SlowWrites:
    """Holds the journal writer's transactions open, before their commit, until the lease
    was renewed since they began (at most two leases)."""

    def __init__(self, engine: Engine) -> None:
        self.lease: Lease | None = None
        self.held = 0  # transactions held open
        self.renewed = 0  # of which the lease was renewed while held
        self._claimed = threading.Condition()  # told after each of the lease's claims
        event.listen(engine, "begin", self._began)
        event.listen(engine, "commit", self._committing)

    def watch(self, lease: Lease) -> None:
        """Hold the writes back until ``lease`` renews: its renewing thread calls
        ``lease.claim``, wrapped here to say when each claim is done."""
        claim = lease.claim

        def told(*, take: bool = True) -> bool:
            held = claim(take=take)
            with self._claimed:
                self._claimed.notify_all()
            return held

        lease.claim = told  # type: ignore[method-assign]
        self.lease = lease

    def _writing(self, conn: Connection) -> bool:
        options = conn.get_execution_options()
        writes = options.get("sqlite_begin") == "IMMEDIATE" or options.get(postgres.WRITING)
        return bool(writes) and threading.current_thread().name == "journal"

    def _began(self, conn: Connection) -> None:
        if self.lease is not None and self._writing(conn) and self.held < HOOKED:
            conn.info["slow_since"] = self.lease.deadline

    def _committing(self, conn: Connection) -> None:
        since = conn.info.pop("slow_since", None)
        lease = self.lease
        if since is None or lease is None:
            return
        self.held += 1
        # The delaying hook itself: this commit waits until the lease thread has renewed,
        # so the run's own write is as slow as the renewal it must never block.
        with self._claimed:
            self._claimed.wait_for(
                lambda: lease.deadline != since, timeout=scaled(2 * LEASE_SECONDS)
            )
        self.renewed += lease.deadline != since


def test_a_lone_sync_whose_own_writes_are_slow_never_fences_itself(
    tmp_path: Path, emulator: RunningEmulator, store_url: str | None
) -> None:
    rig = Rig(tmp_path, emulator, big_company(40, departments=4), database_url=store_url)
    rig.platform_options.update(timeout=2.0, connect_timeout=0.5, batch_size=5)
    rig.sections["leadership"] = {"lease_seconds": LEASE_SECONDS}
    rig.company.write(rig.folder)
    settings = rig.settings()
    state = store.StateStore.open(settings.database, settings.database_url)
    slow = SlowWrites(state.engine)
    lease = Lease.for_settings(state, settings, SHELL)
    try:
        assert lease.claim()
        lease.start()
        slow.watch(lease)
        result = run_sync(settings, RunRequest(), state=state, lease=lease)
    finally:
        lease.close()
        state.close()
    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
    assert slow.held == HOOKED  # the run's writes were slow ...
    assert slow.renewed == HOOKED  # ... and the lease was renewed while each was open
    platform, wanted = rig.platform(), rig.company.expected()
    assert (platform.nodes, platform.people) == (wanted.nodes, wanted.people)
