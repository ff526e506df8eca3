"""Approve, then apply: `syncd sync --dry-run --save-plan FILE`, review, `syncd apply FILE`."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncd.errors import ConfigError
from syncd.model import Kind
from syncd.plan import Action, Change, Plan, Snapshot
from syncd.run import saved_plan
from tests.engine.company import World, department, employee
from tests.support.admin import AnotherAdmin
from tests.support.cli import syncd
from tests.support.examples import examples
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


# ---------------------------------------------------------------- a review holds once, as seen


def apply(world: World, capsys: pytest.CaptureFixture[str], plan: Path) -> tuple[int, str]:
    return syncd(capsys, "apply", str(plan), "-c", str(config(world)))


def locked(world: World, username: str) -> bool:
    person = next(e for e in world.emulator.state()["employees"] if e["username"] == username)
    return bool(person["locked"])


def test_the_same_situation_saves_the_same_fingerprints(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    AnotherAdmin(synced.emulator).lock("cat")  # an unlock counted as access granted
    synced.company.person("bob")["mobile"] = "13999999999"
    first = json.loads(save(synced, capsys).read_text(encoding="utf-8"))
    again = json.loads(save(synced, capsys).read_text(encoding="utf-8"))
    assert first["run_id"] != again["run_id"]
    assert first["fingerprints"]["changes"] == again["fingerprints"]["changes"]
    assert {k: v for k, v in first["fingerprints"]["parts"].items() if k != "run_id"} == {
        k: v for k, v in again["fingerprints"]["parts"].items() if k != "run_id"
    }


def test_a_plan_reviewed_for_one_reason_is_not_applied_for_another(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    # Monday: another admin locked bob, whom the source lists active: the plan puts that right.
    AnotherAdmin(synced.emulator).lock("bob")
    plan = save(synced, capsys)
    assert "locked on the platform; active in the source" in plan.read_text(encoding="utf-8")
    # Tuesday: bob leaves, and is locked as departed.
    synced.company.person("bob")["status"] = "departed"
    assert synced.sync().exit_code == 0 and locked(synced, "bob")
    # Wednesday: an export reads everyone active: a plain run is blocked, whatever the number.
    synced.company.person("bob")["status"] = "active"
    assert synced.sync(dry_run=True).exit_code == 2

    code, output = apply(synced, capsys, plan)  # the same unlock, made for another reason

    assert code == 2 and "stale" in output and "made for other reasons" in output, output
    assert locked(synced, "bob")


def test_a_saved_plan_is_applied_once(synced: World, capsys: pytest.CaptureFixture[str]) -> None:
    admin = AnotherAdmin(synced.emulator)
    admin.lock("cat")
    plan = save(synced, capsys)
    code, output = apply(synced, capsys, plan)
    assert code == 0 and not locked(synced, "cat"), output
    admin.lock("cat")  # locked again: the same unlock, for the same reason, is planned

    code, output = apply(synced, capsys, plan)

    assert code == 2, output
    assert f"the plan saved in {plan}" in output and "was applied already, by run" in output
    assert locked(synced, "cat")


def test_a_plan_does_not_stand_for_a_block_its_review_did_not_show(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("dan")["status"] = "departed"
    synced.company.person("bob")["status"] = "departed"
    assert synced.sync().exit_code == 0 and locked(synced, "bob")
    synced.company.person("bob")["status"] = "active"  # back; dan departed: the read can tell
    plan = save(synced, capsys)
    assert json.loads(plan.read_text(encoding="utf-8"))["always_blocked"] == []
    # dan's row is left out: the read calls nobody departed, and cannot tell who is.
    synced.company.employees = [e for e in synced.company.employees if e["username"] != "dan"]
    blocked = synced.sync(dry_run=True)
    assert blocked.exit_code == 2 and "calls nobody departed" in str(blocked.error)

    code, output = apply(synced, capsys, plan)

    assert code == 2 and "its review did not show" in output, output
    assert "calls nobody departed" in output and locked(synced, "bob")


def test_a_plan_whose_review_showed_the_block_is_applied(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    synced.company.person("bob")["status"] = "departed"
    assert synced.sync().exit_code == 0
    synced.company.person("bob")["status"] = "active"  # nobody departed: blocked, reviewed
    plan = save(synced, capsys)
    saved = json.loads(plan.read_text(encoding="utf-8"))
    assert any("calls nobody departed" in b for b in saved["always_blocked"])

    code, output = apply(synced, capsys, plan)

    assert code == 0 and "(overridden)" in output, output
    assert not locked(synced, "bob")


# ---------------------------------------------------------------- a file edited by hand


def test_a_plan_edited_by_hand_is_refused_and_nothing_is_sent(
    synced: World, capsys: pytest.CaptureFixture[str]
) -> None:
    for username in ("cat", "eve"):
        synced.company.person(username)["status"] = "departed"
    plan = save(synced, capsys)
    saved = json.loads(plan.read_text(encoding="utf-8"))
    saved["changes"] = [c for c in saved["changes"] if c["display"] != "eve"]
    saved["counts"], saved["removals"] = {"employee lock": 1}, 1
    plan.write_text(json.dumps(saved), encoding="utf-8")

    code, output = apply(synced, capsys, plan)

    assert code == 3 and f"plan file {plan}: removals:" in output, output
    assert "edited by hand" in output
    assert not locked(synced, "cat") and not locked(synced, "eve")


@pytest.mark.parametrize(
    ("key", "value", "said"),
    [
        ("removals", "x", "removals is str 'x'"),
        ("changes", "abc", "changes is str 'abc'"),
        ("counts", [], "counts is list []"),
        ("reactivations", -5, "reactivations is int -5"),
        ("always_blocked", "none", "always_blocked is str 'none'"),
    ],
)
def test_a_damaged_value_is_named_with_its_type(
    synced: World, capsys: pytest.CaptureFixture[str], key: str, value: object, said: str
) -> None:
    synced.company.person("bob")["mobile"] = "13999999999"
    plan = save(synced, capsys)
    saved = json.loads(plan.read_text(encoding="utf-8"))
    saved[key] = value
    plan.write_text(json.dumps(saved), encoding="utf-8")

    code, output = apply(synced, capsys, plan)

    assert code == 3 and f"plan file {plan}: {said}" in output, output


_EDITS = st.sampled_from(saved_plan.REVIEWED)
_VALUES: st.SearchStrategy[object] = st.one_of(
    st.integers(-3, 40), st.text(max_size=8), st.none(), st.booleans(), st.just([])
)


@settings(
    max_examples=examples(100),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(edit=st.data())
def test_any_edit_of_what_was_reviewed_is_refused(
    edited_plan: tuple[Path, dict[str, Any]], edit: st.DataObject
) -> None:
    plan, saved = edited_plan
    document = copy.deepcopy(saved)
    key = edit.draw(_EDITS)
    if key == "changes":
        change = edit.draw(st.sampled_from(document["changes"]))
        field = edit.draw(st.sampled_from(sorted(change)))
        change[field] = edit.draw(_VALUES.filter(lambda v: v != change[field]))
    elif key == "counts":
        kind = edit.draw(st.sampled_from(sorted(document["counts"])))
        document["counts"][kind] += edit.draw(st.sampled_from([-1, 1]))
    elif key == "fingerprints":
        which = edit.draw(st.sampled_from(["source", "snapshot", "changes"]))
        was = document[key][which]
        document[key][which] = edit.draw(st.text(min_size=1).filter(lambda v: v != was))
    elif key == "always_blocked":
        document[key].append(edit.draw(st.text(min_size=1)))
    else:
        document[key] = edit.draw(st.integers(0, 40).filter(lambda v: v != document[key]))
    plan.write_text(json.dumps(document), encoding="utf-8")

    with pytest.raises(ConfigError) as refused:
        saved_plan.read(plan)

    assert str(refused.value).startswith(f"plan file {plan}: "), refused.value
    assert key in str(refused.value)


@pytest.fixture
def edited_plan(synced: World, capsys: pytest.CaptureFixture[str]) -> tuple[Path, dict[str, Any]]:
    """A saved plan with an update, a lock and a creation, and its document to edit."""
    synced.company.person("bob")["mobile"] = "13999999999"
    synced.company.person("eve")["status"] = "departed"
    synced.company.employees.append(employee("E9", "zed", "D4"))
    plan = save(synced, capsys)
    assert saved_plan.read(plan).count == 3
    return plan, json.loads(plan.read_text(encoding="utf-8"))


def test_a_sentence_that_counts_days_does_not_make_a_plan_stale() -> None:
    def removal(days: int) -> Plan:
        why = f"missing from the source, locked {days} days ago"
        return Plan((Change(Kind.EMPLOYEE, Action.REMOVE, "E1", "ann", reason=why),))

    # Saved one day, applied the next: the same change, for the same reason.
    assert saved_plan.changes_fingerprint(removal(30), Snapshot()) == (
        saved_plan.changes_fingerprint(removal(31), Snapshot())
    )


def test_an_edited_fingerprint_is_named_as_edited(
    edited_plan: tuple[Path, dict[str, Any]],
) -> None:
    plan, saved = edited_plan
    saved["fingerprints"]["changes"] = "0" * 32
    plan.write_text(json.dumps(saved), encoding="utf-8")
    with pytest.raises(ConfigError, match="fingerprints: it does not give the fingerprint"):
        saved_plan.read(plan)
