"""Organization calls (section F) against the emulator over HTTP."""

from __future__ import annotations

import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError
from syncd.platform import ImportResult, Node, PlatformClient
from tests.platform.platform_helpers import NODE_ROUTE, requests_seen
from tests.support.payloads import dept, person


def test_root_is_the_corp_node(client: PlatformClient, emulator: RunningEmulator) -> None:
    root = client.root()
    assert isinstance(root, Node)
    assert root.id == emulator.state()["root_id"]
    assert (root.name, root.type, root.parent_org_id) == ("Acme", "CORP", None)
    assert root.children == [] and root.employees == []


def test_import_orgs_reports_successes_by_name_path(client: PlatformClient) -> None:
    result = client.import_orgs([dept("Sales", serial_no="s-1"), dept("East", "Acme/Sales")])
    assert isinstance(result, ImportResult)
    assert set(result.successes) == {"Acme/Sales", "Acme/Sales/East"}
    assert all(isinstance(node_id, int) for node_id in result.successes.values())
    assert result.failures == {}
    root = client.root()
    assert [child.name for child in root.children] == ["Sales"]


def test_import_orgs_per_item_failures_do_not_raise(client: PlatformClient) -> None:
    client.import_orgs([dept("Sales", serial_no="s-1")])
    result = client.import_orgs([dept("Other", serial_no="s-1"), dept("Lost", "Acme/Nowhere")])
    assert result.successes == {}
    assert set(result.failures) == {"Acme/Other", "Acme/Nowhere/Lost"}
    assert all(isinstance(text, str) and text for text in result.failures.values())


def test_import_orgs_of_nothing_sends_nothing(client: PlatformClient) -> None:
    assert client.import_orgs([]) == ImportResult({}, {})
    assert sum(client.calls.values()) == 0


def test_page_orgs_reads_every_page(client: PlatformClient) -> None:
    client.import_orgs([dept(f"D{i}", serial_no=f"s-{i}") for i in range(5)])
    nodes = list(client.page_orgs(page_size=2))
    assert sorted(n.name or "" for n in nodes) == ["Acme", "D0", "D1", "D2", "D3", "D4"]
    # 6 nodes in pages of 2: three full pages; total_count ends it without a fourth.
    assert client.calls["GET /v1/admin/organizations/{org_code}/page-orgs"] == 3


def test_page_orgs_stops_at_the_total(client: PlatformClient) -> None:
    client.import_orgs([dept("D1"), dept("D2")])
    assert len(list(client.page_orgs(page_size=2))) == 3
    assert client.calls["GET /v1/admin/organizations/{org_code}/page-orgs"] == 2


def test_a_platform_that_caps_its_pages_is_read_to_the_end(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    # Asked for 5 a page, it gives 2: a short page is not the end while the total says more
    # (a listing taken for whole too early would make nodes look deleted).
    client.import_orgs([dept(f"D{i}", serial_no=f"s-{i}") for i in range(6)])
    emulator.set_faults(page_cap=2)
    nodes = list(client.page_orgs(page_size=5))
    assert sorted(n.name or "" for n in nodes) == ["Acme", *[f"D{i}" for i in range(6)]]
    assert client.calls["GET /v1/admin/organizations/{org_code}/page-orgs"] == 4


def test_page_orgs_since_refresh_time(client: PlatformClient) -> None:
    client.import_orgs([dept("Old")])
    cursor = max(n.last_modified or 0 for n in client.page_orgs())
    client.import_orgs([dept("New")])
    changed = list(client.page_orgs(refresh_time=cursor))
    assert [n.name for n in changed] == ["New"]


def test_node_and_node_by_serial(client: PlatformClient) -> None:
    ids = client.import_orgs([dept("Sales", serial_no="s-1", sort_order=3)]).successes
    node = client.node(ids["Acme/Sales"])
    assert (node.name, node.serial_no, node.sort_order, node.type) == ("Sales", "s-1", 3, "DEPT")
    assert node.parent_org_id == client.root().id
    assert node.path == f"/{client.root().id}/{node.id}/"
    found = client.node_by_serial("s-1")
    assert found is not None and found.id == node.id


def test_node_by_serial_answers_none_when_unknown(client: PlatformClient) -> None:
    assert client.node_by_serial("nobody") is None


def test_node_that_does_not_exist_raises_208502(client: PlatformClient) -> None:
    with pytest.raises(PlatformError) as caught:
        client.node(999_999)
    assert caught.value.status == 208502
    assert caught.value.endpoint == "GET /v1/admin/organizations/acme/999999"


@pytest.mark.parametrize("in_path", [True, False])
def test_create_node_both_path_variants(client: PlatformClient, in_path: bool) -> None:
    node = client.create_node(
        {"name": "Legal", "type": "DEPT", "parent_path": "/Acme/", "serial_no": "l-1"},
        in_path=in_path,
    )
    assert node is not None and node.name == "Legal" and node.serial_no == "l-1"
    assert client.node_by_serial("l-1") == client.node(node.id)
    template = "/v1/admin/organizations/{org_code}" if in_path else "/v1/admin/organizations"
    assert client.calls[f"POST {template}"] == 1


def test_update_node_renames_and_moves(client: PlatformClient) -> None:
    ids = client.import_orgs([dept("Sales"), dept("Ops")]).successes
    sales, ops = ids["Acme/Sales"], ids["Acme/Ops"]
    client.update_node(ops, {"name": "Operations", "new_parentId": sales, "sort_order": 7})
    moved = client.node(ops)
    assert (moved.name, moved.parent_org_id, moved.sort_order) == ("Operations", sales, 7)


def test_delete_node(client: PlatformClient, emulator: RunningEmulator) -> None:
    node_id = client.import_orgs([dept("Gone")]).successes["Acme/Gone"]
    client.delete_node(node_id)
    assert [n["name"] for n in emulator.state()["nodes"]] == ["Acme"]


def test_delete_node_with_employees_raises_208507_once(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    node_id = client.import_orgs([dept("Busy")]).successes["Acme/Busy"]
    client.import_employees([person("ann", "Acme/Busy")])
    with pytest.raises(PlatformError) as caught:
        client.delete_node(node_id)
    assert caught.value.status == 208507
    assert caught.value.endpoint == f"DELETE /v1/admin/organizations/acme/{node_id}"
    assert requests_seen(emulator, "DELETE", NODE_ROUTE) == 1
    assert client.retries == 0


def test_delete_node_already_gone_raises_208502(client: PlatformClient) -> None:
    node_id = client.import_orgs([dept("Gone")]).successes["Acme/Gone"]
    client.delete_node(node_id)
    with pytest.raises(PlatformError) as caught:
        client.delete_node(node_id)
    assert caught.value.status == 208502
