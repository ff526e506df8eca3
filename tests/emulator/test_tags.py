"""Section G's employee tags (``tags`` ids read first, ``tag_names`` group and tag) and
positions' ``chief``, as the emulator keeps and returns them."""

from __future__ import annotations

from typing import Any

import orjson

from syncd.emulator import EmulatorOptions
from syncd.emulator.state import EmulatorState
from tests.emulator.support import ORG, Api
from tests.support.payloads import dept, person

ENGINEERS = {"group": "Teams", "tag": "Engineers"}
ONCALL = {"group": "Duty", "tag": "On call"}


def detail(api: Api, username: str) -> dict[str, Any]:
    found: dict[str, Any] = api.ok("GET", f"{ORG}/employees/{api.employee(username)['id']}")
    return found


def test_tag_names_give_ids_and_both_forms_show_them(api: Api) -> None:
    result = api.import_employees(
        [person("ann", tag_names=[ENGINEERS, ONCALL]), person("bob", tag_names=[ENGINEERS])]
    )
    assert result["failures"] == {}
    ann, bob = api.employee("ann"), api.employee("bob")
    assert len(ann["tags"]) == 2 and all(isinstance(i, int) for i in ann["tags"])
    # One id per (group, tag) in the domain: bob's Engineers is ann's.
    assert bob["tags"] == [ann["tags"][0]] and bob["tag_names"] == ["Engineers"]
    assert ann["tag_names"] == ["Engineers", "On call"]
    assert detail(api, "ann")["tag_names"] == [ENGINEERS, ONCALL]
    assert detail(api, "ann")["tags"] == ann["tags"]


def test_a_body_with_tags_sets_the_whole_list_and_without_keeps_it(api: Api) -> None:
    api.import_employees([person("ann", tag_names=[ENGINEERS, ONCALL])])
    api.import_employees([person("ann", name="Ann Lee")])  # no tags named: kept
    assert detail(api, "ann")["tag_names"] == [ENGINEERS, ONCALL]
    api.import_employees([person("ann", tag_names=[ONCALL])])
    assert detail(api, "ann")["tag_names"] == [ONCALL]
    api.import_employees([person("ann", tag_names=[])])
    assert api.employee("ann")["tags"] == [] and detail(api, "ann")["tag_names"] == []


def test_tags_ids_are_read_first_and_unknown_ids_fail_the_item(api: Api) -> None:
    api.import_employees([person("ann", tag_names=[ENGINEERS, ONCALL])])
    engineers, oncall = api.employee("ann")["tags"]
    # Both forms given: the ids win (the spec: "read first when both tags forms are given").
    api.import_employees([person("bob", tags=[oncall], tag_names=[ENGINEERS])])
    assert api.employee("bob")["tags"] == [oncall]
    result = api.import_employees([person("bob", tags=[engineers, 999])])
    assert "tag not found: 999" in result["failures"]["bob"]
    assert api.employee("bob")["tags"] == [oncall]  # a failed item changes nothing


def test_a_tag_needs_a_group_and_a_tag(api: Api) -> None:
    bad: list[Any] = [
        [{"group": "Teams"}],
        [{"tag": "Engineers"}],
        [{"group": " ", "tag": "Engineers"}],
        [{"group": "Teams", "tag": 5}],
        ["Engineers"],
        {"group": "Teams", "tag": "Engineers"},
        [{"group": "Teams", "tag": "Engineers", "tag_property": 3}],
    ]
    result = api.import_employees([person(f"u{n}", tag_names=names) for n, names in enumerate(bad)])
    assert result["successes"] == {}
    assert set(result["failures"]) == {f"u{n}" for n in range(len(bad))}
    assert all("tag" in text for text in result["failures"].values())


def test_the_single_update_sets_tags_and_chief(api: Api) -> None:
    ids = api.import_orgs([dept("Sales")])["successes"]
    created = api.ok("POST", f"{ORG}/employees", json=person("ann", tag_names=[ENGINEERS]))
    employee_id = created["employee_id"]["id"]
    assert created["tag_names"] == [ENGINEERS]
    updated = api.ok(
        "POST",
        f"{ORG}/employees/{employee_id}",
        json={
            "tag_names": [ENGINEERS, ONCALL],
            "positions": [{"org_id": ids["Acme/Sales"], "primary": True, "chief": True}],
        },
    )
    assert updated["tag_names"] == [ENGINEERS, ONCALL]
    assert updated["positions"][0]["chief"] is True
    listed = api.employee("ann")
    assert listed["positions"][0]["chief"] is True and len(listed["tags"]) == 2
    refused = api.call(
        "POST",
        f"{ORG}/employees/{employee_id}",
        json={"positions": [{"org_id": ids["Acme/Sales"], "chief": "maybe"}]},
    )
    assert refused["status"] != 0 and "chief" in refused["message"]


def test_tags_survive_a_saved_state() -> None:
    options = EmulatorOptions()
    state = EmulatorState(options)
    result = state.staff.import_employees(
        [person("ann", tag_names=[ENGINEERS, ONCALL])], 2, lambda _: None
    )
    assert result["failures"] == {}
    kept = [t.id for t in state.staff.tags]
    again = EmulatorState.restore(options, orjson.loads(orjson.dumps(state.dump())))
    ann = again.staff.find_by_username("ann")
    assert ann is not None
    assert [(t.group, t.tag) for t in ann.tags] == [("Teams", "Engineers"), ("Duty", "On call")]
    assert [t.id for t in ann.tags] == kept  # ids are kept, and a new tag gets a new one
    assert again.staff.tags.named("Teams", "Sales", "", "") not in kept
