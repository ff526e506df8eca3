"""``syncd status`` as a health check: its exit code follows the real runs' outcomes.

The test process holds the daemon's lock itself, standing in for ``syncd run``: what
status judges here is the runs recorded, made by shell syncs.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator

import pytest

from syncd.daemon import daemon_lock
from syncd.emulator import RunningEmulator

from .support import Site

HOUR_MS = 3_600_000


@pytest.fixture
def daemon(site: Site) -> Iterator[None]:
    """The daemon's lock held (by this process), as if it had started two hours ago."""
    lock = daemon_lock(site.state_dir)
    lock.acquire()
    since = int(time.time() * 1000) - 2 * HOUR_MS
    holder = {"pid": 1, "host": "test", "since": since}
    (site.state_dir / "daemon.lock").write_text(json.dumps(holder), encoding="utf-8")
    try:
        yield
    finally:
        lock.release()


def age_runs(site: Site, ms: int) -> None:
    with sqlite3.connect(site.state_dir / "syncd.db") as db:
        db.execute(
            "UPDATE runs SET started_at = started_at - ?, finished_at = finished_at - ?", (ms, ms)
        )


def test_a_failed_last_run_is_unhealthy_until_a_run_succeeds(
    site: Site, emulator: RunningEmulator, daemon: None
) -> None:
    site.configure(platform={"retry_attempts": 1})
    assert site.cli("sync").returncode == 0
    emulator.set_faults(down=True)
    assert site.cli("sync").returncode == 3
    emulator.set_faults()
    assert site.cli("sync", "--dry-run").returncode == 0  # a dry run does not count

    failed = site.cli("status")

    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "error: the last run, 2, failed at " in failed.stderr
    assert "health     the last run, 2, failed" in failed.stdout
    assert site.cli("sync").returncode == 0
    healthy = site.cli("status")
    assert healthy.returncode == 0, healthy.stderr
    assert "health     ok" in healthy.stdout


def test_no_success_within_the_configured_age_is_unhealthy(site: Site, daemon: None) -> None:
    assert site.cli("sync").returncode == 0
    age_runs(site, 90 * 60_000)  # the last success, 90 minutes ago
    site.configure(status={"max_success_age_minutes": 60})

    stale = site.cli("status")

    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "no run has succeeded for 60 minutes (the last at " in stale.stderr
    site.configure(status={"max_success_age_minutes": 120})
    assert site.cli("status").returncode == 0
    site.configure(status={"max_success_age_minutes": 0})  # not checked
    age_runs(site, 1000 * HOUR_MS)
    assert site.cli("status").returncode == 0


def test_a_daemon_that_never_succeeded_is_judged_from_its_start(site: Site, daemon: None) -> None:
    site.configure(status={"max_success_age_minutes": 60})  # it started 2 hours ago

    never = site.cli("status")

    assert never.returncode == 1
    assert "no run has succeeded for 60 minutes (none yet;" in never.stderr
    site.configure(status={"max_success_age_minutes": 180})
    assert site.cli("status").returncode == 0
