"""A takeover is real (issue 33): a leader frozen at any point of its work writes nothing
to the platform after another instance takes the lease.

The leader reaches the store (PostgreSQL) or the platform through a tests.support.tap.Tap
that stops it (SIGSTOP) as a given statement or request passes: it is frozen waiting for
the answer, inside whatever transaction that statement belongs to. A standby (straight to
the same servers) takes the lease while it is frozen; then it is thawed. Checked: the
emulator received 0 writes from the old leader from the new epoch's start (the lease
row's ``acquired_at``, the store's clock: the same host's), the standby writes under the
new epoch, and the platform ends with every person once (nothing created twice, nothing
lost; one person is added to the source after the freeze, so the new leader always has
something of its own to write).

A new point is one more entry in POINTS: where (the store or the platform) and what
passes.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Literal

import pytest
from sqlalchemy import make_url

from syncd.emulator import RunningEmulator
from tests.support.tap import Tap
from tests.support.waiting import scaled, wait_until

from .support import Cluster, Member, frozen_leader, no_duplicates, people, wait_for

Where = Literal["store", "platform"]
POINTS: dict[str, tuple[Where, bytes]] = {
    # inside the lease transaction: its renewal's UPDATE (the row stays locked)
    "lease renewal": ("store", b"UPDATE leadership SET epoch"),
    # inside a journal transaction holding the write lock, before a batch leaves
    "journal sent mark": ("store", b"INSERT INTO sent_batches"),
    # inside a journal transaction recording what the platform answered
    "journal settle": ("store", b"UPDATE run_items SET outcome = $"),
    # inside the snapshot's write, after a batch was answered
    "snapshot write": ("store", b"INSERT INTO employees"),
    # between transactions: a commit on its way to the server
    "a commit": ("store", b"COMMIT"),
    # in the middle of an HTTP request to the platform, answered slowly
    "platform request": ("platform", b"import-employees"),
}
TAKEOVER_BOUND = 3  # leases, from the freeze to the standby holding the lease
NEWCOMER = ("E999", "user999", "User 999", "D1")


@pytest.fixture
def cluster(tmp_path: Path, emulator: RunningEmulator, postgres_url: str) -> Iterator[Cluster]:
    with Cluster(tmp_path / "cluster", emulator, people(24), postgres_url) as made:
        yield made


def apply_epochs(cluster: Cluster, member: Member) -> set[int]:
    return {int(r["epoch"]) for r in cluster.runs_of(member) if r["mode"] == "apply"}


@pytest.mark.parametrize("point", list(POINTS))
def test_a_leader_frozen_as_a_statement_passes_writes_nothing_after_the_takeover(
    cluster: Cluster, emulator: RunningEmulator, point: str
) -> None:
    where, pattern = POINTS[point]
    upstream = make_url(cluster.store_url or "").port if where == "store" else None
    port = upstream or make_url(emulator.base_url).port
    assert port is not None
    with Tap(port) as tap:
        leader, standby = frozen_leader(cluster, tap, where)
        held = cluster.lease()
        assert held is not None and held.pid == leader.pid
        epoch = held.epoch
        tap.freeze_on(pattern, leader.pid)
        try:
            wait_for(tap.fired.is_set, f"the leader frozen as {pattern!r} passes")
            cluster.employees.append(NEWCOMER)  # the new leader has something to write
            rows = ["id,username,name,department", *(",".join(e) for e in cluster.employees)]
            (cluster.root / "employees.csv").write_text("\n".join(rows) + "\n", "utf-8")
            # Bounded: a standby takes over within a lease and a third (docs/ha.md), on a
            # loaded host more; a frozen leader holding the lease row in its transaction
            # must not hold it for the server's idle-in-transaction timeout (45 s).
            wait_until(
                lambda: cluster.leader_pid() == standby.pid,
                "the standby takes the lease from the frozen one",
                scaled(TAKEOVER_BOUND * cluster.lease_seconds),
            )
            taken = cluster.lease()
            assert taken is not None and taken.acquired_at is not None
            wait_for(lambda: cluster.writes(standby) > 0, "the new leader writes")
        except AssertionError:
            print(leader.log()[-3000:], standby.log()[-3000:], sep="\n----\n")
            raise
        finally:
            leader.signal(signal.SIGCONT)
        wait_for(lambda: cluster.roles().get(leader.pid) == "standby", "the thawed one stands by")
        wait_for(cluster.converged, "the platform holds every person once, the newcomer too")
    no_duplicates(emulator)
    assert cluster.writes(leader, since_ms=taken.acquired_at) == 0, emulator.callers()
    assert taken.epoch == epoch + 1
    assert apply_epochs(cluster, standby) == {epoch + 1}
    assert apply_epochs(cluster, leader) <= {epoch}
    assert cluster.leader_pid() == standby.pid
