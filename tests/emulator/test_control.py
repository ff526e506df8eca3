"""The /_emulator control endpoints, and the state file across restarts."""

from __future__ import annotations

import json
from email.utils import parsedate_to_datetime
from pathlib import Path

import httpx
import pytest

from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from syncd.errors import StateError
from tests.support.payloads import dept, person

from .support import DOMAIN, ORG, Api


def test_stats_count_requests_by_route_template(api: Api, emulator: RunningEmulator) -> None:
    api.import_employees([person("ann")])
    api.import_employees([person("bob")])
    api.import_orgs([dept("R&D")])
    api.call("GET", f"{ORG}/page-orgs", DOMAIN)
    api.call("GET", "/v1/nothing/here")
    emulator.state()
    stats = emulator.stats()
    assert stats["requests"] == {
        "POST /v1/token": 1,
        "POST /v1/admin/organizations/{code}/import-employees": 2,
        "POST /v1/admin/organizations/{org_code}/import-orgs": 1,
        "GET /v1/admin/organizations/{code}/page-orgs": 1,
        "GET (no route)": 1,
    }
    assert stats["total_requests"] == 6
    assert stats["faults"] == {}


def test_writes_are_counted_by_caller_with_their_time(api: Api, emulator: RunningEmulator) -> None:
    """syncd's X-Syncd-Instance names the caller; a write (any method but GET, the token
    request aside) is kept with when it arrived, and ``since_ms`` keeps the later ones."""
    api.client.headers["X-Syncd-Instance"] = "host-a/41"
    api.import_employees([person("ann")])
    api.call("GET", f"{ORG}/page-orgs", DOMAIN)
    between = emulator.callers()["host-a/41"]["last_write_ms"]
    api.client.headers["X-Syncd-Instance"] = "host-b/42"
    api.import_orgs([dept("R&D")])
    del api.client.headers["X-Syncd-Instance"]
    api.call("GET", f"{ORG}/page-orgs", DOMAIN)
    callers = emulator.callers()
    assert {c: (v["requests"], v["writes"]) for c, v in callers.items()} == {
        "host-a/41": (2, 1),
        "host-b/42": (1, 1),
        "-": (2, 0),  # no header: the token request (not a write) and the last read
    }
    assert [w["route"] for w in callers["host-b/42"]["write_log"]] == [
        "POST /v1/admin/organizations/{org_code}/import-orgs"
    ]
    assert emulator.callers(since_ms=between)["host-a/41"]["writes"] == 1
    assert (
        emulator.callers(since_ms=callers["host-b/42"]["last_write_ms"] + 1)["host-b/42"]["writes"]
        == 0
    )
    emulator.reset(data=False)
    assert emulator.callers() == {}


def test_reset_without_data_keeps_the_data(api: Api, emulator: RunningEmulator) -> None:
    api.import_orgs([dept("R&D")])
    emulator.set_faults(down=True)
    emulator.reset(data=False)
    assert emulator.stats() == {"requests": {}, "total_requests": 0, "faults": {}}
    assert [n["name"] for n in emulator.state()["nodes"]] == ["Acme", "R&D"]
    assert api.call("GET", ORG)["status"] == 0


def test_reset_with_data_keeps_only_the_root(api: Api, emulator: RunningEmulator) -> None:
    root_id = api.root()["id"]
    api.import_orgs([dept("R&D")])
    api.import_employees([person("ann")])
    emulator.reset(data=True)
    state = emulator.state()
    assert [(n["id"], n["name"]) for n in state["nodes"]] == [(root_id, "Acme")]
    assert state["employees"] == [] and state["messages"] == []
    assert state["tokens_issued"] == 0
    assert api.call("GET", ORG)["status"] == 10011  # tokens went with the data


def test_state_dump_holds_nodes_employees_and_messages(api: Api, emulator: RunningEmulator) -> None:
    api.import_orgs([dept("R&D", serial_no="rd")])
    api.import_employees([person("ann", "Acme/R&D", extension_id="e1")])
    api.ok(
        "POST",
        "/app/mbox",
        json={"type": "TEXT", "client_ids": ["ann"], "body": {"dest_type": "P2P", "content": "hi"}},
    )
    state = emulator.state()
    assert state["org_code"] == "acme" and state["domain_id"] == "acme"
    assert [n["full_name_path"] for n in state["nodes"]] == ["Acme", "Acme/R&D"]
    [ann] = state["employees"]
    assert ann["extension_id"] == "e1" and ann["positions"][0]["full_name_path"] == "Acme/R&D"
    assert len(state["messages"]) == 1 and state["tokens_issued"] == 1


def test_save_needs_a_state_file(emulator: RunningEmulator) -> None:
    with pytest.raises(RuntimeError, match="state_file"):
        emulator.save()


def test_state_survives_a_restart(tmp_path: Path) -> None:
    state_file = tmp_path / "emulator.json"
    options = EmulatorOptions(state_file=state_file)
    with serve_in_thread(options) as first:
        api = Api(first, first.client)
        ids = api.import_orgs([dept("R&D", serial_no="rd"), dept("Lab", "Acme/R&D")])["successes"]
        people = api.import_employees([person("ann", "Acme/R&D/Lab", email="a@acme.test")])
        api.ok("POST", f"{ORG}/employees/{people['successes']['ann']}/lock")
        token = api.token
        before = first.state()
    saved = json.loads(state_file.read_text())
    assert saved["format"] == "syncd-emulator-state" and len(saved["nodes"]) == 3
    assert [p.name for p in tmp_path.iterdir()] == ["emulator.json"]  # no temporary left over

    with serve_in_thread(options) as second:
        after = second.state()
        assert after["nodes"] == before["nodes"] and after["employees"] == before["employees"]
        assert after["tokens_issued"] == 1
        answer = second.client.get(f"{ORG}/serial/rd", params={"access_token": token, **DOMAIN})
        assert answer.json()["result"]["id"] == ids["Acme/R&D"]  # the token was kept too
        fresh = Api(second, second.client)
        created = fresh.import_orgs([dept("New")])["successes"]["Acme/New"]
        assert created > max(ids.values())  # ids keep counting
        assert fresh.import_employees([person("bob", email="a@acme.test")])["failures"] == {
            "bob": "email already used by another employee"
        }  # indexes were rebuilt


def test_save_endpoint_writes_the_file_now(tmp_path: Path) -> None:
    state_file = tmp_path / "sub" / "state.json"
    with serve_in_thread(EmulatorOptions(state_file=state_file)) as running:
        Api(running, running.client).import_orgs([dept("R&D")])
        result = running.save()
        assert result == {"path": str(state_file), "nodes": 2, "employees": 0}
        assert len(json.loads(state_file.read_text())["nodes"]) == 2


def test_a_state_file_of_another_organization_is_refused(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    with serve_in_thread(EmulatorOptions(state_file=state_file)):
        pass
    with (
        pytest.raises(StateError, match="acme"),
        serve_in_thread(EmulatorOptions(state_file=state_file, org_code="other")),
    ):
        pass
    state_file.write_text("{not json")
    with (
        pytest.raises(StateError, match="JSON"),
        serve_in_thread(EmulatorOptions(state_file=state_file)),
    ):
        pass


def test_the_clock_can_be_advanced(emulator: RunningEmulator) -> None:
    now = emulator.state()["now"]
    assert emulator.advance_clock(3600) >= now + 3_600_000


def test_a_clock_set_back_stamps_changes_earlier_and_says_so_in_the_date_header(
    api: Api, emulator: RunningEmulator, client: httpx.Client
) -> None:
    api.import_employees([person("ann")])
    before = api.ok("GET", "/v1/users/ann", {"type": "username"})["last_modified"]
    now = emulator.set_clock_back(600)
    assert now <= before - 590_000
    api.import_employees([person("bob")])
    bob = api.ok("GET", "/v1/users/bob", {"type": "username"})["last_modified"]
    assert now <= bob < before  # stamped from the clock's new time, before ann's
    since = api.ok("GET", "/v1/users", {"refresh_time": before - 1})
    assert [u["username"] for u in since["users"]] == ["ann"]  # the read from ann misses bob
    # Every answer's Date is the emulator's clock, control endpoints' too.
    for answer in (
        client.get(f"{ORG}", params={"access_token": api.token}),
        client.get("/_emulator/stats"),
    ):
        dates = answer.headers.get_list("date")
        assert len(dates) == 1, dates
        assert abs(parsedate_to_datetime(dates[0]).timestamp() * 1000 - now) < 5_000


def test_the_server_binds_loopback_on_a_free_port(emulator: RunningEmulator) -> None:
    assert emulator.base_url.startswith("http://127.0.0.1:")
    assert emulator.options.port > 0
    assert httpx.get(f"{emulator.base_url}/_emulator/stats").json()["status"] == 0
