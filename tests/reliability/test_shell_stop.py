"""SIGTERM or SIGINT to a shell ``syncd sync`` (and the timer unit that runs one).

The batch in flight is finished, the run is recorded as interrupted and the command
exits 1 (the README's table); the next sync converges. A second signal exits at once.
"""

from __future__ import annotations

import signal
import subprocess

import pytest

from syncd.errors import EXIT_OK, EXIT_PARTIAL
from tests.engine.company import employee
from tests.support.cli import SYNCD
from tests.support.snapshot_rows import IN_FLIGHT_ITEMS
from tests.support.traffic import requests_to
from tests.support.waiting import wait_until

from .support import DEADLINE, Rig, assert_converged, clean_env, query


def start_sync(rig: Rig) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [SYNCD, "sync", "--yes", "--config", str(rig.config)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def slow_first_sync(rig: Rig) -> Rig:
    """A first sync of 40 people in batches of 2, each request held 100 ms."""
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(10, 45)]
    rig.company.write(rig.folder)
    rig.write_config()
    rig.emulator.set_faults(latency_ms=100)
    return rig


@pytest.mark.parametrize(
    ("signum", "endpoint"),
    [
        (signal.SIGTERM, "import-employees"),
        (signal.SIGINT, "import-employees"),
        (signal.SIGTERM, "import-orgs"),
    ],
    ids=["SIGTERM sending people", "SIGINT sending people", "SIGTERM creating departments"],
)
def test_a_signal_finishes_the_batch_in_flight_and_records_the_run_as_interrupted(
    slow_first_sync: Rig, signum: signal.Signals, endpoint: str
) -> None:
    rig = slow_first_sync
    process = start_sync(rig)
    wait_until(lambda: requests_to(rig.emulator, endpoint) >= 1, f"{endpoint} in flight")
    process.send_signal(signum)
    output, _ = process.communicate(timeout=DEADLINE)
    text = output.decode()

    assert process.returncode == EXIT_PARTIAL, text
    (run,) = rig.runs()
    assert (run["outcome"], run["exit_code"]) == ("interrupted", EXIT_PARTIAL)
    assert "interrupted" in text
    # Every batch sent was answered and recorded: nothing is left for crash recovery.
    assert not query(rig.database, IN_FLIGHT_ITEMS)
    assert query(rig.database, "SELECT * FROM run_items WHERE outcome = 'ok'")
    # What was not sent stays planned: a stop is no item's failure.
    assert not query(rig.database, "SELECT * FROM run_items WHERE outcome = 'failed'")

    rig.emulator.set_faults(latency_ms=0)
    assert rig.sync().exit_code == EXIT_OK
    assert_converged(rig)


def test_a_second_signal_exits_at_once_and_the_next_run_converges(slow_first_sync: Rig) -> None:
    rig = slow_first_sync
    rig.emulator.set_faults(latency_ms=2000)
    log = rig.folder / "sync.log"
    with log.open("wb") as out:
        process = subprocess.Popen(
            [SYNCD, "sync", "--yes", "--config", str(rig.config)],
            env=clean_env(),
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
        )
    wait_until(lambda: requests_to(rig.emulator, "import-") >= 1, "a batch in flight")
    process.send_signal(signal.SIGTERM)
    # Two signals sent at once may arrive as one: the second goes once the first was seen.
    wait_until(lambda: b"stopping after the batch" in log.read_bytes(), "the first signal seen")
    process.send_signal(signal.SIGTERM)

    assert process.wait(DEADLINE) == 128 + signal.SIGTERM, log.read_text()
    rig.emulator.set_faults(latency_ms=0)
    assert rig.sync().exit_code == EXIT_OK
    assert_converged(rig)
    assert [r["outcome"] for r in rig.runs()] == ["interrupted", "ok"]
