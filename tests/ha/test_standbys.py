"""What the cluster tells: ``syncd status`` names the leader and the standbys and says
whether each standby's dry plan agrees with the leader's; the metrics say which is which;
a shell ``syncd sync`` on a standby's host does nothing and says who leads (exit 4)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import text

from syncd import snapshot as store
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_NOT_LEADER, EXIT_OK
from syncd.snapshot import leases
from syncd.snapshot.lease_store import LeaseStore
from syncd.snapshot.leases import Claimant
from tests.daemon.support import samples
from tests.support.processes import free_port
from tests.support.waiting import scaled

from .support import Cluster, Member, people, wait_for


@pytest.fixture
def cluster(tmp_path: Path, emulator: RunningEmulator, store_url: str | None) -> Iterator[Cluster]:
    """Run once with one shared SQLite file, once with one PostgreSQL database."""
    with Cluster(tmp_path / "cluster", emulator, people(6), store_url) as made:
        yield made


def status(cluster: Cluster, member: Member) -> dict[str, Any]:
    found: dict[str, Any] = json.loads(cluster.cli(member, "status", "--output", "json").stdout)
    return found


def by_pid(found: dict[str, Any]) -> dict[int, dict[str, Any]]:
    return {int(m["pid"]): m for m in found["leadership"]["members"]}


def test_status_names_the_leader_and_a_standby_whose_plan_agrees(cluster: Cluster) -> None:
    ports = [free_port(), free_port()]
    leader = cluster.start(cluster.member("a", metrics_port=ports[0]))
    cluster.wait_leader([leader], "the first daemon leads")
    wait_for(cluster.converged, "the leader's first sync")
    standby = cluster.start(cluster.member("b", metrics_port=ports[1]))

    def agreeing() -> dict[str, Any] | None:
        found = status(cluster, standby)
        member = by_pid(found).get(standby.pid)
        return found if member is not None and member["plan_agrees"] is True else None

    found = wait_for(agreeing, "the standby's dry plan agrees with the leader's")
    assert found["leadership"]["leader"]["pid"] == leader.pid
    members = by_pid(found)
    assert members[leader.pid]["role"] == "leader"
    assert members[standby.pid]["role"] == "standby"
    assert members[standby.pid]["plan"]["counts"] == {}  # nothing to do, as the leader
    text = cluster.cli(standby, "status").stdout
    assert f"leader     pid {leader.pid} on " in text
    assert f"standby    pid {standby.pid} on " in text and "plan agrees with the leader's" in text

    def gauges(port: int) -> dict[str, float]:
        return samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=scaled(10)).text)

    epoch = float(found["leadership"]["epoch"])
    assert gauges(ports[0])["syncd_leader"] == 1.0
    assert gauges(ports[0])["syncd_leader_epoch"] == epoch
    assert gauges(ports[1])["syncd_leader"] == 0.0
    assert cluster.writes(standby) == 0  # it only planned


def test_a_standby_whose_source_differs_is_shown_so(cluster: Cluster) -> None:
    leader = cluster.start(cluster.member("a"))
    cluster.wait_leader([leader], "the first daemon leads")
    wait_for(cluster.converged, "the leader's first sync")
    # The standby's copy of the export has one more person: its dry plan creates them.
    standby = cluster.start(cluster.member("b", employees=people(7)))

    def differing() -> dict[str, Any] | None:
        member = by_pid(status(cluster, standby)).get(standby.pid)
        return member if member is not None and member["plan_agrees"] is False else None

    member = wait_for(differing, "the standby's plan differs from the leader's")
    assert member["plan"]["counts"] == {"employee.create": 1}
    assert "plan DIFFERS from the leader's" in cluster.cli(leader, "status").stdout
    assert cluster.writes(standby) == 0
    assert cluster.converged()  # the leader's source: nobody created by the standby


def test_a_shell_sync_where_another_instance_leads_says_who_and_does_nothing(
    cluster: Cluster,
) -> None:
    leader = cluster.start(cluster.member("a"))
    cluster.wait_leader([leader], "the first daemon leads")
    wait_for(cluster.converged, "the leader's first sync")
    other = cluster.member("b")  # a second host's timer set-up: no daemon there

    refused = cluster.cli(other, "sync", "--yes")
    assert refused.returncode == EXIT_NOT_LEADER, refused.stderr
    assert f"pid {leader.pid} on " in refused.stderr and "holds the lease" in refused.stderr
    writers = {c for c, seen in cluster.emulator.callers().items() if seen["writes"]}
    assert writers == {leader.caller}  # the refused sync wrote nothing
    assert cluster.cli(other, "sync", "--dry-run").returncode == EXIT_OK  # no lease needed
    # On the leader's host, next to its daemon, a shell sync borrows the daemon's lease.
    # (--wait: the daemon's own runs, every 2 s, hold the run lock a moment)
    assert cluster.cli(leader, "sync", "--yes", "--wait", "60").returncode == EXIT_OK
    leases = {r["epoch"] for r in cluster.lease_query("SELECT epoch FROM leadership")}
    assert leases == {1}  # nobody took it over


def test_a_dry_run_where_another_instance_leads_leaves_its_journal_alone(
    cluster: Cluster,
) -> None:
    """A standby's (or a shell's) dry run neither marks the leader's run interrupted nor
    resolves the items it has in flight: only the instance that may write does."""
    member = cluster.member("b")
    assert cluster.cli(member, "sync", "--dry-run").returncode == EXIT_OK  # the schema
    # Opened as syncd opens it (its state directory beside it: last-run).
    url = SecretStr(cluster.store_url) if cluster.store_url else None
    engine = store.open_engine(member.folder / "state" / "syncd.db", url)
    other = Claimant(
        "elsewhere/4242/t", "elsewhere", 4242, "m2", "/var/lib/syncd", "leader", 60_000
    )
    try:
        kept = LeaseStore.open(engine)
        with kept.write(1000) as conn:
            assert leases.acquire(conn, other) is not None
            leases.join(conn, other)
        kept.close()
        run_id = store.start_run(
            engine, trigger="schedule", mode="apply", read="full", source="csv",
            started_at=1, epoch=1, instance=other.instance,
        )  # fmt: skip
        with store.write(engine) as conn:
            conn.execute(
                text(
                    "INSERT INTO run_items (run_id, seq, kind, key, display, action, message, "
                    "outcome, attempts) VALUES (:r, 0, 'employee', 'E1', 'user1', 'create', "
                    "'create employee user1', 'sent', 1)"
                ),
                {"r": run_id},
            )
        assert cluster.cli(member, "sync", "--dry-run").returncode == EXIT_OK
        with engine.connect() as conn:
            outcome = conn.execute(text("SELECT outcome FROM runs WHERE id = :r"), {"r": run_id})
            item = conn.execute(
                text("SELECT outcome FROM run_items WHERE run_id = :r"), {"r": run_id}
            )
            assert (outcome.scalar_one(), item.scalar_one()) == ("running", "sent")
    finally:
        engine.dispose()


def test_a_standby_abandons_its_dry_run_when_it_takes_over(cluster: Cluster) -> None:
    """The leader stopped while the standby's dry run reads a slow platform: the standby
    takes the lease, its dry run ends at once as interrupted (docs/ha.md), and its takeover
    run writes (its own source has one more person: the takeover run creates them)."""
    leader = cluster.start(cluster.member("a"))
    cluster.wait_leader([leader], "the first daemon leads")
    wait_for(cluster.converged, "the leader's first sync")
    standby = cluster.start(cluster.member("b", employees=people(7)))
    wait_for(lambda: cluster.roles().get(standby.pid) == "standby", "the other stands by")
    # Every read answered slowly (within the platform timeout): a dry run takes seconds.
    slow = {"method": "GET", "fault": "latency", "latency_ms": 1500, "count": 100_000}
    cluster.emulator.set_faults(scripted=[slow])

    def dry_run_under_way() -> bool:
        runs = cluster.runs_of(standby)
        return bool(runs) and runs[-1]["mode"] == "dry_run" and runs[-1]["outcome"] == "running"

    wait_for(dry_run_under_way, "a standby dry run under way")
    leader.signal(signal.SIGTERM)  # it lets the lease go: taken at the standby's next try
    assert leader.process is not None
    leader.process.wait()
    cluster.wait_leader([standby], "the standby takes the lease")
    taken = cluster.lease()
    assert taken is not None and taken.acquired_at is not None
    cluster.emulator.set_faults()
    wait_for(lambda: cluster.writes(standby) > 0, "the takeover run writes")
    cluster.employees = people(7)
    wait_for(cluster.converged, "the platform holds the standby's source")
    # The dry runs under way when the lease was taken (the run lock: one at a time) ended
    # as interrupted; a dry run ends ok (it planned one creation) unless abandoned.
    runs = cluster.runs_of(standby)
    under_way = [
        r for r in runs
        if r["mode"] == "dry_run" and r["started_at"] <= taken.acquired_at <= r["finished_at"]
    ]  # fmt: skip
    assert [r["outcome"] for r in under_way] == ["interrupted"], runs
    assert {r["epoch"] for r in runs if r["mode"] == "apply"} == {taken.epoch}
