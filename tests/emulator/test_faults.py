"""Injected faults, over real HTTP: what the client sees and what the emulator did."""

from __future__ import annotations

import httpx
import pytest

from syncd.emulator import EmulatorOptions, FaultSettings, RunningEmulator, serve_in_thread
from tests.support.payloads import dept, person

from .support import ORG, Api


def statuses(api: Api, count: int) -> list[int]:
    return [
        api.client.get(ORG, params={"access_token": api.token}).status_code for _ in range(count)
    ]


def test_http_500_rate(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(http_500_rate=1.0)
    response = api.client.get(ORG, params={"access_token": api.token})
    assert response.status_code == 500
    assert response.json() == {"status": 115, "message": "Internal Server Error.", "result": {}}
    assert emulator.stats()["faults"] == {"http_500": 1}


def test_random_faults_are_deterministic_for_a_seed(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(http_500_rate=0.5, seed=42)
    first = statuses(api, 40)
    emulator.set_faults(http_500_rate=0.5, seed=42)
    assert statuses(api, 40) == first
    assert 0 < first.count(500) < 40
    emulator.set_faults(http_500_rate=0.5, seed=7)
    assert statuses(api, 40) != first


def test_http_429_carries_retry_after(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(http_429_rate=1.0, retry_after=3)
    response = api.client.get(ORG, params={"access_token": api.token})
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "3"
    assert response.json()["status"] == 429


def test_latency_is_added_and_counted(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(latency_ms=20)
    assert statuses(api, 3) == [200, 200, 200]
    assert emulator.stats()["faults"] == {"latency": 3}


def test_drop_before_loses_the_request(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(scripted=[{"match": "import-employees", "fault": "drop_before"}])
    # The request body is never read, so closing may reset the connection (a ReadError)
    # instead of cutting the answer short: either way the answer is lost.
    with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
        api.call("POST", f"{ORG}/import-employees", json=[person("ann")])
    assert emulator.state()["employees"] == []
    assert emulator.stats()["faults"] == {"drop_before": 1}


def test_drop_after_processes_then_loses_the_answer(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(
        scripted=[{"match": "import-employees", "method": "POST", "fault": "drop_after"}]
    )
    batch = [person("ann"), person("bob")]
    with pytest.raises(httpx.RemoteProtocolError):
        api.call("POST", f"{ORG}/import-employees", json=batch)
    changed = emulator.state()["employees"]
    assert sorted(e["username"] for e in changed) == ["ann", "bob"]
    # Sending the same batch again (as a client must) creates nobody twice.
    resent = api.import_employees(batch)
    assert resent["successes"] == {e["username"]: e["id"] for e in changed}
    assert len(emulator.state()["employees"]) == 2


def test_random_drops_break_the_response(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(drop_rate=1.0)
    with pytest.raises(httpx.RemoteProtocolError):
        api.call("GET", ORG)
    emulator.set_faults(drop_after_rate=1.0)
    with pytest.raises(httpx.RemoteProtocolError):
        api.call("POST", f"{ORG}/import-orgs", json=[dept("R&D")])
    emulator.set_faults()
    assert [n["name"] for n in api.all_nodes()] == ["Acme", "R&D"]


def test_down_answers_503_everywhere_but_control(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(down=True)
    for method, path in [
        ("GET", ORG),
        ("POST", "/v1/token"),
        ("POST", "/app/mbox"),
        ("GET", "/v1/users"),
    ]:
        response = api.client.request(method, path, json={})
        assert response.status_code == 503
        # a gateway's page, not an envelope: an envelope error is a verdict, never retried
        assert response.headers["content-type"].startswith("text/plain")
        assert response.text == "503 Service Unavailable"
    assert emulator.stats()["faults"]["down"] == 4
    emulator.set_faults(down=False)
    assert api.call("GET", ORG)["status"] == 0


def test_reject_rules_fail_matching_items(api: Api, emulator: RunningEmulator) -> None:
    emulator.set_faults(
        reject=[
            {"field": "username", "pattern": "^bad", "message": "rejected by rule"},
            {
                "field": "name",
                "pattern": "Secret",
                "message": "no secrets",
                "endpoint": "import-orgs",
            },
        ]
    )
    result = api.import_employees([person("bad1"), person("good"), person("badder")])
    assert result["failures"] == {"bad1": "rejected by rule", "badder": "rejected by rule"}
    assert list(result["successes"]) == ["good"]
    orgs = api.import_orgs([dept("Secret Lab"), dept("Open Lab"), dept("bad-name")])
    assert orgs["failures"] == {"Acme/Secret Lab": "no secrets"}
    assert sorted(orgs["successes"]) == ["Acme/Open Lab", "Acme/bad-name"]
    assert emulator.stats()["faults"] == {"reject": 3}


def test_one_shot_faults_hit_only_the_matching_requests(
    api: Api, emulator: RunningEmulator
) -> None:
    emulator.set_faults(
        scripted=[
            {"match": "import-orgs", "method": "POST", "fault": "http_500", "count": 2},
            {"match": "/v1/users", "fault": "http_429"},
            {"match": "page-orgs", "fault": "latency", "latency_ms": 5},
        ]
    )
    assert api.call("GET", ORG)["status"] == 0
    assert api.call("POST", f"{ORG}/import-orgs", json=[dept("A")])["status"] == 115
    assert api.call("POST", f"{ORG}/import-orgs", json=[dept("A")])["status"] == 115
    assert api.import_orgs([dept("A")])["successes"]
    assert api.call("GET", "/v1/users")["status"] == 429
    assert api.call("GET", "/v1/users")["status"] == 0
    assert api.call("GET", f"{ORG}/page-orgs", {"domain_id": "acme"})["status"] == 0
    assert emulator.stats()["faults"] == {"http_500": 2, "http_429": 1, "latency": 1}
    assert emulator.control("GET", "faults")["scripted_remaining"] == [0, 0, 0]


def test_faults_never_touch_control_endpoints(emulator: RunningEmulator) -> None:
    emulator.set_faults(down=True, http_500_rate=0.0, drop_rate=0.0)
    assert emulator.state()["root_id"]
    emulator.set_faults(drop_rate=1.0)
    assert emulator.stats()["total_requests"] == 0
    emulator.reset(data=False)


def test_invalid_fault_settings_are_refused(emulator: RunningEmulator) -> None:
    response = emulator.client.post("/_emulator/faults", json={"http_500_rate": 2})
    assert response.status_code == 400 and "http_500_rate" in response.json()["message"]
    typo = emulator.client.post("/_emulator/faults", json={"http500_rate": 0.1})
    assert typo.status_code == 400
    bad_rule = emulator.client.post(
        "/_emulator/faults", json={"reject": [{"field": "username", "pattern": "("}]}
    )
    assert bad_rule.status_code == 400
    too_much = emulator.client.post(
        "/_emulator/faults", json={"http_500_rate": 0.6, "drop_rate": 0.6}
    )
    assert too_much.status_code == 400


def test_faults_can_be_set_at_start_up() -> None:
    with serve_in_thread(EmulatorOptions(faults=FaultSettings(down=True))) as down:
        assert down.client.get(ORG).status_code == 503
        down.reset(data=False)
        assert down.client.get(ORG).json()["status"] == 10011


def test_errors_as_http_500_changes_only_the_http_code_of_envelope_errors(
    api: Api, emulator: RunningEmulator
) -> None:
    emulator.set_faults(errors_as_http_500=True)
    missing = api.client.get(f"{ORG}/31337", params={"access_token": api.token})
    assert missing.status_code == 500
    assert missing.json() == {"status": 208502, "message": "no matching organization", "result": {}}
    refused = api.client.get(ORG, params={"access_token": "not-a-token"})
    assert (refused.status_code, refused.json()["status"]) == (500, 10011)
    fine = api.client.get(ORG, params={"access_token": api.token})
    assert (fine.status_code, fine.json()["status"]) == (200, 0)
    assert emulator.stats()["faults"] == {"errors_as_http_500": 2}
    bad_control = api.client.post("/_emulator/faults", json={"nope": 1})
    assert bad_control.status_code == 400  # control endpoints keep their own codes
    emulator.set_faults()
    assert api.client.get(f"{ORG}/31337", params={"access_token": api.token}).status_code == 200


def test_a_scripted_error_answers_that_envelope_without_processing_the_request(
    api: Api, emulator: RunningEmulator
) -> None:
    emulator.set_faults(
        scripted=[{"match": "/import-orgs", "fault": "error", "status": 208507, "message": "no"}]
    )
    response = api.client.post(
        f"{ORG}/import-orgs", params={"access_token": api.token}, json=[dept("Legal")]
    )
    assert (response.status_code, response.json()) == (
        200,
        {"status": 208507, "message": "no", "result": {}},
    )
    assert [n["name"] for n in emulator.state()["nodes"]] == ["Acme"]  # nothing was done
    assert emulator.stats()["faults"] == {"error": 1}
    with pytest.raises(RuntimeError, match="needs a non-zero status"):
        emulator.set_faults(scripted=[{"match": "x", "fault": "error"}])
