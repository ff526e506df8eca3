"""High availability with real processes (issue 27): several ``syncd run`` share one state
store; one holds the lease and writes, the others stand by and plan dry.

- The leader killed with SIGKILL in the middle of its apply: a standby takes the lease
  once it expires, resolves what the dead run left sent, and converges: every person
  once, nobody lost.
- The leader frozen with SIGSTOP past its lease (as its request for a batch of people
  passes a tap in front of the platform), then thawed: a standby has taken over
  meanwhile, and the thawed process sends nothing more (the emulator counts its writes
  after SIGCONT: 0); its run ends as interrupted, and it stands by.
- PostgreSQL restarted under a cluster: the members come back and converge.

Each test runs on one SQLite file several processes share, and on PostgreSQL.

Timing is observed, never asserted: each wait polls the lease row, the members, the
runs or the emulator's per-caller writes until a generous deadline.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import make_url

from syncd.emulator import RunningEmulator
from syncd.errors import StateError
from tests.support.postgres import PostgresServer
from tests.support.tap import Tap

from .support import Cluster, Member, frozen_leader, no_duplicates, people, slow_writes, wait_for


@pytest.fixture
def cluster(tmp_path: Path, emulator: RunningEmulator, store_url: str | None) -> Iterator[Cluster]:
    """Run once with one shared SQLite file, once with one PostgreSQL database."""
    with Cluster(tmp_path / "cluster", emulator, people(24), store_url) as made:
        yield made


def leader_mid_apply(
    cluster: Cluster, names: list[str], writes: int
) -> tuple[Member, list[Member]]:
    """The first member started leads and is applying (``writes`` writes arrived); the
    others stand by (members say so). The platform is down until they do: on a loaded
    host starting a daemon may take longer than the leader's whole apply."""
    cluster.emulator.set_faults(down=True)
    first = cluster.start(cluster.member(names[0]))
    cluster.wait_leader([first], "the first daemon leads")
    others = [cluster.start(cluster.member(n)) for n in names[1:]]
    wait_for(
        lambda: all(cluster.roles().get(m.pid) == "standby" for m in others),
        "the others stand by",
    )
    slow_writes(cluster.emulator)
    wait_for(lambda: cluster.writes(first) >= writes, f"the leader's {writes} writes")
    return first, others


def test_a_standby_takes_over_from_a_leader_killed_mid_apply(
    cluster: Cluster, emulator: RunningEmulator
) -> None:
    leader, standbys = leader_mid_apply(cluster, ["a", "b", "c"], writes=4)
    held = cluster.lease()
    assert held is not None
    epoch = held.epoch
    assert not cluster.converged()  # killed mid-apply: people still to send

    leader.signal(signal.SIGKILL)
    killed_ms = time.time_ns() // 1_000_000
    assert leader.process is not None
    leader.process.wait()

    successor = cluster.wait_leader(standbys, "a standby takes the lease")
    first = wait_for(lambda: cluster.first_write_ms(successor), "the new leader's first write")
    wait_for(cluster.converged, "the platform holds every person once")
    no_duplicates(emulator)
    lease = cluster.lease()
    assert lease is not None and lease.epoch == epoch + 1  # one takeover, one epoch more
    # The dead leader's run ended as interrupted (those before it failed: the platform was
    # down while the standbys started); the successor's runs carry its epoch.
    outcomes = [r["outcome"] for r in cluster.runs_of(leader) if r["mode"] == "apply"]
    assert outcomes[-1] == "interrupted" and set(outcomes[:-1]) <= {"failed"}, outcomes
    theirs = [r for r in cluster.runs_of(successor) if r["mode"] == "apply"]
    assert theirs and {r["epoch"] for r in theirs} == {epoch + 1}
    wait_for(lambda: cluster.runs_of(successor)[-1]["outcome"] == "ok", "a clean run after")
    # The other standby never wrote.
    for other in standbys:
        if other is not successor:
            assert cluster.writes(other) == 0
    print(f"failover: kill -9 to the new leader's first write: {(first - killed_ms) / 1000:.2f} s")


def test_a_leader_frozen_past_its_lease_writes_nothing_after_it_thaws(
    cluster: Cluster, emulator: RunningEmulator
) -> None:
    # Both reach the platform through a tap, which stops the leader (SIGSTOP) as its next
    # batch of people passes to the platform: frozen waiting for that answer, past the
    # check before that batch. (Frozen between that check and its request's bytes, the
    # request leaves when it thaws: the window docs/ha.md tells of, which this test is not
    # about.)
    with Tap(make_url(emulator.base_url).port or 0) as tap:
        leader, standby = frozen_leader(cluster, tap, "platform")
        tap.freeze_on(b"import-employees", leader.pid)
        try:
            wait_for(tap.fired.is_set, "the leader frozen as a batch of people leaves")
            cluster.wait_leader([standby], "the standby takes the lease from the frozen leader")
            taken_ms = time.time_ns() // 1_000_000
            if cluster.store_url is not None:
                # PostgreSQL: the new leader writes while the old one is still frozen,
                # wherever it was (inside a journal transaction, the server ends its
                # session). On SQLite a leader frozen inside a write transaction holds the
                # file's one write lock: the lease passes on (its own file), the new
                # leader's writes wait (docs/ha.md).
                wait_for(lambda: cluster.writes(standby) > 0, "the new leader writes")
        finally:
            leader.signal(signal.SIGCONT)
        wait_for(lambda: cluster.writes(standby) > 0, "the new leader writes")

        wait_for(lambda: "fenced:" in leader.log(), "the thawed leader says it is fenced")
        wait_for(
            lambda: (
                [r["outcome"] for r in cluster.runs_of(leader) if r["mode"] == "apply"][-1]
                == "interrupted"
            ),
            "the thawed leader's run ends as interrupted",
        )
        wait_for(lambda: cluster.roles().get(leader.pid) == "standby", "the thawed one stands by")
        wait_for(cluster.converged, "the platform holds every person once")
    no_duplicates(emulator)
    assert cluster.writes(leader, since_ms=taken_ms) == 0  # nothing after the takeover
    assert cluster.leader_pid() == standby.pid


def test_the_cluster_resumes_after_postgresql_restarts_under_it(
    tmp_path: Path, emulator: RunningEmulator, postgres_server: PostgresServer
) -> None:
    """PostgreSQL stopped and started again while the leader applies: a run in flight
    may fail or be fenced, but the members come back, one leads, and it converges."""
    url = postgres_server.url(postgres_server.create_database("ha"))
    cluster = Cluster(tmp_path / "cluster", emulator, people(24), url)
    try:
        leader, (standby,) = leader_mid_apply(cluster, ["a", "b"], writes=2)
        restarted_ms = time.time_ns() // 1_000_000
        postgres_server.restart()

        def seen_again() -> bool:
            try:
                rows = cluster.lease_query(
                    "SELECT pid FROM members WHERE last_seen > :t", t=restarted_ms
                )
            except StateError:  # this test's own pooled connection, cut by the restart
                return False
            return {int(r["pid"]) for r in rows} >= {leader.pid, standby.pid}

        try:
            wait_for(seen_again, "both members renew through the restarted server")
        except AssertionError:
            print(leader.log()[-4000:], standby.log()[-4000:], sep="\n----\n")
            raise
        wait_for(cluster.converged, "the platform holds every person once")
        no_duplicates(emulator)
        assert cluster.leader_pid() in (leader.pid, standby.pid)
        assert leader.process is not None and leader.process.poll() is None
        assert standby.process is not None and standby.process.poll() is None
    finally:
        cluster.close()
