"""POST /v1/token and the token check on every platform endpoint."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from syncd.emulator import RunningEmulator

from .support import DOMAIN, ORG, Api

TOKEN_PROTECTED = [
    ("GET", ORG, None),
    ("GET", f"{ORG}/page-orgs", DOMAIN),
    ("GET", f"{ORG}/view", DOMAIN),
    ("GET", f"{ORG}/1000", None),
    ("GET", f"{ORG}/serial/x", DOMAIN),
    ("POST", f"{ORG}/import-orgs", None),
    ("POST", f"{ORG}/1000", None),
    ("DELETE", f"{ORG}/1001", None),
    ("GET", f"{ORG}/employees", DOMAIN),
    ("POST", f"{ORG}/import-employees", None),
    ("POST", f"{ORG}/employees/1/lock", None),
    ("GET", "/v1/users", None),
    ("POST", "/app/mbox", None),
]


def request_token(client: httpx.Client, body: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = client.post("/v1/token", json=body).json()
    return answer


def test_a_token_is_issued_with_its_times(emulator: RunningEmulator, client: httpx.Client) -> None:
    answer = request_token(client, emulator.token_request())
    assert answer["status"] == 0 and answer["message"] == "ok"
    result = answer["result"]
    assert len(result["access_token"]) >= 32
    assert result["refresh_token"] == result["access_token"]
    assert result["client_id"] == "syncd"
    assert len(str(result["issued_time"])) == 13
    assert result["expire_time"] - result["issued_time"] == 7200 * 1000


def test_a_new_token_invalidates_the_previous_one(api: Api, emulator: RunningEmulator) -> None:
    first = api.token
    assert api.call("GET", ORG)["status"] == 0
    api.token = emulator.issue_token()
    assert api.token != first
    assert api.call("GET", ORG)["status"] == 0
    api.token = first
    assert api.call("GET", ORG) == {"status": 10011, "message": "token not found.", "result": {}}
    assert emulator.state()["tokens_issued"] == 2


@pytest.mark.parametrize(("method", "path", "params"), TOKEN_PROTECTED)
@pytest.mark.parametrize("token", [None, "", "not-a-token"])
def test_every_endpoint_refuses_a_missing_or_unknown_token(
    emulator: RunningEmulator,
    client: httpx.Client,
    method: str,
    path: str,
    params: dict[str, str] | None,
    token: str | None,
) -> None:
    emulator.issue_token()
    query = dict(params or {})
    if token is not None:
        query["access_token"] = token
    answer = client.request(method, path, params=query, json={}).json()
    assert (answer["status"], answer["message"]) == (10011, "token not found.")


def test_an_expired_token_is_not_found(api: Api, emulator: RunningEmulator) -> None:
    emulator.advance_clock(7199)
    assert api.call("GET", ORG)["status"] == 0
    emulator.advance_clock(1)
    assert api.call("GET", ORG)["status"] == 10011


def test_token_lifetime_is_an_option() -> None:
    from syncd.emulator import EmulatorOptions, serve_in_thread

    with serve_in_thread(EmulatorOptions(token_lifetime_seconds=60)) as short:
        result = short.client.post("/v1/token", json=short.token_request()).json()["result"]
        assert result["expire_time"] - result["issued_time"] == 60_000


@pytest.mark.parametrize(
    ("change", "status"),
    [
        ({"client_id": "someone-else"}, 202102),
        ({"domain_id": "other"}, 202102),
        ({"org_id": "9999"}, 202102),
        ({"org_id": None, "owner_id": "other-domain"}, 202102),
        ({"client_secret": "wrong"}, 202104),
    ],
)
def test_bad_credentials_are_refused(
    emulator: RunningEmulator, client: httpx.Client, change: dict[str, Any], status: int
) -> None:
    body = {**emulator.token_request(), **change}
    answer = request_token(client, {k: v for k, v in body.items() if v is not None})
    assert answer["status"] == status
    assert (
        answer["message"]
        == {
            202102: "no such application",
            202104: "application authentication failed",
        }[status]
    )


@pytest.mark.parametrize(
    "organization", [{"org_id": "1000"}, {"org_id": "acme"}, {"owner_id": "acme"}]
)
def test_the_organization_may_be_named_by_root_id_code_or_owner(
    emulator: RunningEmulator, client: httpx.Client, organization: dict[str, str]
) -> None:
    body = {**emulator.token_request(), **organization}
    if "owner_id" in organization:
        del body["org_id"]
    assert request_token(client, body)["status"] == 0


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"org_id": None}, "org_id or owner_id"),
        ({"grant_type": "password"}, "grant_type"),
        ({"scope": "user"}, "scope"),
        ({"client_secret": None}, "client_secret"),
        ({"domain_id": None}, "domain_id"),
    ],
)
def test_malformed_token_requests_name_the_parameter(
    emulator: RunningEmulator, client: httpx.Client, change: dict[str, Any], named: str
) -> None:
    body = {**emulator.token_request(), **change}
    answer = request_token(client, {k: v for k, v in body.items() if v is not None})
    assert answer["status"] not in (0, 202102, 202104)
    assert named in answer["message"]


def test_tokens_are_random(emulator: RunningEmulator) -> None:
    tokens = {emulator.issue_token() for _ in range(5)}
    assert len(tokens) == 5
