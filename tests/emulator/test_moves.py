"""Re-parenting a node (new_parentId) carries its whole subtree along."""

from __future__ import annotations

from typing import Any

from tests.support.payloads import dept, person

from .support import DOMAIN, ORG, Api


def tree(api: Api) -> dict[str, int]:
    """Acme / Eng / Backend / DB, Acme / Ops; returns name path -> id."""
    result = api.import_orgs(
        [
            dept("Eng"),
            dept("Backend", "Acme/Eng"),
            dept("DB", "Acme/Eng/Backend"),
            dept("Ops"),
        ]
    )
    ids: dict[str, int] = result["successes"]
    return ids


def state_nodes(api: Api) -> dict[int, dict[str, Any]]:
    return {n["id"]: n for n in api.emulator.state()["nodes"]}


def test_a_move_carries_ids_paths_levels_and_name_paths(api: Api) -> None:
    ids = tree(api)
    backend, db, ops = ids["Acme/Eng/Backend"], ids["Acme/Eng/Backend/DB"], ids["Acme/Ops"]
    root_id = api.root()["id"]
    api.ok("POST", f"{ORG}/{backend}", json={"new_parentId": ops})
    nodes = state_nodes(api)
    assert nodes[backend]["parent_org_id"] == ops
    assert nodes[backend]["path"] == f"/{root_id}/{ops}/{backend}/"
    assert nodes[db]["path"] == f"/{root_id}/{ops}/{backend}/{db}/"
    assert (nodes[backend]["level"], nodes[db]["level"]) == (3, 4)
    assert nodes[db]["full_name_path"] == "Acme/Ops/Backend/DB"
    # The new name path is usable at once; the old one is gone.
    result = api.import_orgs([dept("Cache", "Acme/Ops/Backend"), dept("X", "Acme/Eng/Backend")])
    assert list(result["successes"]) == ["Acme/Ops/Backend/Cache"]
    assert result["failures"] == {"Acme/Eng/Backend/X": "root organization not found"}


def test_a_move_stamps_the_subtree_and_nothing_else(api: Api) -> None:
    ids = tree(api)
    before = state_nodes(api)
    api.ok("POST", f"{ORG}/{ids['Acme/Eng/Backend']}", json={"new_parentId": str(ids["Acme/Ops"])})
    since = max(n["last_modified"] for n in before.values())
    changed = api.ok("GET", f"{ORG}/page-orgs", {**DOMAIN, "refresh_time": since})["records"]
    assert sorted(r["name"] for r in changed) == ["Backend", "DB"]


def test_a_move_carries_employee_positions_and_counts(api: Api) -> None:
    ids = tree(api)
    api.import_employees(
        [
            person("ann", "Acme/Eng/Backend/DB"),
            person("bob", "Acme/Eng/Backend"),
            {
                **person("cy", "Acme/Eng"),
                "positions": [{"org_path": "Acme/Eng"}, {"org_path": "Acme/Eng/Backend/DB"}],
            },
        ]
    )
    eng, ops, backend = ids["Acme/Eng"], ids["Acme/Ops"], ids["Acme/Eng/Backend"]
    assert api.node(eng)["all_employee_count"] == 3
    api.ok("POST", f"{ORG}/{backend}", json={"new_parentId": ops})
    assert api.node(eng)["all_employee_count"] == 1  # cy still holds a position in Eng
    assert api.node(ops)["all_employee_count"] == 3
    assert api.root()["all_employee_count"] == 3
    ann = api.employee("ann")
    [position] = ann["positions"]
    assert position["path"] == f"/{api.root()['id']}/{ops}/{backend}/{ids['Acme/Eng/Backend/DB']}/"
    assert position["full_name_path"] == "Acme/Ops/Backend/DB"
    within_ops = api.employees(org_id=ops, recursion="true")
    assert sorted(e["username"] for e in within_ops) == ["ann", "bob", "cy"]


def test_a_node_cannot_move_under_itself_or_its_descendants(api: Api) -> None:
    ids = tree(api)
    eng = ids["Acme/Eng"]
    for target in (eng, ids["Acme/Eng/Backend/DB"]):
        answer = api.call("POST", f"{ORG}/{eng}", json={"new_parentId": target})
        assert answer["status"] != 0
    assert api.node(eng)["parent_org_id"] == api.root()["id"]


def test_the_root_cannot_move_and_an_unknown_parent_is_not_found(api: Api) -> None:
    ids = tree(api)
    root_id = api.root()["id"]
    assert (
        api.call("POST", f"{ORG}/{root_id}", json={"new_parentId": ids["Acme/Ops"]})["status"] != 0
    )
    unknown = api.call("POST", f"{ORG}/{ids['Acme/Ops']}", json={"new_parentId": 99999999})
    assert unknown["status"] == 208502


def test_a_rename_changes_the_name_paths_below(api: Api) -> None:
    ids = tree(api)
    api.ok("POST", f"{ORG}/{ids['Acme/Eng']}", json={"name": "Engineering"})
    assert state_nodes(api)[ids["Acme/Eng/Backend/DB"]]["full_name_path"] == (
        "Acme/Engineering/Backend/DB"
    )
    result = api.import_employees([person("ann", "/Acme/Engineering/Backend/")])
    assert api.employee("ann")["positions"][0]["org_id"] == ids["Acme/Eng/Backend"]
    assert result["failures"] == {}
