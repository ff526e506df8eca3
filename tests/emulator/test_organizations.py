"""Section F: nodes, name paths, imports, lookups, updates and deletes."""

from __future__ import annotations

import httpx
import pytest

from tests.support.payloads import dept, person

from .support import DOMAIN, ORG, Api


def build(api: Api) -> dict[str, int]:
    """Acme / R&D / Testing, Acme / Sales; returns name path -> id."""
    result = api.import_orgs(
        [
            dept("R&D", serial_no="rd"),
            dept("Testing", "Acme/R&D", serial_no="qa"),
            dept("Sales", serial_no="sales"),
        ]
    )
    assert result["failures"] == {}
    ids: dict[str, int] = result["successes"]
    return ids


def test_the_root_is_the_one_corp_node(api: Api) -> None:
    root = api.root()
    assert root["type"] == "CORP"
    assert root["name"] == "Acme"
    assert root["path"] == f"/{root['id']}/"
    assert root["level"] == 1
    assert "parent_org_id" not in root
    assert root["children"] == [] and root["employees"] == []
    assert root["disabled"] is False


def test_import_parents_first_gives_ids_keyed_by_name_path(api: Api) -> None:
    ids = build(api)
    assert set(ids) == {"Acme/R&D", "Acme/R&D/Testing", "Acme/Sales"}
    assert all(isinstance(node_id, int) for node_id in ids.values())
    root_id = api.root()["id"]
    testing = api.node(ids["Acme/R&D/Testing"])
    assert testing["path"] == f"/{root_id}/{ids['Acme/R&D']}/{testing['id']}/"
    assert testing["level"] == 3
    assert testing["parent_org_id"] == ids["Acme/R&D"]
    assert testing["type"] == "DEPT"
    assert testing["serial_no"] == "qa"
    assert len(str(testing["created"])) == 13 and testing["last_modified"] >= testing["created"]


def test_a_child_sent_before_its_parent_fails(api: Api) -> None:
    result = api.import_orgs([dept("Testing", "Acme/R&D"), dept("R&D")])
    assert result["failures"] == {"Acme/R&D/Testing": "root organization not found"}
    assert list(result["successes"]) == ["Acme/R&D"]


def test_an_existing_serial_no_is_a_per_item_failure(api: Api) -> None:
    build(api)
    result = api.import_orgs(
        [
            dept("Again", serial_no="rd"),
            dept("New", serial_no="new"),
            dept("Twice", serial_no="new"),
        ]
    )
    assert result["failures"] == {
        "Acme/Again": "serial_no already exists",
        "Acme/Twice": "serial_no already exists",
    }
    assert list(result["successes"]) == ["Acme/New"]


def test_incomplete_import_items_fail_one_by_one(api: Api) -> None:
    result = api.import_orgs(
        [
            {"type": "DEPT", "parent_path": "Acme"},
            {"name": "No type", "parent_path": "Acme"},
            {"name": "No parent", "type": "DEPT"},
            {"name": "Bad type", "type": "TEAM", "parent_path": "Acme"},
            "not an object",
            dept("Fine"),
        ]
    )
    failures = result["failures"]
    assert failures["#0"] == "name is required"
    assert failures["Acme/No type"] == "type is required"
    assert failures["No parent"] == "parent_path or parent_id is required"
    assert failures["Acme/Bad type"] == "type must be DEPT or CORP"
    assert failures["#4"] == "item must be a JSON object"
    assert list(result["successes"]) == ["Acme/Fine"]


@pytest.mark.parametrize("parent_path", ["Acme/R&D", "/Acme/R&D/", "/Acme/R&D"])
def test_parent_path_is_accepted_with_or_without_slashes(api: Api, parent_path: str) -> None:
    ids = build(api)
    result = api.import_orgs([dept("Lab", parent_path)])
    assert list(result["successes"]) == ["Acme/R&D/Lab"]
    created = api.ok("POST", ORG, json=dept("Office", parent_path))
    assert created["parent_org_id"] == ids["Acme/R&D"]


def test_parent_id_may_name_the_parent(api: Api) -> None:
    ids = build(api)
    body = {"name": "Lab", "type": "DEPT", "parent_id": str(ids["Acme/Sales"])}
    lab = api.import_orgs([body])["successes"]["Acme/Sales/Lab"]
    assert api.node(lab)["parent_org_id"] == ids["Acme/Sales"]
    assert api.ok("POST", ORG, json={**body, "name": "Lab2"})["parent_org_id"] == ids["Acme/Sales"]


def test_both_create_variants(api: Api) -> None:
    root_id = api.root()["id"]
    in_body = api.ok(
        "POST",
        "/v1/admin/organizations",
        json={**dept("One", sort_order=3, sn="N1"), "org_code": "acme"},
    )
    in_path = api.ok("POST", ORG, json=dept("Two", en_name="Two EN"))
    assert in_body["parent_org_id"] == in_path["parent_org_id"] == root_id
    assert (in_body["sort_order"], in_body["sn"]) == (3, "N1")
    assert in_path["en_name"] == "Two EN"
    missing = api.call("POST", "/v1/admin/organizations", json=dept("Three"))
    assert missing["status"] != 0 and "org_code" in missing["message"]
    unknown_parent = api.call("POST", ORG, json=dept("Four", "Acme/Nowhere"))
    assert unknown_parent["status"] == 208502


def test_lookups_by_id_and_serial(api: Api) -> None:
    ids = build(api)
    by_serial = api.ok("GET", f"{ORG}/serial/qa", DOMAIN)
    assert by_serial["id"] == ids["Acme/R&D/Testing"]
    assert api.call("GET", f"{ORG}/serial/nope", DOMAIN) == {
        "status": 208502,
        "message": "no matching organization",
        "result": {},
    }
    assert api.call("GET", f"{ORG}/424242")["status"] == 208502
    assert api.call("GET", f"{ORG}/serial/qa")["status"] == 10400  # domain_id is required


def test_another_organization_code_is_not_found(api: Api) -> None:
    answer = api.call("GET", "/v1/admin/organizations/other")
    assert answer["status"] == 208502


def test_get_organization_lists_direct_children_and_employees(api: Api) -> None:
    ids = build(api)
    api.import_employees([person("ann"), person("bob", "Acme/R&D/Testing")])
    root = api.root()
    assert [c["name"] for c in root["children"]] == ["R&D", "Sales"]
    assert [e["username"] for e in root["employees"]] == ["ann"]
    assert root["employee_count"] == 1 and root["all_employee_count"] == 2
    rd = next(c for c in root["children"] if c["id"] == ids["Acme/R&D"])
    assert (rd["employee_count"], rd["all_employee_count"]) == (0, 1)


def test_view_shows_a_node_with_children_and_employees(api: Api) -> None:
    ids = build(api)
    api.import_employees([person("ann", "Acme/R&D"), person("bob", "Acme/R&D")])
    [view] = api.ok("GET", f"{ORG}/view", {**DOMAIN, "org_id": ids["Acme/R&D"]})
    assert view["full_name_path"] == "Acme/R&D"
    assert view["parent_org_name"] == "Acme"
    assert [c["name"] for c in view["children"]] == ["Testing"]
    assert [e["username"] for e in view["employees"]] == ["ann", "bob"]
    [limited] = api.ok(
        "GET", f"{ORG}/view", {**DOMAIN, "org_id": ids["Acme/R&D"], "employee_limit": 1}
    )
    assert len(limited["employees"]) == 1
    [root_view] = api.ok("GET", f"{ORG}/view", DOMAIN)
    assert root_view["id"] == api.root()["id"]


def test_page_orgs_pages_filters_and_needs_domain_id(api: Api) -> None:
    build(api)
    first = api.ok("GET", f"{ORG}/page-orgs", {**DOMAIN, "skip": 0, "limit": 2})
    assert first["total_count"] == 4 and len(first["records"]) == 2
    rest = api.ok("GET", f"{ORG}/page-orgs", {**DOMAIN, "skip": 2, "limit": 2})
    names = [r["name"] for r in first["records"] + rest["records"]]
    assert names == ["Acme", "R&D", "Testing", "Sales"]
    assert "children" not in first["records"][0]
    keyword = api.ok("GET", f"{ORG}/page-orgs", {**DOMAIN, "kw": "test"})
    assert [r["name"] for r in keyword["records"]] == ["Testing"]
    missing = api.call("GET", f"{ORG}/page-orgs")
    assert missing["status"] != 0 and "domain_id" in missing["message"]
    wrong = api.call("GET", f"{ORG}/page-orgs", {"domain_id": "other"})
    assert wrong["status"] != 0


def test_page_orgs_since_refresh_time_is_strictly_after(api: Api) -> None:
    ids = build(api)
    sales = api.node(ids["Acme/Sales"])
    since = {**DOMAIN, "refresh_time": sales["last_modified"]}
    assert api.ok("GET", f"{ORG}/page-orgs", since)["records"] == []
    api.ok("POST", f"{ORG}/{ids['Acme/R&D']}", json={"name": "Research"})
    changed = api.ok("GET", f"{ORG}/page-orgs", since)["records"]
    assert [(r["name"], r["last_modified"] > sales["last_modified"]) for r in changed] == [
        ("Research", True)
    ]
    before = {**DOMAIN, "refresh_time": sales["last_modified"] - 1}
    assert "Sales" in [r["name"] for r in api.ok("GET", f"{ORG}/page-orgs", before)["records"]]


def test_update_changes_fields_and_bumps_last_modified(api: Api) -> None:
    ids = build(api)
    node_id = ids["Acme/Sales"]
    before = api.node(node_id)
    api.ok(
        "POST",
        f"{ORG}/{node_id}",
        json={
            "name": "Sales EU",
            "en_name": "Sales Europe",
            "sort_order": "7",
            "sn": "S-1",
            "serial_no": "sales-eu",
            "type": "CORP",
        },
    )
    after = api.node(node_id)
    assert (after["name"], after["en_name"], after["sort_order"], after["sn"]) == (
        "Sales EU",
        "Sales Europe",
        7,
        "S-1",
    )
    assert (after["serial_no"], after["type"]) == ("sales-eu", "CORP")
    assert after["last_modified"] > before["last_modified"]
    api.ok("POST", f"{ORG}/{node_id}", json={"sort_order": 2})
    assert api.node(node_id)["sort_order"] == 2
    assert api.ok("GET", f"{ORG}/serial/sales-eu", DOMAIN)["id"] == node_id
    assert api.call("GET", f"{ORG}/serial/sales", DOMAIN)["status"] == 208502
    assert api.import_orgs([dept("Lab", "Acme/Sales EU")])["successes"]


def test_unchanged_update_keeps_last_modified(api: Api) -> None:
    ids = build(api)
    before = api.node(ids["Acme/Sales"])
    api.ok("POST", f"{ORG}/{ids['Acme/Sales']}", json={"name": "Sales"})
    assert api.node(ids["Acme/Sales"])["last_modified"] == before["last_modified"]


def test_update_refuses_a_serial_no_taken_by_another_node(api: Api) -> None:
    ids = build(api)
    answer = api.call("POST", f"{ORG}/{ids['Acme/Sales']}", json={"serial_no": "rd", "name": "X"})
    assert answer["status"] != 0 and "serial_no already exists" in answer["message"]
    assert api.node(ids["Acme/Sales"])["name"] == "Sales"  # nothing applied


def test_delete_empty_leaf_then_it_is_gone(api: Api) -> None:
    ids = build(api)
    assert api.ok("DELETE", f"{ORG}/{ids['Acme/Sales']}") == {}
    gone = api.call("DELETE", f"{ORG}/{ids['Acme/Sales']}")
    assert (gone["status"], gone["message"]) == (208502, "no matching organization")
    assert api.call("GET", f"{ORG}/{ids['Acme/Sales']}")["status"] == 208502


@pytest.mark.parametrize("where", ["Acme/R&D", "Acme/R&D/Testing"])
@pytest.mark.parametrize("locked", [False, True])
def test_delete_is_refused_while_the_subtree_has_employees(
    api: Api, where: str, locked: bool
) -> None:
    ids = build(api)
    employee_id = api.import_employees([person("ann", where)])["successes"]["ann"]
    if locked:
        api.ok("POST", f"{ORG}/employees/{employee_id}/lock")
    target = ids[where]
    answer = api.call("DELETE", f"{ORG}/{target}")
    assert (answer["status"], answer["message"]) == (208507, "organization still has employees")
    api.import_employees([{"username": "ann", "ops": "REMOVE"}])
    if where == "Acme/R&D/Testing":  # a leaf: empty now, so it goes
        assert api.ok("DELETE", f"{ORG}/{target}") == {}


def test_delete_is_refused_while_child_nodes_remain(api: Api) -> None:
    ids = build(api)
    answer = api.call("DELETE", f"{ORG}/{ids['Acme/R&D']}")
    assert answer["status"] == 208508
    assert "child" in answer["message"]
    api.ok("DELETE", f"{ORG}/{ids['Acme/R&D/Testing']}")
    api.ok("DELETE", f"{ORG}/{ids['Acme/R&D']}")


def test_the_root_cannot_be_deleted(api: Api) -> None:
    answer = api.call("DELETE", f"{ORG}/{api.root()['id']}")
    assert answer["status"] != 0 and "root" in answer["message"]


def test_same_named_siblings_resolve_to_the_oldest(api: Api) -> None:
    first = api.import_orgs([dept("Twin")])["successes"]["Acme/Twin"]
    second = api.import_orgs([dept("Twin")])["successes"]["Acme/Twin"]
    assert second != first
    child = api.import_orgs([dept("Kid", "Acme/Twin")])["successes"]["Acme/Twin/Kid"]
    assert api.node(child)["parent_org_id"] == first


def test_unknown_routes_answer_404_with_an_envelope(client: httpx.Client) -> None:
    response = client.get("/v1/no/such/thing")
    assert response.status_code == 404
    assert response.json()["status"] == 404 and response.json()["result"] == {}
    assert client.get("/elsewhere").status_code == 404


def test_deprecated_tree_and_list_all(api: Api) -> None:
    ids = build(api)
    tree = api.ok("GET", f"{ORG}/tree", DOMAIN)
    assert [c["name"] for c in tree["children"]] == ["R&D", "Sales"]
    assert tree["children"][0]["children"][0]["name"] == "Testing"
    below = api.ok("GET", f"{ORG}/list-all", {**DOMAIN, "org_id": ids["Acme/R&D"]})
    assert [n["name"] for n in below] == ["R&D", "Testing"]
