"""Failover time: a leader killed with SIGKILL mid-apply, to the new leader's first write.

    .venv/bin/python -m benchmarks.failover [--runs 5] [--engine sqlite|postgresql]
        [--lease 9] [--interval 2] [--people 24] [--load 0]

Each run: three ``syncd run`` sharing one store (tests/ha's cluster: one SQLite file, or
a PostgreSQL database on a server of its own), the leader's writes answered slowly by
the emulator; the leader is killed after its fourth write, and the time from the kill to
the first write the emulator receives from another instance is measured (the emulator
stamps each write by caller, on this host's clock). Also checked each time: the platform
ends with every person once. A measurement, never an assertion.

``--load N`` runs N busy loops, each a process at the daemons' own priority, for the
whole measurement: a 2-core host at a load of N or more, as production hosts are. Each
run prints the bound the figure is held to: the lease, plus the schedule's interval,
plus the new leader's own time from its run's start to its first write (its reading
and planning).
"""

from __future__ import annotations

import argparse
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from syncd.emulator import EmulatorOptions, serve_in_thread
from tests.ha.support import Cluster, no_duplicates, people, wait_for
from tests.ha.test_failover import leader_mid_apply
from tests.support.waiting import wait_until

# Seconds for the new leader to send everyone: a large company on a loaded host.
CONVERGED = 900.0


@dataclass(frozen=True)
class Failover:
    """One failover, in seconds from the kill."""

    first_write: float  # the new leader's first write to the platform
    bound: float  # lease + interval + the new leader's run start to its first write


def one(root: Path, store_url: str | None, lease: int, interval: int, size: int) -> Failover:
    with serve_in_thread(EmulatorOptions()) as emulator:
        cluster = Cluster(root, emulator, people(size), store_url, lease, interval)
        try:
            leader, standbys = leader_mid_apply(cluster, ["a", "b", "c"], writes=4)
            leader.signal(signal.SIGKILL)
            killed = time.time_ns() // 1_000_000
            emulator.set_faults()  # slow writes kept the leader mid-apply; none for the next
            successor = cluster.wait_leader(standbys, "a standby takes the lease")
            first = int(wait_for(lambda: cluster.first_write_ms(successor), "its first write"))
            # Asked every 5 s: each ask reads the whole emulator, which serves the daemons
            # from this process (at the tests' 50 Hz it starved them).
            wait_until(cluster.converged, "the platform holds every person once", CONVERGED, 5.0)
            no_duplicates(emulator)
            # Its run that wrote first: the last one it started before that write.
            started = max(
                int(r["started_at"])
                for r in cluster.runs_of(successor)
                if r["mode"] == "apply" and int(r["started_at"]) <= first
            )
            return Failover((first - killed) / 1000, lease + interval + (first - started) / 1000)
        finally:
            cluster.close()


@contextmanager
def busy(processes: int) -> Iterator[None]:
    """``processes`` busy loops for the block, each stopped at its end."""
    loops = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(processes)]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engine", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--lease", type=int, default=9)  # the cluster's timeouts fit
    parser.add_argument("--interval", type=int, default=2)
    parser.add_argument("--people", type=int, default=24)
    parser.add_argument("--load", type=int, default=0, help="busy processes meanwhile")
    args = parser.parse_args()
    server = None
    if args.engine == "postgresql":
        from tests.support.postgres import start_server, stop_server

        server = start_server()
    times = []
    try:
        with busy(args.load):
            for n in range(args.runs):
                url = server.url(server.create_database("failover")) if server else None
                with tempfile.TemporaryDirectory(prefix="syncd-failover-") as folder:
                    took = one(
                        Path(folder) / "cluster", url, args.lease, args.interval, args.people
                    )
                times.append(took.first_write)
                print(
                    f"run {n + 1}: kill -9 to the new leader's first write: "
                    f"{took.first_write:.2f} s (bound {took.bound:.2f} s: "
                    f"{'within' if took.first_write <= took.bound else 'OVER'})"
                )
    finally:
        if server is not None:
            stop_server(server)
    print(
        f"{args.engine}, lease {args.lease} s, interval {args.interval} s, "
        f"{args.people} people, load {args.load}, {len(times)} runs: "
        f"min {min(times):.2f} s, median {statistics.median(times):.2f} s, "
        f"max {max(times):.2f} s"
    )


if __name__ == "__main__":
    main()
