"""``after_run``: retention and the administrators' notification, against the emulator."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest

from syncd import snapshot as store
from syncd.config import Settings
from syncd.run.notifications import notify
from syncd.run.runs import DAY_MS
from tests.engine.company import World

Configure = Callable[..., Settings]

REASONS = [
    {"field": "username", "pattern": "^(bad1|eve)$", "message": "reason A"},
    {"field": "username", "pattern": "^bad2$", "message": "reason B"},
    {"field": "username", "pattern": "^formula1$", "message": "reason C"},
    {"field": "username", "pattern": "^dan$", "message": "reason D"},
]


def messages(world: World) -> list[dict[str, Any]]:
    return list(world.emulator.state()["messages"])


def sync_and_report(world: World, settings: Settings, **request: Any) -> int:
    from syncd.run.runner import RunRequest, run_sync

    world.company.write(world.folder)
    return run_sync(settings, RunRequest(**request)).run_id  # the runner calls after_run


def test_a_run_with_failures_notifies_with_the_top_three_reasons(
    world: World, reports_settings: Configure
) -> None:
    settings = reports_settings(notify_usernames=["ann", "bob"])
    world.emulator.set_faults(reject=REASONS)
    run_id = sync_and_report(world, settings)
    (sent,) = messages(world)
    assert sent["type"] == "TEXT" and sent["delivered_to"] == ["ann", "bob"]
    content = sent["body"]["content"]
    lines = content.splitlines()
    assert lines[0].startswith(f"syncd run {run_id}: partial (exit 1) on ")
    assert lines[1] == "7 created, 5 failed"
    assert lines[2:5] == ["2 × reason A", "1 × reason B", "1 × reason C"]  # not reason D
    assert lines[-1] == f"report: syncd reports show {run_id}"


def test_a_blocked_run_notifies(world: World, reports_settings: Configure) -> None:
    settings = reports_settings(notify_usernames=["ann"])
    sync_and_report(world, settings)  # partial: bad1, bad2 and formula1 get created too
    assert messages(world) == []
    world.company.employees = world.company.employees[:2]
    run_id = sync_and_report(world, settings)
    (sent,) = messages(world)
    content = sent["body"]["content"]
    assert f"run {run_id}: blocked (exit 2)" in content
    assert "planned: 6 locked" in content
    assert "blocked by max_removals: 6 removals planned" in content
    assert f"syncd reports show {run_id}" in content


def test_ok_runs_dry_runs_and_an_empty_list_notify_nobody(
    world: World, reports_settings: Configure
) -> None:
    default = reports_settings()
    assert default.reports.notify_usernames == []  # off unless configured
    world.emulator.set_faults(reject=REASONS)
    run_id = sync_and_report(world, default)
    assert outcome(world, run_id) == "partial"
    assert notify(default, store.StateStore.open(default.database), run_id) is False
    world.emulator.set_faults()
    settings = reports_settings(notify_usernames=["ann"])
    run_id = sync_and_report(world, settings)
    assert outcome(world, run_id) == "ok"
    world.company.employees = world.company.employees[:2]
    run_id = sync_and_report(world, settings, dry_run=True)
    assert outcome(world, run_id) == "blocked"  # only a dry run: whoever ran it has seen it
    assert messages(world) == []


def outcome(world: World, run_id: int) -> str:
    with sqlite3.connect(world.folder / "state" / "syncd.db") as conn:
        return str(conn.execute("SELECT outcome FROM runs WHERE id = ?", (run_id,)).fetchone()[0])


def test_a_failure_to_notify_is_logged_never_raised(
    world: World, reports_settings: Configure, caplog: pytest.LogCaptureFixture
) -> None:
    world.emulator.set_faults(reject=REASONS)
    settings = reports_settings(notify_usernames=["nobody"])
    with caplog.at_level(logging.WARNING, logger="syncd.notifications"):
        run_id = sync_and_report(world, settings)  # the platform knows no such user
    assert messages(world) == []
    assert f"run {run_id}: could not notify nobody" in caplog.text
    state = store.StateStore.open(settings.database)
    world.emulator.set_faults(down=True)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="syncd.notifications"):
        assert notify(settings, state, run_id) is False
    assert "could not notify" in caplog.text and "PlatformUnavailable" in caplog.text
    assert "demo-secret" not in caplog.text


def test_after_run_applies_retention(world: World, reports_settings: Configure) -> None:
    settings = reports_settings(keep_days=7)
    for _ in range(3):
        sync_and_report(world, settings)
    database = world.folder / "state" / "syncd.db"
    with sqlite3.connect(database) as conn:
        conn.execute("UPDATE runs SET started_at = started_at - ? WHERE id <= 2", (8 * DAY_MS,))
    run_id = sync_and_report(world, settings)
    with sqlite3.connect(database) as conn:
        ids = [r[0] for r in conn.execute("SELECT id FROM runs ORDER BY id")]
        orphans = conn.execute(
            "SELECT COUNT(*) FROM run_items WHERE run_id NOT IN (SELECT id FROM runs)"
        ).fetchone()[0]
    assert ids == [3, run_id] and orphans == 0
