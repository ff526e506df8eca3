"""D1-D3 users built from employees (removed ones' too), and B text message push."""

from __future__ import annotations

import pytest

from tests.support.payloads import person

from .support import ORG, Api


def test_users_are_paged(api: Api) -> None:
    api.import_employees([person(f"user{i:02}") for i in range(25)])
    default = api.ok("GET", "/v1/users")
    assert default["total_count"] == 25 and len(default["users"]) == 10
    last = api.ok("GET", "/v1/users", {"skip": "20", "limit": "10"})
    assert [u["username"] for u in last["users"]] == [f"user{i}" for i in range(20, 25)]


def test_user_records_are_built_from_employees(api: Api) -> None:
    employee_id = api.import_employees(
        [person("ann", email="ann@acme.test", mobile="13800000001", gender="FEMALE")]
    )["successes"]["ann"]
    api.ok("POST", f"{ORG}/employees/{employee_id}/lock")
    [user] = api.ok("GET", "/v1/users")["users"]
    assert user["username"] == "ann" and user["name"] == "Ann"
    assert (user["email"], user["phone"], user["gender"]) == (
        "ann@acme.test",
        "13800000001",
        "FEMALE",
    )
    assert (user["status"], user["state"], user["disabled"]) == ("ACTIVATED", "NORMAL", True)
    assert user["domain_id"] == "acme" and user["user_id"]


def test_users_since_refresh_time(api: Api) -> None:
    api.import_employees([person("ann"), person("bob")])
    since = max(u["last_modified"] for u in api.ok("GET", "/v1/users")["users"])
    assert api.ok("GET", "/v1/users", {"refresh_time": since})["total_count"] == 0
    api.import_employees([person("bob", name="Robert")])
    changed = api.ok("GET", "/v1/users", {"refresh_time": since})
    assert [u["username"] for u in changed["users"]] == ["bob"]


def test_every_write_moves_refresh_time_even_one_that_changes_nothing(api: Api) -> None:
    ids = api.import_employees([person("ann"), person("bob"), person("cat")])["successes"]
    api.ok("POST", f"{ORG}/employees/{ids['cat']}/lock")

    def changed_after(since: int) -> list[str]:
        users = api.ok("GET", "/v1/users", {"refresh_time": since, "limit": 100})["users"]
        return sorted(u["username"] for u in users)

    since = max(u["last_modified"] for u in api.ok("GET", "/v1/users")["users"])
    api.import_employees([person("ann")])  # the very same fields again
    api.ok("POST", f"{ORG}/employees/{ids['bob']}", json={"name": "Bob"})  # unchanged too
    api.ok("POST", f"{ORG}/employees/{ids['cat']}/lock")  # locked already
    assert changed_after(since) == ["ann", "bob", "cat"]
    since = max(u["last_modified"] for u in api.ok("GET", "/v1/users")["users"])
    api.ok("DELETE", f"{ORG}/employees/{ids['bob']}")  # the user stays, refreshed
    assert changed_after(since) == ["bob"]


@pytest.mark.parametrize("how", ["DELETE", "REMOVE"])
def test_a_removed_employees_user_stays_and_comes_back_with_the_username(
    api: Api, how: str
) -> None:
    # The platform marks a removed employee's record deleted; nothing says the domain's
    # user goes: it is still listed and found, and a new employee with its username takes it.
    ids = api.import_employees([person("ann"), person("bob")])["successes"]
    user_id = api.ok("GET", "/v1/users/bob", {"type": "username"})["user_id"]
    if how == "DELETE":
        api.ok("DELETE", f"{ORG}/employees/{ids['bob']}")
    else:
        api.import_employees([{"username": "bob", "ops": "REMOVE"}])

    assert [e["username"] for e in api.employees(org_id=api.root()["id"], recursion="true")] == [
        "ann"
    ]
    listed = api.ok("GET", "/v1/users", {"limit": 100})
    assert sorted(u["username"] for u in listed["users"]) == ["ann", "bob"]
    assert api.ok("GET", "/v1/users/bob", {"type": "username"})["user_id"] == user_id
    assert api.ok("GET", f"/v1/users/{user_id}", {"type": "id"})["username"] == "bob"
    batch = api.ok("GET", "/v1/users", {"query": "bob", "type": "username", "matching": "true"})
    assert [u["user_id"] for u in batch["users"]] == [user_id]

    again = api.import_employees([person("bob")])["successes"]["bob"]
    assert again != ids["bob"]  # a new employee record, the same user
    assert api.employee("bob")["user_id"] == user_id
    assert api.ok("GET", "/v1/users", {"limit": 100})["total_count"] == 2


def test_the_users_list_pages_through_everyone_oldest_change_first(api: Api) -> None:
    api.import_employees([person(f"user{i:02}") for i in range(7)])
    api.import_employees([person("user03", name="Changed")])
    pages = [api.ok("GET", "/v1/users", {"skip": skip, "limit": 3})["users"] for skip in (0, 3, 6)]
    names = [u["username"] for page in pages for u in page]
    assert names == ["user00", "user01", "user02", "user04", "user05", "user06", "user03"]


def test_user_search_and_single_user(api: Api) -> None:
    api.import_employees([person("ann"), person("bob"), person("annika")])
    batch = api.ok("GET", "/v1/users", {"query": "bob,ann", "type": "username", "matching": "true"})
    assert [u["username"] for u in batch["users"]] == ["bob", "ann"]
    fuzzy = api.ok("GET", "/v1/users", {"query": "ann", "type": "username", "matching": "false"})
    assert [u["username"] for u in fuzzy["users"]] == ["ann", "annika"]
    one = api.ok("GET", "/v1/users/bob", {"type": "username"})
    assert api.ok("GET", f"/v1/users/{one['user_id']}", {"type": "id"})["username"] == "bob"


def test_a_text_message_is_pushed_and_kept(api: Api) -> None:
    api.import_employees([person("ann"), person("bob")])
    body = {
        "type": "TEXT",
        "body": {"dest_type": "P2P", "content": "hello"},
        "client_ids": ["ann", "bob", "ghost"],
    }
    plan = api.ok("POST", "/app/mbox", json=body)
    assert (plan["expects"], plan["oks"], plan["fails"]) == (3, 2, 1)
    assert plan["client_ids"] == ["ann", "bob", "ghost"] and plan["id"]
    [message] = api.emulator.state()["messages"]
    assert message["body"]["content"] == "hello"
    assert message["delivered_to"] == ["ann", "bob"]


def test_a_message_nobody_can_receive_is_refused(api: Api) -> None:
    body = {
        "type": "TEXT",
        "body": {"dest_type": "P2P", "content": "hello"},
        "client_ids": ["ghost"],
    }
    assert api.call("POST", "/app/mbox", json=body) == {
        "status": 202012,
        "message": "no matching employee",
        "result": {},
    }
    assert api.emulator.state()["messages"] == []


def test_a_malformed_push_names_what_is_missing(api: Api) -> None:
    api.import_employees([person("ann")])
    answer = api.call(
        "POST",
        "/app/mbox",
        json={"type": "TEXT", "body": {"dest_type": "P2P"}, "client_ids": ["ann"]},
    )
    assert answer["status"] != 0 and "content" in answer["message"]
