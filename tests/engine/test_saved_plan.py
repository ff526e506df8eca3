"""Approve, then apply: `syncd sync --dry-run --save-plan FILE`, review, `syncd apply FILE`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.engine.company import World, department, employee
from tests.support.admin import AnotherAdmin
from tests.support.cli import syncd
from tests.support.runs import plan_of


@pytest.fixture
def synced(world: World) -> World:
    world.sync_settings["max_removal_ratio"] = 1.0
    assert world.sync().exit_code == 0
    return world


def save(world: World, capsys: pytest.CaptureFixture[str]) -> Path:
    world.company.write(world.folder)
    world.settings()
    plan = world.folder / "plan.json"
    code, output = syncd(capsys, "sync", "--save-plan", str(plan), "-c", str(config(world)))
    assert code in (0, 2), output
    assert f"the plan is in {plan}" in output
    return plan


def config(world: World) -> Path:
    return world.folder / "syncd.toml"


def test_a_saved_plan_is_reviewable_and_applied_as_it_was_saved(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    synced.company.employees.append(employee("E9", "zed", "D4"))
    plan = save(synced, capsys)
    saved = json.loads(plan.read_text(encoding="utf-8"))
    assert oct(plan.stat().st_mode & 0o777) == "0o600"
    assert [(c["action"], c["display"]) for c in saved["changes"]] == [
        ("update", "bob"),
        ("create", "zed"),
    ]
    bob = saved["changes"][0]
    assert (bob["before"]["mobile"], bob["after"]["mobile"]) == ("13800000002", "13999999999")
    people = {e["username"]: e for e in synced.emulator.state()["employees"]}
    assert people["bob"]["mobile"] == "13800000002" and "zed" not in people  # nothing sent

    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 0, output
    assert "guard saved_plan: ok" in output and "the same 2 changes are planned now" in output
    assert synced.platform().same_as(synced.company.expected())
    assert plan_of(synced.sync()).changes == ()


def test_a_saved_plan_counts_in_order_and_names_departments_by_path(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.departments.append(department("D5", "Support", "D1"))
    synced.company.employees = [e for e in synced.company.employees if e["username"] != "eve"]
    synced.company.person("dan")["department"] = "D3"
    synced.company.employees.append(employee("E9", "zed", "D5"))

    saved = json.loads(save(synced, capsys).read_text(encoding="utf-8"))

    assert list(saved["counts"]) == [
        "department create",
        "employee create",
        "employee update",
        "employee lock",
    ]
    dan = next(c for c in saved["changes"] if c["display"] == "dan")
    assert dan["after"]["positions"][0]["department"] == "D3"  # ids stay, for scripts
    assert saved["departments"] == {
        "D1": "Acme/Head Office",  # the new department's parent
        "D3": "Acme/Head Office/R&D/Backend",
        "D4": "Acme/Head Office/Sales",
        "D5": "Acme/Head Office/Support",
    }


def test_the_same_changes_from_a_moved_source_are_applied_and_said_so(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    # The source moves, but not the changes: a row rejected (no username) plans nothing.
    synced.company.employees.append(employee("E9", "", "D1"))
    synced.company.write(synced.folder)

    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))

    assert code == 0, output
    moved = "the source changed since the plan was made; the changes are the same: applying"
    assert f"  saved_plan: {moved}\n" in output  # on screen, before the apply
    assert "guard saved_plan: ok" in output
    bob = next(e for e in synced.emulator.state()["employees"] if e["username"] == "bob")
    assert bob["mobile"] == "13999999999"
    code, report = syncd(capsys, "reports", "show", "latest", "-c", str(config(synced)))
    assert moved in report  # and in the report's notes


def test_a_plan_is_refused_once_the_source_moved(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    synced.company.person("cat")["mobile"] = "13888888888"
    synced.company.write(synced.folder)

    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 2, output
    assert "guard saved_plan: BLOCKED" in output and "stale: the source changed" in output
    assert "syncd sync --dry-run --save-plan" in output
    bob = next(e for e in synced.emulator.state()["employees"] if e["username"] == "bob")
    assert bob["mobile"] == "13800000002"  # nothing was sent


def test_a_plan_is_refused_once_another_run_applied_changes(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    assert synced.sync().exit_code == 0  # applied by a run in between
    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 2 and "stale: the state database changed" in output, output


def test_a_plan_is_refused_once_the_platform_moved(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    AnotherAdmin(synced.emulator).lock("cat")
    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 2 and "stale: the platform changed" in output, output


def test_reviewed_removals_need_no_allow_removals(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.sync_settings.update(max_removals=1, leaver_policy="remove")
    synced.company.employees = synced.company.employees[:2]  # three leavers
    plan = save(synced, capsys)  # the dry run is blocked: 3 removals over the limit of 1
    assert json.loads(plan.read_text(encoding="utf-8"))["removals"] == 3

    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 0, output
    assert "(overridden)" in output
    assert sorted(synced.platform().people) == ["ann", "bob"]


def test_a_plan_for_another_platform_or_a_damaged_file_is_refused(
    synced: World, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    saved = json.loads(plan.read_text(encoding="utf-8"))
    saved["target"]["org_code"] = "other"
    plan.write_text(json.dumps(saved), encoding="utf-8")
    code, output = syncd(capsys, "apply", str(plan), "-c", str(config(synced)))
    assert code == 2 and "not for these settings" in output, output

    damaged = tmp_path / "damaged.json"
    damaged.write_text("{not json", encoding="utf-8")
    code, output = syncd(capsys, "apply", str(damaged), "-c", str(config(synced)))
    assert code == 3 and f"plan file {damaged}: not JSON" in output, output
