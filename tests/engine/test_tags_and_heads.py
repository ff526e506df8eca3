"""Department heads from an HR column, and tags syncd sets beside another admin's, end to
end into the emulator (README "Groups to tags", "Department heads")."""

from __future__ import annotations

import csv
import tempfile
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import syncd.sources.csv
from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from syncd.model import Directory
from syncd.run.runner import RunRequest, run_sync
from tests.engine.company import World, small_company
from tests.support.admin import AnotherAdmin
from tests.support.examples import examples

Tag = tuple[str, str]
ORG = "/v1/admin/organizations/acme"


def write_departments(world: World, heads: dict[str, str]) -> None:
    """The small company's departments file with a head column (department -> person id)."""
    world.company.write(world.folder)
    with (world.folder / "departments.csv").open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "name", "parent_id", "head"])
        for d in world.company.departments:
            writer.writerow([d["id"], d["name"], d["parent_id"], heads.get(d["id"], "")])


def chiefs(admin: AnotherAdmin, username: str) -> dict[str, bool]:
    """The person's positions: node serial_no -> chief."""
    serial = {n["id"]: n.get("serial_no") for n in admin.emulator.state()["nodes"]}
    return {str(serial[p["org_id"]]): p["chief"] for p in admin.employee(username)["positions"]}


@pytest.fixture
def headed(world: World) -> World:
    world.more_settings += ["[source.csv.department_columns]", 'head = "head"']
    world.sync_settings.update(skip_unchanged=False)
    return world


def test_a_head_column_makes_chief_and_a_new_head_clears_the_old(
    headed: World, emulator: RunningEmulator
) -> None:
    admin = AnotherAdmin(emulator)
    # bob heads R&D (he is there); ann is named for Sales but works in Head Office.
    write_departments(headed, {"D2": "E2", "D4": "E1"})
    result = run_sync(headed.settings(), RunRequest())
    assert result.exit_code == EXIT_OK, result.error
    assert chiefs(admin, "bob") == {"D2": True}
    assert chiefs(admin, "ann") == {"D1": False}  # no Sales position is made up for her
    assert chiefs(admin, "dan") == {"D4": False}
    assert result.plan is not None
    [problem] = [n.message for n in result.plan.notes if n.kind == "source"]
    assert "'Sales' (D4)" in problem and "'ann' (E1)" in problem and "no position" in problem
    # cat heads Sales, her secondary position; R&D gets no head: bob's flag goes.
    write_departments(headed, {"D4": "E3"})
    result = run_sync(headed.settings(), RunRequest())
    assert result.exit_code == EXIT_OK, result.error
    assert chiefs(admin, "bob") == {"D2": False}
    assert chiefs(admin, "cat") == {"D3": False, "D4": True}
    assert result.plan is not None
    messages = [c.message for c in result.plan.changes]
    assert any("bob" in m and "positions" in m for m in messages)
    assert any("cat" in m and "head" in m for m in messages)


def test_head_changes_count_as_updates_for_the_guard(
    headed: World, emulator: RunningEmulator
) -> None:
    write_departments(headed, {})
    assert run_sync(headed.settings(), RunRequest()).exit_code == EXIT_OK
    # Every department gets a head at once: four of five people updated, past both limits.
    write_departments(headed, {"D1": "E1", "D2": "E2", "D3": "E5", "D4": "E4"})
    result = run_sync(headed.settings(max_updates=3, max_update_ratio=0.5), RunRequest())
    assert result.outcome == "blocked"
    assert chiefs(AnotherAdmin(emulator), "ann") == {"D1": False}  # nothing was sent


# ------------------------------------------------------------------ tags, generated

SYNCD_TAGS: list[Tag] = [("Teams", "A"), ("Teams", "B"), ("Duty", "On call")]
ADMIN_TAGS: list[Tag] = [("VIP", "Gold"), ("Site", "HQ"), ("Teams", "A")]  # one overlaps
USERS = ["ann", "bob", "cat", "dan", "eve"]
IDS = dict(zip(USERS, ["E1", "E2", "E3", "E4", "E5"], strict=True))

tag_sets = st.frozensets(st.sampled_from(SYNCD_TAGS))
rounds = st.lists(
    st.tuples(
        st.fixed_dictionaries({u: tag_sets for u in USERS}),  # syncd's tags: the groups
        st.dictionaries(st.sampled_from(USERS), st.frozensets(st.sampled_from(ADMIN_TAGS))),
    ),
    min_size=1,
    max_size=3,
)


def platform_tags(admin: AnotherAdmin, username: str) -> set[Tag]:
    record = admin.call("GET", f"{ORG}/employees/{admin.employee(username)['id']}")
    return {(t["group"], t["tag"]) for t in record["tag_names"]}


@pytest.fixture
def groups(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, frozenset[Tag]]]:
    """The tags the source's groups give each person id: set by the test, read by syncd
    (the CSV read is the real one; its people get these tags as an LDAP read would)."""
    given_tags: dict[str, frozenset[Tag]] = {}
    read = syncd.sources.csv.read_csv

    def with_groups(*args: Any, **kwargs: Any) -> Directory:
        directory = read(*args, **kwargs)
        employees = {
            k: e._replace(tags=tuple(sorted(given_tags.get(k, ()))))
            for k, e in directory.employees.items()
        }
        return replace(directory, employees=employees)

    monkeypatch.setattr(syncd.sources.csv, "read_csv", with_groups)
    yield given_tags


@settings(
    max_examples=examples(12),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=rounds)
def test_syncd_never_removes_a_tag_it_did_not_set_and_its_tags_converge(
    emulator: RunningEmulator,
    groups: dict[str, frozenset[Tag]],
    history: list[tuple[dict[str, frozenset[Tag]], dict[str, frozenset[Tag]]]],
) -> None:
    emulator.reset(data=True)
    admin = AnotherAdmin(emulator)
    expected: dict[str, set[Tag]] = {u: set() for u in USERS}  # the platform's, modelled
    syncd_set: dict[str, set[Tag]] = {u: set() for u in USERS}  # what syncd set last
    with tempfile.TemporaryDirectory() as folder:
        world = World(Path(folder), emulator, small_company())
        world.sync_settings.update(
            skip_unchanged=False, max_updates=1000, max_update_ratio=1.0, max_field_changes=1000
        )
        for wanted, by_hand in history:
            groups.clear()
            groups.update({IDS[u]: tags for u, tags in wanted.items()})
            result = world.sync()
            assert result.exit_code == EXIT_OK, result.error
            for u in USERS:
                dropped = syncd_set[u] - wanted[u]
                expected[u] = (expected[u] - dropped) | wanted[u]
                syncd_set[u] = set(wanted[u])
                assert platform_tags(admin, u) == expected[u], u
            # Another admin adds tags of their own, by hand.
            for u, tags in by_hand.items():
                expected[u] |= tags
                names = [{"group": g, "tag": t} for g, t in sorted(expected[u])]
                admin.edit(u, tag_names=names)
        # A last run with the same groups: nothing the admin set and syncd did not is gone.
        result = world.sync()
        assert result.exit_code == EXIT_OK, result.error
        for u in USERS:
            assert platform_tags(admin, u) == expected[u], u
            assert syncd_set[u] <= platform_tags(admin, u)


def test_tags_that_cannot_be_read_fail_the_person_and_change_no_tag(
    world: World, emulator: RunningEmulator, groups: dict[str, frozenset[Tag]]
) -> None:
    admin = AnotherAdmin(emulator)
    world.sync_settings.update(skip_unchanged=False)
    groups["E2"] = frozenset({("Teams", "A")})
    assert world.sync().exit_code == EXIT_OK
    by_hand = [{"group": "Teams", "tag": "A"}, {"group": "VIP", "tag": "Gold"}]
    admin.edit("bob", tag_names=by_hand)
    bob = admin.employee("bob")["id"]
    groups["E2"] = frozenset({("Teams", "B")})
    emulator.set_faults(
        scripted=[
            {
                "match": f"/employees/{bob}",
                "method": "GET",
                "fault": "error",
                "status": 202012,
                "message": "not now",
            }
        ]
    )
    result = world.sync()
    assert result.outcome == "partial"
    assert platform_tags(admin, "bob") == {("Teams", "A"), ("VIP", "Gold")}  # untouched
    # Planned again, and done, once the record can be read.
    assert world.sync().exit_code == EXIT_OK
    assert platform_tags(admin, "bob") == {("Teams", "B"), ("VIP", "Gold")}
