"""``syncd run`` as a service: a real process, its notify messages, signals, lock and state."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
from itertools import pairwise
from pathlib import Path
from typing import Any

import httpx

from syncd.emulator import RunningEmulator
from syncd.run.lock import run_lock
from tests.support.cli import SYNCD
from tests.support.processes import free_port
from tests.support.traffic import requests_to
from tests.support.waiting import scaled, wait_until

from .support import DEADLINE, EMPLOYEES, Site, platform_matches_source, samples, write_csv


def slow_employee_imports(emulator: RunningEmulator, count: int = 10) -> None:
    """Each import-employees request takes 1.5 s: a run stays in its apply phase a while."""
    slow = {"match": "import-employees", "fault": "latency", "latency_ms": 1500, "count": count}
    emulator.set_faults(scripted=[slow])


def test_scheduled_runs_follow_one_another_with_ready_watchdog_and_status(site: Site) -> None:
    site.configure(schedule={"interval_seconds": 1})
    service = site.start(watchdog_usec=200_000)

    ready = service.ready()
    assert "next run" in ready["STATUS"]
    service.notify.status("last run 1 ok")
    status = service.notify.status("last run 2 ok")
    assert "next run" in status and "(full read" in status
    assert service.stop() == 0

    assert service.notify.count("WATCHDOG") >= 2
    assert service.notify.count("STOPPING") == 1
    runs = site.runs()
    assert len(runs) >= 2
    assert {r["trigger"] for r in runs} == {"schedule"}
    assert {r["outcome"] for r in runs} == {"ok"}
    for earlier, later in pairwise(runs):
        assert earlier["finished_at"] <= later["started_at"], (earlier, later)


def test_sigterm_during_a_run_interrupts_it_and_the_next_start_recovers(
    site: Site, emulator: RunningEmulator
) -> None:
    people = EMPLOYEES + [(f"X{n}", f"user{n}", f"User {n}", "D3") for n in range(20)]
    write_csv(site.root, people)
    site.configure(platform={"batch_size": 1})
    slow_employee_imports(emulator, count=len(people))
    service = site.start()
    service.ready()
    wait_until(lambda: requests_to(emulator, "import-employees"), "the first employee batch")

    service.send(signal.SIGTERM)

    assert service.wait() == 0
    assert service.notify.count("STOPPING") == 1
    (run,) = site.runs()
    assert run["outcome"] == "interrupted"
    assert len(emulator.state()["employees"]) < len(people)  # it stopped between batches

    emulator.set_faults()
    again = site.start()
    again.notify.status("last run 2 ok")
    assert again.stop() == 0
    assert [r["outcome"] for r in site.runs()] == ["interrupted", "ok"]
    platform_matches_source(emulator, people)


def test_a_run_that_outlasts_the_stop_timeout_is_abandoned_and_recovered_next_start(
    site: Site, emulator: RunningEmulator
) -> None:
    site.configure(platform={"batch_size": 1}, schedule={"stop_timeout_seconds": 1})
    slow = {"match": "import-employees", "fault": "latency", "latency_ms": 8000, "count": 1}
    emulator.set_faults(scripted=[slow])
    service = site.start()
    service.ready()
    wait_until(lambda: requests_to(emulator, "import-employees"), "the first employee batch")

    service.send(signal.SIGTERM)

    assert service.wait() == 0
    assert "the run did not stop within 1 s" in service.log()
    assert [r["outcome"] for r in site.runs()] == ["running"]  # left for the next start
    # The emulator drops the abandoned batch: its sender is gone before the body is read.
    again = site.start()
    again.notify.status("last run 2 ok")
    assert again.stop() == 0
    assert [r["outcome"] for r in site.runs()] == ["interrupted", "ok"]
    platform_matches_source(emulator)


def test_a_second_stop_signal_exits_at_once(site: Site, emulator: RunningEmulator) -> None:
    # Slow down a read: a request left unanswered by the exit changes nothing later.
    slow_read = {"match": "page-orgs", "fault": "latency", "latency_ms": 10_000, "count": 1}
    emulator.set_faults(scripted=[slow_read])
    service = site.start()
    service.ready()
    wait_until(lambda: requests_to(emulator, "page-orgs"), "the run reads the platform")
    service.send(signal.SIGTERM)
    service.notify.wait_for(lambda m: "STOPPING" in m, "STOPPING=1")

    service.send(signal.SIGTERM)

    assert service.wait() == 128 + signal.SIGTERM
    assert "second stop signal: exiting at once" in service.log()


def test_a_shell_sync_while_the_daemon_runs_is_refused_and_status_names_the_holder(
    site: Site, emulator: RunningEmulator
) -> None:
    # One employee per 1.5 s batch, 40 of them: the run holds the lock far longer than
    # two shell commands take to start, and a stop waits for one batch only.
    many = [(f"X{n}", f"user{n}", f"User {n}", "D1") for n in range(40)]
    write_csv(site.root, EMPLOYEES + many)
    site.configure(platform={"batch_size": 1})
    slow_employee_imports(emulator, count=len(many))
    service = site.start()
    service.ready()
    wait_until(lambda: requests_to(emulator, "import-employees"), "the first employee batch")

    shell = site.cli("sync", "--yes")
    status = site.cli("status")

    assert shell.returncode == 3, shell.stderr
    assert "another syncd process is running" in shell.stderr
    assert f"schedule sync, pid {service.pid}" in shell.stderr
    assert status.returncode == 0, status.stdout + status.stderr
    assert f"run lock   held by schedule sync, pid {service.pid}" in status.stdout
    assert "run in progress" in status.stdout
    assert service.stop() == 0
    assert len(site.runs()) == 1  # the refused shell sync recorded no run


def test_a_tick_that_finds_the_lock_held_by_the_shell_is_skipped(site: Site) -> None:
    site.configure(schedule={"interval_seconds": 1})
    with run_lock(site.state_dir, "shell sync"):
        service = site.start()
        skipped = service.notify.status("run skipped")
        assert f"shell sync, pid {os.getpid()}" in skipped

    service.notify.status("last run 1 ok")
    assert service.stop() == 0
    assert "scheduled full read skipped: another syncd process is running" in service.log()


def test_sighup_with_broken_settings_keeps_the_old_ones_and_a_good_file_replaces_them(
    site: Site,
) -> None:
    service = site.start()
    service.notify.status("last run 1 ok")
    site.config.write_text("this is [not toml\n", encoding="utf-8")

    service.send(signal.SIGHUP)

    failed = service.notify.status("settings reload failed")
    assert "running on the previous settings" in failed and "not valid TOML" in failed
    assert "last run 1 ok" in failed
    service.notify.wait_for(lambda m: "WATCHDOG" in m, "a watchdog ping after the failed reload")
    assert service.process.poll() is None

    site.configure(schedule={"interval_seconds": 1})
    service.send(signal.SIGHUP)

    reloaded = service.notify.status("last run 2 ok")  # the new, short interval
    assert "reload failed" not in reloaded
    assert service.stop() == 0


def test_status_shows_the_daemon_its_next_run_and_the_last_runs(site: Site) -> None:
    service = site.start()
    service.notify.status("last run 1 ok")

    running = site.cli("status")
    second = site.cli("run")

    assert running.returncode == 0, running.stdout + running.stderr
    out = running.stdout
    assert f"daemon     running, pid {service.pid}" in out
    assert "next run   " in out and "(full read)" in out
    assert "run lock   free" in out
    assert "last runs" in out and "schedule full" in out and " ok " in out
    assert second.returncode == 3
    assert f"another syncd daemon serves {site.state_dir} (pid {service.pid}" in second.stderr
    assert service.stop() == 0

    stopped = site.cli("status")
    assert stopped.returncode == 3
    assert "daemon     not running (stopped" in stopped.stdout
    assert "health     no syncd daemon (syncd run) serves" in stopped.stdout


def test_metrics_answer_on_loopback(site: Site, emulator: RunningEmulator) -> None:
    port = free_port()
    site.configure(metrics={"enabled": True, "port": port})
    emulator.set_faults(reject=[{"field": "username", "pattern": "^bob$", "message": "no"}])
    service = site.start()
    service.notify.status("last run 1 partial")

    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=scaled(10)).text

    assert 'syncd_runs_total{outcome="partial"} 1.0' in text
    assert 'syncd_last_run_outcome{outcome="partial"} 1.0' in text
    assert 'syncd_items_total{action="create",kind="employee",outcome="ok"} 5.0' in text
    assert 'syncd_build_info{python="' in text and 'version="0.2.0"} 1.0' in text
    assert 'syncd_source_records{kind="employee"} 6.0' in text
    assert 'syncd_source_records{kind="department"} 3.0' in text
    assert "syncd_pending_failures 1.0" in text
    for name in (
        "syncd_last_run_timestamp_seconds",
        "syncd_last_success_timestamp_seconds",
        "syncd_last_run_duration_seconds",
        "syncd_last_run_items",
        "syncd_last_run_rejected_rows 0.0",
        "syncd_platform_retries_total",
        "syncd_skipped_runs_total",
        "syncd_next_run_timestamp_seconds",
    ):
        assert name in text
    assert "_created" not in text  # the client library's creation times: noise
    assert "python_gc_objects_collected_total" not in text  # a registry of its own
    # The daemon's process, as any process dashboard reads it: this very process.
    figures = samples(text)
    assert figures["process_resident_memory_bytes"] > 10_000_000
    assert abs(figures["process_start_time_seconds"] - started_at(service.pid)) < 5
    assert (
        figures["process_open_fds"] >= 3
        and figures["process_max_fds"] >= figures["process_open_fds"]
    )
    assert service.stop() == 0


def started_at(pid: int) -> float:
    """When a process started, in seconds since the epoch, from /proc as ps reads it."""
    ticks = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    boot = next(
        float(line.split()[1])
        for line in Path("/proc/stat").read_text().splitlines()
        if line.startswith("btime ")
    )
    return boot + ticks / os.sysconf("SC_CLK_TCK")


def test_a_restarted_daemon_shows_the_last_run_and_success_at_once(site: Site) -> None:
    port = free_port()
    site.configure(metrics={"enabled": True, "port": port})
    first = site.start()
    first.notify.status("last run 1 ok")
    assert first.stop() == 0
    (run,) = site.runs()

    with run_lock(site.state_dir, "shell sync"):  # the new daemon's first run is skipped
        again = site.start()
        again.notify.status("run skipped")
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=scaled(10)).text
    assert again.stop() == 0

    values = samples(text)
    assert "syncd_runs_total" not in values  # counters count this process's runs: none yet
    finished = run["finished_at"] / 1000
    assert values["syncd_last_success_timestamp_seconds"] == finished
    assert values["syncd_last_run_timestamp_seconds"] == finished
    assert values['syncd_last_run_outcome{outcome="ok"}'] == 1
    assert values['syncd_source_records{kind="employee"}'] == 6


def test_a_shell_sync_writes_a_node_exporter_textfile(site: Site) -> None:
    textfile = site.root / "textfile" / "syncd.prom"
    textfile.parent.mkdir()
    site.configure(metrics={"textfile": str(textfile)})

    assert site.cli("sync", "--dry-run").returncode == 0
    assert not textfile.exists()  # a dry run is no run to alert on
    sync = subprocess.run(  # as under the units' UMask=0077
        [str(SYNCD), "sync", "--yes", "--config", str(site.config)], umask=0o077, timeout=DEADLINE
    )
    assert sync.returncode == 0

    assert textfile.stat().st_mode & 0o777 == 0o644  # node-exporter runs as another user

    text = textfile.read_text(encoding="utf-8")
    assert 'syncd_last_run_outcome{outcome="ok"} 1.0' in text
    assert 'syncd_last_run_items{action="create",kind="department",outcome="ok"} 3.0' in text
    assert 'syncd_source_records{kind="employee"} 6.0' in text
    assert "syncd_last_success_timestamp_seconds" in text and "syncd_build_info" in text
    assert "_total" not in text  # no counters: each sync is a process of its own
    assert [p.name for p in textfile.parent.iterdir()] == ["syncd.prom"]  # replaced whole


def test_sighup_announces_the_reload_and_keeps_the_next_run(site: Site) -> None:
    service = site.start()
    service.notify.status("last run 1 ok")
    before = daemon_record(site)["next_run"]

    service.send(signal.SIGHUP)

    reloading = service.notify.wait_for(lambda m: "RELOADING" in m, "RELOADING=1")
    assert reloading["RELOADING"] == "1" and int(reloading["MONOTONIC_USEC"]) > 0
    service.notify.wait_for(lambda m: m.get("READY") == "1", "READY=1 after the reload")
    assert daemon_record(site)["next_run"] == before  # not pushed back by the reload

    site.configure(schedule={"interval_seconds": 7200})
    service.send(signal.SIGHUP)
    service.notify.wait_for(lambda m: m.get("READY") == "1", "READY=1 after the second reload")
    assert daemon_record(site)["next_run"] > before  # a new interval: a new schedule
    assert service.stop() == 0


def daemon_record(site: Site) -> dict[str, Any]:
    with sqlite3.connect(site.state_dir / "syncd.db") as db:
        (value,) = db.execute("SELECT value FROM cursors WHERE name LIKE 'daemon:%'").fetchone()
    record: dict[str, Any] = json.loads(value)
    return record


def test_json_log_lines_parse_and_hold_no_secret(site: Site) -> None:
    site.configure(log_format="json")
    service = site.start()
    service.notify.status("last run 1 ok")
    assert service.stop() == 0

    lines = [line for line in service.log().splitlines() if line.strip()]
    entries = [json.loads(line) for line in lines]
    messages = [e["message"] for e in entries]
    assert any(m.startswith("run 1 ok (full read): 9 applied") for m in messages), messages
    assert "syncd daemon stopped" in messages
    assert all({"time", "level", "logger", "message"} <= e.keys() for e in entries)
    assert "demo-secret" not in service.log()
