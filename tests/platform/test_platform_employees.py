"""Employee calls (section G) against the emulator over HTTP, V3 and V4."""

from __future__ import annotations

from typing import Any

import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError
from syncd.platform import EmployeeRecord, PlatformClient, PositionRecord
from tests.platform.platform_helpers import EMPLOYEES_ROUTE, Connect, requests_seen
from tests.support.payloads import dept, person


def by_username(emulator: RunningEmulator) -> dict[str, dict[str, Any]]:
    return {e["username"]: e for e in emulator.state()["employees"]}


def test_import_employees_creates_then_updates(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.import_orgs([dept("Sales")])
    first = client.import_employees(
        [person("ann", "Acme/Sales", extension_id="e-1"), person("bob")]
    )
    assert set(first.successes) == {"ann", "bob"} and first.failures == {}
    again = client.import_employees([person("ann", "Acme/Sales", email="ann@acme.test")])
    assert again.successes == {"ann": first.successes["ann"]}
    assert by_username(emulator)["ann"]["email"] == "ann@acme.test"
    assert len(emulator.state()["employees"]) == 2


def test_import_employees_per_item_failure_does_not_raise(client: PlatformClient) -> None:
    result = client.import_employees([person("ann"), person("eve", "Acme/Nowhere")])
    assert list(result.successes) == ["ann"]
    assert list(result.failures) == ["eve"] and result.failures["eve"]


def test_import_employees_remove(client: PlatformClient, emulator: RunningEmulator) -> None:
    client.import_employees([person("ann"), person("bob")])
    result = client.import_employees([{"username": "ann", "name": "Ann"}], remove=True)
    assert list(result.successes) == ["ann"]
    assert list(by_username(emulator)) == ["bob"]


def test_employees_by_username_in_batches(client: PlatformClient) -> None:
    names = [f"user{i}" for i in range(5)]
    client.import_employees([person(n) for n in names])
    found = client.employees_by_username([*names, "nobody", "user0"], batch=2)
    assert sorted(e.username or "" for e in found) == names
    # six distinct names in batches of two: three requests
    assert client.calls["GET /v1/admin/organizations/{org_code}/employees"] == 3


def test_employees_by_username_of_nobody_sends_nothing(client: PlatformClient) -> None:
    assert client.employees_by_username([]) == []
    assert sum(client.calls.values()) == 0


def test_employee_records_parse_with_positions(client: PlatformClient) -> None:
    sales = client.import_orgs([dept("Sales")]).successes["Acme/Sales"]
    client.import_employees(
        [
            {
                **person("ann", "Acme/Sales"),
                "positions": [
                    {"org_id": sales, "job_title": "Lead", "primary": True, "chief": True}
                ],
            }
        ]
    )
    [ann] = client.employees_by_username(["ann"])
    assert isinstance(ann, EmployeeRecord) and isinstance(ann.id, int)
    assert ann.locked is False
    [position] = ann.positions
    assert isinstance(position, PositionRecord)
    assert (position.org_id, position.job_title, position.primary, position.chief) == (
        sales,
        "Lead",
        True,
        True,
    )


def test_list_employees_by_node_and_query(client: PlatformClient) -> None:
    ids = client.import_orgs([dept("Sales"), dept("East", "Acme/Sales")]).successes
    client.import_employees(
        [
            person("ann", "Acme/Sales"),
            person("bob", "Acme/Sales/East"),
            person("cy"),
        ]
    )
    sales = ids["Acme/Sales"]
    assert [e.username for e in client.list_employees(org_id=sales)] == ["ann"]
    deep = client.list_employees(org_id=sales, recursion=True)
    assert sorted(e.username or "" for e in deep) == ["ann", "bob"]
    assert [e.username for e in client.list_employees(query="Bob")] == ["bob"]


def test_create_get_update_delete_employee(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    created = client.create_employee(person("ann", email="ann@acme.test"))
    employee_id = created["employee_id"]["id"]
    assert client.employee(employee_id)["user"]["username"] == "ann"
    updated = client.update_employee(employee_id, {**person("ann"), "name": "Ann B"})
    assert updated["name"] == "Ann B"
    client.delete_employee(employee_id)
    assert by_username(emulator) == {}
    with pytest.raises(PlatformError) as caught:
        client.employee(employee_id)
    assert caught.value.status == 202012


def test_update_cannot_change_username(client: PlatformClient) -> None:
    employee_id = client.create_employee(person("ann"))["employee_id"]["id"]
    with pytest.raises(PlatformError) as caught:
        client.update_employee(employee_id, person("anne"))
    assert caught.value.status == 208602


def test_explicit_lock_unlock_disable_enable(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    employee_id = client.import_employees([person("ann")]).successes["ann"]
    client.lock(employee_id)
    assert by_username(emulator)["ann"]["locked"] is True
    client.unlock(employee_id)
    assert by_username(emulator)["ann"]["locked"] is False
    client.disable(employee_id)
    assert by_username(emulator)["ann"]["locked"] is True
    client.enable(employee_id)
    assert by_username(emulator)["ann"]["locked"] is False


def test_depart_and_reinstate_on_v4_use_disable_and_enable(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(api_version="v4")
    employee_id = client.import_employees([person("ann")]).successes["ann"]
    client.depart(employee_id)
    assert by_username(emulator)["ann"]["locked"] is True
    client.reinstate(employee_id)
    assert by_username(emulator)["ann"]["locked"] is False
    route = EMPLOYEES_ROUTE + "/{employee_id}"
    assert requests_seen(emulator, "POST", route + "/disable") == 1
    assert requests_seen(emulator, "POST", route + "/enable") == 1
    assert requests_seen(emulator, "POST", route + "/lock") == 0


def test_depart_and_reinstate_on_v3_use_lock_and_unlock(
    connect: Connect, v3_emulator: RunningEmulator
) -> None:
    client = connect(target=v3_emulator, api_version="v3")
    employee_id = client.import_employees([person("ann")]).successes["ann"]
    client.depart(employee_id)
    assert by_username(v3_emulator)["ann"]["locked"] is True
    client.reinstate(employee_id)
    assert by_username(v3_emulator)["ann"]["locked"] is False
    route = EMPLOYEES_ROUTE + "/{employee_id}"
    assert requests_seen(v3_emulator, "POST", route + "/lock") == 1
    assert requests_seen(v3_emulator, "POST", route + "/unlock") == 1


def test_disable_on_a_v3_platform_is_an_envelope_error(
    connect: Connect, v3_emulator: RunningEmulator
) -> None:
    client = connect(target=v3_emulator, api_version="v3")
    employee_id = client.import_employees([person("ann")]).successes["ann"]
    with pytest.raises(PlatformError) as caught:
        client.disable(employee_id)
    assert caught.value.status == 404
    assert caught.value.endpoint.endswith(f"/employees/{employee_id}/disable")
    assert client.retries == 0


def test_username_with_a_comma_cannot_be_batched(client: PlatformClient) -> None:
    with pytest.raises(ValueError, match="comma"):
        client.employees_by_username(["a,b"])
