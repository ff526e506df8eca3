"""Section G: employee import (upsert, REMOVE, per-item failures), CRUD, lock, search."""

from __future__ import annotations

from typing import Any

import pytest

from syncd.emulator import EmulatorOptions, serve_in_thread
from tests.support.payloads import dept, person

from .support import DOMAIN, ORG, Api


@pytest.fixture
def depts(api: Api) -> dict[str, int]:
    ids: dict[str, int] = api.import_orgs([dept("R&D"), dept("Lab", "Acme/R&D"), dept("Sales")])[
        "successes"
    ]
    return ids


def test_import_creates_employees_with_numeric_ids(api: Api, depts: dict[str, int]) -> None:
    result = api.import_employees(
        [
            person("ann", "Acme/R&D", email="ann@acme.test", mobile="+86 138 0000 0001"),
            {
                **person("bob"),
                "positions": [
                    {
                        "org_id": depts["Acme/Sales"],
                        "job_title": "Lead",
                        "primary": True,
                        "chief": True,
                    }
                ],
            },
        ]
    )
    assert result["failures"] == {}
    assert set(result["successes"]) == {"ann", "bob"}
    assert all(isinstance(i, int) for i in result["successes"].values())
    bob = api.employee("bob")
    assert bob["id"] == result["successes"]["bob"]
    assert (bob["type"], bob["domain_id"], bob["org_code"]) == ("EMPLOYEE", "acme", "acme")
    assert (bob["display_name"], bob["status"], bob["locked"]) == ("Bob", "ACTIVATED", False)
    [position] = bob["positions"]
    assert position["org_id"] == depts["Acme/Sales"]
    assert position["org_name"] == "Sales" and position["full_name_path"] == "Acme/Sales"
    assert position["path"].endswith(f"/{depts['Acme/Sales']}/")
    assert (position["job_title"], position["primary"], position["chief"]) == ("Lead", True, True)
    assert len(str(bob["created"])) == 13


def test_import_keeps_the_fields_as_given(api: Api) -> None:
    fields: dict[str, Any] = {
        "extension_id": "hr-42",
        "en_name": "Ann E.",
        "sn": "E0042",
        "sort_order": 5,
        "senior": True,
        "tel": "010-1234",
        "gender": "FEMALE",
        "birthday": 631152000000,
        "extended1": "x1",
        "province": "BJ",
    }
    api.import_employees([{**person("ann"), **fields}])
    ann = api.employee("ann")
    for key, value in fields.items():
        assert ann[key] == value, key
    detail = api.ok("GET", f"{ORG}/employees/{ann['id']}")
    assert detail["employee_id"]["id"] == ann["id"]
    assert detail["user"]["username"] == "ann"
    assert detail["extension_id"] == "hr-42" and detail["sn"] == "E0042"


def test_import_is_an_upsert_by_username(api: Api, depts: dict[str, int]) -> None:
    first = api.import_employees([person("ann", email="ann@acme.test")])["successes"]["ann"]
    before = api.employee("ann")
    again = api.import_employees([person("ann", "Acme/R&D/Lab", name="Ann B.")])
    assert again["successes"] == {"ann": first}
    ann = api.employee("ann")
    assert ann["name"] == "Ann B." and ann["email"] == "ann@acme.test"
    assert [p["org_id"] for p in ann["positions"]] == [depts["Acme/R&D/Lab"]]
    assert ann["last_modified"] > before["last_modified"]
    assert len(api.emulator.state()["employees"]) == 1


def test_remove_deletes_and_an_unknown_username_fails(api: Api) -> None:
    ids = api.import_employees([person("ann"), person("bob")])["successes"]
    result = api.import_employees(
        [{"username": "ann", "ops": "REMOVE"}, {"username": "zed", "ops": "REMOVE"}]
    )
    assert result == {"successes": {"ann": ids["ann"]}, "failures": {"zed": "employee not found"}}
    assert [e["username"] for e in api.employees()] == ["bob"]
    assert api.call("GET", f"{ORG}/employees/{ids['ann']}")["status"] == 202012


def test_every_kind_of_item_failure_is_reported_per_item(api: Api) -> None:
    api.import_employees([person("ann", email="ann@acme.test", mobile="13800000001")])
    result = api.import_employees(
        [
            person("p1", "Acme/Nowhere"),
            {**person("p2"), "positions": [{"org_id": 99999999}]},
            {**person("p3"), "positions": [{"job_title": "no org"}]},
            {"username": "p4", "positions": [{"org_path": "Acme"}]},
            {"name": "No Username", "positions": [{"org_path": "Acme"}]},
            person("p6", email="not-an-email"),
            person("p7", mobile="12ab"),
            person("p8", mobile="138-0000-0001"),
            person("p9", email="ANN@acme.test"),
            {"username": "p10", "name": "No positions"},
            person("p11", ops="ADD"),
            person("fine"),
        ]
    )
    failures = result["failures"]
    assert result["successes"].keys() == {"fine"}
    assert failures == {
        "p1": "organization not found: Acme/Nowhere",
        "p2": "organization not found: 99999999",
        "p3": "org_id or org_path is required",
        "p4": "name is required",
        "#4": "username is required",
        "p6": "invalid email: not-an-email",
        "p7": "invalid mobile: 12ab",
        "p8": "mobile already used by another employee",
        "p9": "email already used by another employee",
        "p10": "positions is required",
        "p11": "unknown ops: ADD",
    }
    assert sorted(e["username"] for e in api.employees()) == ["ann", "fine"]


def test_an_employee_keeps_its_own_email_and_mobile(api: Api) -> None:
    api.import_employees([person("ann", email="ann@acme.test", mobile="13800000001")])
    again = api.import_employees([person("ann", email="ann@acme.test", mobile="13800000001")])
    assert again["failures"] == {}
    api.import_employees([person("ann", email="ann2@acme.test")])
    assert api.import_employees([person("bob", email="ann@acme.test")])["failures"] == {}


def test_the_same_name_path_forms_work_for_positions(api: Api, depts: dict[str, int]) -> None:
    result = api.import_employees([person("a", "Acme/R&D/Lab"), person("b", "/Acme/R&D/Lab/")])
    assert result["failures"] == {}
    assert {p["org_id"] for e in api.employees() for p in e["positions"]} == {depts["Acme/R&D/Lab"]}


def test_single_employee_create_get_update_delete(api: Api, depts: dict[str, int]) -> None:
    created = api.ok("POST", f"{ORG}/employees", json=person("ann", email="ann@acme.test"))
    employee_id = created["employee_id"]["id"]
    assert created["user"]["username"] == "ann" and created["positions"][0]["org_id"]
    duplicate = api.call("POST", f"{ORG}/employees", json=person("ann"))
    assert duplicate["status"] != 0 and "username" in duplicate["message"]
    updated = api.ok(
        "POST",
        f"{ORG}/employees/{employee_id}",
        json={"name": "Ann Lee", "positions": [{"org_id": depts["Acme/Sales"]}]},
    )
    assert updated["name"] == "Ann Lee" and updated["email"] == "ann@acme.test"
    assert (
        api.ok("GET", f"{ORG}/employees/{employee_id}")["positions"][0]["org_id"]
        == depts["Acme/Sales"]
    )
    renamed = api.call("POST", f"{ORG}/employees/{employee_id}", json={"username": "annie"})
    assert renamed["status"] != 0 and "username cannot be changed" in renamed["message"]
    same = api.call("POST", f"{ORG}/employees/{employee_id}", json={"username": "ann"})
    assert same["status"] == 0
    assert api.ok("DELETE", f"{ORG}/employees/{employee_id}") == {}
    assert api.call("GET", f"{ORG}/employees/{employee_id}")["status"] == 202012
    assert api.call("DELETE", f"{ORG}/employees/{employee_id}")["status"] == 202012


@pytest.mark.parametrize(("depart", "back"), [("lock", "unlock"), ("disable", "enable")])
def test_departure_and_return(api: Api, depart: str, back: str) -> None:
    employee_id = api.import_employees([person("ann")])["successes"]["ann"]
    before = api.employee("ann")
    assert api.ok("POST", f"{ORG}/employees/{employee_id}/{depart}") == {}
    locked = api.employee("ann")
    assert locked["locked"] is True and locked["last_modified"] > before["last_modified"]
    assert api.ok("GET", f"{ORG}/employees/{employee_id}")["disabled"] is True
    assert api.ok("POST", f"{ORG}/employees/{employee_id}/{back}") == {}
    assert api.employee("ann")["locked"] is False
    assert api.call("POST", f"{ORG}/employees/424242/{depart}")["status"] == 202012


def test_a_v3_platform_has_no_disable_or_enable() -> None:
    with serve_in_thread(EmulatorOptions(api_version="v3")) as v3:
        token = v3.issue_token()
        client = v3.client
        created = client.post(
            f"{ORG}/import-employees", params={"access_token": token}, json=[person("ann")]
        ).json()
        employee_id = created["result"]["successes"]["ann"]
        for action in ("disable", "enable"):
            response = client.post(
                f"{ORG}/employees/{employee_id}/{action}", params={"access_token": token}
            )
            assert response.status_code == 404 and response.json()["status"] != 0
        lock = client.post(f"{ORG}/employees/{employee_id}/lock", params={"access_token": token})
        assert lock.json()["status"] == 0


def test_batch_search_by_username_and_by_id(api: Api) -> None:
    ids = api.import_employees([person("ann"), person("bob"), person("cy")])["successes"]
    found = api.employees(matching="true", type="username", query="cy,ann,nobody")
    assert [e["username"] for e in found] == ["cy", "ann"]
    by_id = api.employees(matching="true", type="id", query=f"{ids['bob']},{ids['cy']},12")
    assert [e["username"] for e in by_id] == ["bob", "cy"]


def test_fuzzy_search_and_scopes(api: Api, depts: dict[str, int]) -> None:
    api.import_employees(
        [
            person("ann", "Acme/R&D", name="Ann Archer"),
            person("bob", "Acme/R&D/Lab"),
            person("anna", "Acme/Sales", name="Anna Smith"),
        ]
    )
    fuzzy = api.employees(query="ann", matching="false")
    assert sorted(e["username"] for e in fuzzy) == ["ann", "anna"]
    assert [e["username"] for e in api.employees(query="SMITH")] == ["anna"]
    direct = api.employees(org_id=depts["Acme/R&D"])
    assert [e["username"] for e in direct] == ["ann"]
    below = api.employees(org_id=depts["Acme/R&D"], recursion="true")
    assert sorted(e["username"] for e in below) == ["ann", "bob"]
    lab_path = api.node(depts["Acme/R&D/Lab"])["path"]
    assert [e["username"] for e in api.employees(path=lab_path)] == ["bob"]
    assert api.call("GET", f"{ORG}/employees")["status"] != 0  # domain_id is required
    assert "domain_id" in api.call("GET", f"{ORG}/employees")["message"]
    unknown = api.call("GET", f"{ORG}/employees", {**DOMAIN, "org_id": 99999999})
    assert unknown["status"] == 208502


def test_a_listing_shows_every_change_to_its_people_and_their_nodes(
    api: Api, depts: dict[str, int]
) -> None:
    # The list forms are kept encoded between listings: each change must still show.
    ids = api.import_employees([person("ann", "Acme/R&D/Lab")])["successes"]

    def ann() -> dict[str, Any]:
        [record] = api.employees(org_id=api.root()["id"], recursion="true")
        return record

    assert ann()["positions"][0]["full_name_path"] == "Acme/R&D/Lab"
    api.ok("POST", f"{ORG}/{depts['Acme/R&D']}", json={"name": "Research"})
    assert ann()["positions"][0]["full_name_path"] == "Acme/Research/Lab"
    api.ok("POST", f"{ORG}/{depts['Acme/R&D/Lab']}", json={"new_parentId": depts["Acme/Sales"]})
    assert (ann()["positions"][0]["path"], ann()["positions"][0]["level"]) == (
        api.node(depts["Acme/R&D/Lab"])["path"],
        3,
    )
    api.ok("POST", f"{ORG}/{depts['Acme/R&D/Lab']}", json={"type": "CORP"})
    assert ann()["positions"][0]["type"] == "CORP"
    api.ok("POST", f"{ORG}/employees/{ids['ann']}", json={"mobile": "13800000009"})
    api.ok("POST", f"{ORG}/employees/{ids['ann']}/lock")
    assert (ann()["mobile"], ann()["locked"]) == ("13800000009", True)


def test_node_counts_follow_imports_and_removals(api: Api, depts: dict[str, int]) -> None:
    api.import_employees(
        [
            person("ann", "Acme/R&D/Lab"),
            person("bob", "Acme/R&D/Lab"),
            {**person("cy"), "positions": [{"org_path": "Acme/R&D"}, {"org_path": "Acme/R&D/Lab"}]},
        ]
    )
    rd, lab = api.node(depts["Acme/R&D"]), api.node(depts["Acme/R&D/Lab"])
    assert (rd["employee_count"], rd["all_employee_count"]) == (1, 3)
    assert (lab["employee_count"], lab["all_employee_count"]) == (3, 3)
    api.import_employees([{"username": "bob", "ops": "REMOVE"}, person("cy", "Acme/Sales")])
    rd, lab = api.node(depts["Acme/R&D"]), api.node(depts["Acme/R&D/Lab"])
    assert (rd["all_employee_count"], lab["employee_count"]) == (1, 1)
    assert api.root()["all_employee_count"] == 2


def test_import_body_must_be_an_array(api: Api) -> None:
    answer = api.call("POST", f"{ORG}/import-employees", json={"username": "ann"})
    assert answer["status"] != 0 and "array" in answer["message"]


def test_properties_replace_by_schema_id_and_bad_ones_fail_per_item(api: Api) -> None:
    def prop(schema: str, *values: str) -> dict[str, Any]:
        return {"data_schema_id": schema, "values": list(values)}

    api.import_employees([person("ann", properties=[prop("a", "1"), prop("b", "2")])])
    api.import_employees([person("ann", properties=[prop("a", "9"), prop("b")])])
    [ann] = api.ok(
        "GET",
        f"{ORG}/employees",
        {**DOMAIN, "matching": "true", "type": "username", "query": "ann"},
    )
    assert ann["properties"] == [prop("a", "9")]  # a replaced, b removed (no values)

    result = api.import_employees(
        [person("bob", properties=[{"values": ["x"]}]), person("cat", properties="x")]
    )
    assert result["successes"] == {}
    assert result["failures"] == {
        "bob": "a property needs data_schema_id and a list of values",
        "cat": "properties must be a list",
    }
