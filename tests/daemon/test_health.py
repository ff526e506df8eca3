"""``syncd status`` as a health check: its exit code follows the real runs' outcomes, and
a missing daemon counts only where the daemon syncs (its run is the newest real one).

Timer style: shell syncs alone, as ``syncd-sync.timer`` makes them. Daemon style: a real
``syncd run`` on a notify socket, its metrics scraped from the real endpoint.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from datetime import datetime

import httpx
import pytest

from syncd.emulator import RunningEmulator
from syncd.service.status import daemon_lock
from tests.support.processes import free_port
from tests.support.waiting import scaled

from .support import Site, samples

HOUR_MS = 3_600_000
STICKY = {"field": "username", "pattern": "^bob$", "message": "rejected by rule"}


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


def ms(iso: str) -> int:
    return round(datetime.fromisoformat(iso).timestamp() * 1000)


# ---------------------------------------------------------------- timer style: no daemon


def test_without_a_daemon_health_follows_the_shell_syncs(
    site: Site, emulator: RunningEmulator
) -> None:
    site.configure(platform={"retry_attempts": 1})
    nothing = site.cli("status")
    assert nothing.returncode == 3, nothing.stdout + nothing.stderr
    assert "health     nothing syncs here: no syncd daemon (syncd run) serves" in nothing.stdout

    assert site.cli("sync", "--yes").returncode == 0
    healthy = site.cli("status")

    assert healthy.returncode == 0, healthy.stdout + healthy.stderr
    assert "daemon     not running (none expected: the last real run, 1, was a shell sync)\n" in (
        healthy.stdout
    )
    assert "health     ok\n" in healthy.stdout
    emulator.set_faults(down=True)
    assert site.cli("sync", "--yes").returncode == 3
    emulator.set_faults()
    assert site.cli("sync", "--dry-run").returncode == 0  # a dry run does not count
    failed = site.cli("status")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "health     the last run, 2, failed at " in failed.stdout
    assert failed.stderr == ""  # the problem is told once, on the health line
    assert site.cli("sync", "--yes").returncode == 0
    assert site.cli("status").returncode == 0


def test_without_a_daemon_no_success_within_the_configured_age_is_unhealthy(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    age_runs(site, 90 * 60_000)  # the last success, 90 minutes ago
    site.configure(status={"max_success_age_minutes": 60})

    stale = site.cli("status")

    assert stale.returncode == 1, stale.stdout + stale.stderr
    assert "health     no run has succeeded for 60 minutes (the last at " in stale.stdout
    site.configure(status={"max_success_age_minutes": 120})
    assert site.cli("status").returncode == 0
    site.configure(status={"max_success_age_minutes": 0})  # not checked
    age_runs(site, 1000 * HOUR_MS)
    assert site.cli("status").returncode == 0


def test_a_partial_run_is_a_success_for_status_and_the_textfile_alike(site: Site) -> None:
    textfile = site.root / "syncd.prom"
    site.configure(metrics={"textfile": str(textfile)})
    site.emulator.set_faults(reject=[STICKY])
    assert site.cli("sync", "--yes").returncode == 1  # bob fails, the rest is applied
    assert site.cli("sync", "--yes").returncode == 1  # and fails again: a sticky item

    found = json.loads(site.cli("status", "--output", "json").stdout)

    last = site.runs()[-1]
    assert found["healthy"] is True and found["exit_code"] == 0
    assert ms(found["last_success"]) == last["finished_at"]
    values = samples(textfile.read_text(encoding="utf-8"))
    assert values["syncd_last_success_timestamp_seconds"] == last["finished_at"] / 1000
    assert values["syncd_pending_failures"] == 1


# ---------------------------------------------------------------- daemon style


def test_a_sticky_item_leaves_the_daemon_healthy_with_status_and_metrics_agreeing(
    site: Site,
) -> None:
    port = free_port()
    site.configure(metrics={"enabled": True, "port": port})
    site.emulator.set_faults(reject=[STICKY])
    service = site.start()
    service.notify.status("last run 1 partial")

    status = site.cli("status", "--output", "json")
    scrape = samples(httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=scaled(10)).text)

    (run,) = site.runs()
    found = json.loads(status.stdout)
    assert status.returncode == 0, status.stdout + status.stderr
    assert found["healthy"] is True and found["daemon_expected"] is True
    assert ms(found["last_success"]) == run["finished_at"]
    assert scrape["syncd_last_success_timestamp_seconds"] == run["finished_at"] / 1000
    assert scrape["syncd_pending_failures"] == 1  # the sticky item has its own metric
    assert service.stop() == 0


def test_a_daemon_that_syncs_here_and_stopped_is_unhealthy_until_a_timer_takes_over(
    site: Site,
) -> None:
    service = site.start()
    service.notify.status("last run 1 ok")
    assert site.cli("status").returncode == 0
    assert service.stop() == 0

    stopped = site.cli("status")

    assert stopped.returncode == 3, stopped.stdout + stopped.stderr
    expected = (
        f"health     no syncd daemon (syncd run) serves {site.state_dir}, "
        "and the last real run, 1, was the daemon's\n"
    )
    assert expected in stopped.stdout
    assert stopped.stderr == ""  # told once
    assert site.cli("sync", "--yes").returncode == 0  # syncd-sync.timer's runs from now on
    timer = site.cli("status")
    assert timer.returncode == 0, timer.stdout + timer.stderr
    assert "none expected: the last real run, 2, was a shell sync" in timer.stdout


def test_a_daemon_whose_last_run_failed_is_unhealthy(site: Site, emulator: RunningEmulator) -> None:
    site.configure(platform={"retry_attempts": 1})
    emulator.set_faults(down=True)
    service = site.start()
    service.notify.status("last run 1 failed")

    failed = site.cli("status")

    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert f"daemon     running, pid {service.pid}" in failed.stdout
    assert "health     the last run, 1, failed at " in failed.stdout
    assert failed.stderr == ""
    assert service.stop() == 0


def test_a_daemon_that_never_succeeded_is_judged_from_its_start(site: Site, daemon: None) -> None:
    site.configure(status={"max_success_age_minutes": 60})  # it started 2 hours ago

    never = site.cli("status")

    assert never.returncode == 1
    assert "health     no run has succeeded for 60 minutes (none yet;" in never.stdout
    site.configure(status={"max_success_age_minutes": 180})
    assert site.cli("status").returncode == 0


def test_a_broken_settings_file_is_said_beside_the_running_daemon_s_health(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    service = site.start()
    service.ready()
    good = site.config.read_text(encoding="utf-8")
    site.config.write_text(good + "\n[sync]\nmax_removalz = 3\n", encoding="utf-8")  # broken

    text = site.cli("status")
    document = site.cli("status", "--output", "json")
    service.stop()

    # The daemon keeps the settings it loaded and syncs on: healthy, and the file named.
    assert text.returncode == 0, text.stdout + text.stderr
    first = text.stdout.splitlines()[0]
    assert first.startswith("settings   BROKEN: ") and str(site.config) in first, text.stdout
    assert "the daemon runs on the settings it loaded before" in first
    assert "health     ok" in text.stdout
    found = json.loads(document.stdout)
    assert document.returncode == 0 and found["healthy"] is True
    assert "max_removalz" in found["settings_problem"]
