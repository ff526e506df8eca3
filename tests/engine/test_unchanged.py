"""A run whose source files, settings and platform are as the last run that planned nothing
found them plans nothing without reading the source; anything else reads and plans. On
both state database engines (``store_url``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from syncd import clock
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from syncd.plan import Action
from syncd.run import runner
from syncd.run.runner import RunResult
from tests.engine.company import World, employee, small_company
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of

DAY_MS = 86_400_000


def settled(world: World) -> RunResult:
    """Synced, then a run that plans nothing and leaves its memo."""
    world.sync_settings.update(max_removal_ratio=1.0)
    assert world.sync().exit_code == EXIT_OK
    quiet = world.sync()
    assert quiet.plan is not None and quiet.plan.changes == ()
    assert quiet.directory is not None  # this one read the source
    return quiet


def skipped(result: RunResult) -> bool:
    return result.directory is None and "unchanged_since" in (result.source or {})


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator, store_url: str | None) -> World:
    return World(tmp_path, emulator, small_company(), database_url=store_url)


def rejected(world: World, run_id: int) -> list[tuple[Any, ...]]:
    return world.query(
        'SELECT "where", reason FROM rejected_rows WHERE run_id = ? ORDER BY seq', run_id
    )


def test_an_unchanged_source_is_not_read_again_and_its_report_says_what_the_read_found(
    world: World,
) -> None:
    world.company.employees.append(employee("E9", "", "D2"))  # a row rejected every time
    quiet = settled(world)
    writes = world.writes()
    again = world.sync()
    assert skipped(again) and again.exit_code == EXIT_OK
    assert again.plan is not None and again.plan.changes == ()
    assert again.source == {**(quiet.source or {}), "unchanged_since": quiet.run_id}
    assert any("source unchanged since run" in n.message for n in again.plan.notes)
    assert [g.name for g in again.guards] == [g.name for g in quiet.guards]
    assert rejected(world, again.run_id) == rejected(world, quiet.run_id) != []
    assert world.writes() == writes
    assert skipped(world.sync(dry_run=True))


def test_a_changed_byte_in_the_export_is_read_and_planned(world: World) -> None:
    settled(world)
    world.company.person("bob")["mobile"] = "13900000000"
    result = world.sync()
    assert not skipped(result)
    assert [(c.action, c.display) for c in plan_of(result).changes] == [(Action.UPDATE, "bob")]


def test_a_changed_setting_is_read_and_planned(world: World) -> None:
    settled(world)
    result = world.sync(sync={"remove_after_days": 7})
    assert not skipped(result)


def test_an_export_put_back_as_it_was_after_a_change_was_applied_is_planned_again(
    world: World,
) -> None:
    settled(world)
    before = world.company.person("bob")["mobile"]
    world.company.person("bob")["mobile"] = "13900000000"
    assert world.sync().exit_code == EXIT_OK  # applied: the platform has the new mobile
    world.company.person("bob")["mobile"] = before  # the memo's bytes again
    result = world.sync()
    assert not skipped(result)
    assert [c.display for c in plan_of(result).changes] == ["bob"]
    assert world.platform().same_as(world.company.expected())


@pytest.mark.parametrize(
    "change",
    [
        lambda admin: admin.delete_person("bob"),
        lambda admin: admin.lock("cat"),
        lambda admin: admin.edit("dan", mobile="13700000000"),
        lambda admin: admin.move_person("ann", "D4"),
        lambda admin: admin.rename_node("D3", "Platform"),
        lambda admin: admin.move_node("D4", "D2"),
        lambda admin: admin.add_node("Lab", "D3"),
    ],
    ids=["delete", "lock", "edit", "move-person", "rename-node", "move-node", "foreign-node"],
)
def test_a_change_on_the_platform_after_an_unchanged_run_is_seen_and_put_back(
    world: World, change: Callable[[AnotherAdmin], object]
) -> None:
    settled(world)
    assert skipped(world.sync())
    change(AnotherAdmin(world.emulator))
    result = world.sync()
    assert not skipped(result) and result.exit_code == EXIT_OK
    assert world.platform().same_as(world.company.expected())
    assert plan_of(world.sync()).changes == ()


def test_the_end_of_a_grace_period_is_planned_even_with_nothing_else_changed(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.sync_settings.update(leaver_policy="lock_then_remove", remove_after_days=2)
    settled(world)
    world.company.employees.remove(world.company.person("eve"))
    world.sync()  # eve locked: two days of grace
    assert world.platform().people["eve"][4] is True
    assert not skipped(world.sync())  # plans nothing, and leaves the memo
    assert skipped(world.sync())
    later = clock.now_ms() + 3 * DAY_MS
    monkeypatch.setattr(runner, "now_ms", lambda: later)  # three days on
    result = world.sync()
    assert not skipped(result)
    assert [(c.action, c.display) for c in plan_of(result).changes] == [(Action.REMOVE, "eve")]
    assert "eve" not in world.platform().people


def test_skip_unchanged_false_reads_and_plans_every_run(world: World) -> None:
    world.sync_settings.update(skip_unchanged=False)
    settled(world)
    assert not skipped(world.sync())
