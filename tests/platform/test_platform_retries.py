"""The retry policy against the emulator's injected faults, counted, never timed.

What is retried: HTTP 500, HTTP 429 (after its Retry-After), dropped connections and
timeouts. How often: ``retry_attempts`` attempts in all, then PlatformUnavailable.
What is not: other envelope errors (one request), and a message push whose fate is
unknown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

import syncd.platform._requests
from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from syncd.errors import PlatformError, PlatformUnavailable
from syncd.platform import MemoryTokenStore, PlatformClient
from tests.platform.platform_helpers import (
    EMPLOYEES_ROUTE,
    IMPORT_EMPLOYEES_ROUTE,
    MBOX_ROUTE,
    ORG_ROUTE,
    Connect,
    requests_seen,
)
from tests.support.payloads import dept, person
from tests.support.processes import free_port

ROOT_CALL = "GET /v1/admin/organizations/{org_code}"
IMPORT_CALL = "POST /v1/admin/organizations/{org_code}/import-employees"


def once(fault: str, match: str, count: int = 1, **extra: object) -> dict[str, object]:
    return {"match": match, "fault": fault, "count": count, **extra}


def test_http_500_is_retried(connect: Connect, emulator: RunningEmulator) -> None:
    seen: list[tuple[str, str]] = []
    client = connect(on_retry=lambda endpoint, reason: seen.append((endpoint, reason)))
    client.token()
    emulator.set_faults(scripted=[once("http_500", "/organizations/acme", count=2)])
    assert client.root().name == "Acme"
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 3
    assert client.retries == 2
    assert seen == [(ROOT_CALL, "http_500"), (ROOT_CALL, "http_500")]


def test_http_429_is_retried_after_retry_after(
    connect: Connect, emulator: RunningEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="syncd")
    client = connect(retry_backoff_max=2.0)
    client.token()
    emulator.set_faults(retry_after=1, scripted=[once("http_429", "/organizations/acme")])
    assert client.root().name == "Acme"
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 2
    assert client.retries == 1
    [warning] = [r for r in caplog.records if r.name == "syncd.platform"]
    # the wait chosen is the platform's Retry-After, not the (tiny) backoff
    assert "Retry-After 1 s" in warning.getMessage()
    assert "in 1.00 s" in warning.getMessage()


def test_retry_after_is_honoured_beyond_the_longest_backoff(
    connect: Connect, emulator: RunningEmulator, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="syncd")
    client = connect(retry_backoff_max=0.004)
    client.token()
    emulator.set_faults(retry_after=1, scripted=[once("http_429", "/organizations/acme")])
    assert client.root().name == "Acme"
    [warning] = [r for r in caplog.records if r.name == "syncd.platform"]
    # coming back sooner than asked would only earn another 429
    assert "in 1.00 s" in warning.getMessage()


def test_retry_after_longer_than_retry_after_max_ends_the_call(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(retry_after_max=0.5)
    client.token()
    emulator.set_faults(retry_after=3600, scripted=[once("http_429", "/organizations/acme")])
    with pytest.raises(PlatformUnavailable) as caught:
        client.root()
    message = str(caught.value)
    assert "the platform asked to wait 3600 s" in message
    assert "platform.retry_after_max (0.5 s)" in message
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 1
    assert client.retries == 0


def test_attempt_limit_then_platform_unavailable(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(retry_attempts=3)
    client.token()
    emulator.set_faults(http_500_rate=1.0)
    with pytest.raises(PlatformUnavailable) as caught:
        client.root()
    message = str(caught.value)
    host = emulator.base_url.removeprefix("http://")
    assert host in message
    assert "GET /v1/admin/organizations/acme" in message
    assert "HTTP 500" in message and "gave up after 3 attempts" in message
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 3
    assert client.retries == 2


def test_platform_down_is_retried_then_unavailable(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(retry_attempts=2)
    client.token()
    emulator.set_faults(down=True)
    with pytest.raises(PlatformUnavailable, match="HTTP 503"):
        client.root()
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 2


NODE_ROUTE = "/v1/admin/organizations/{org_code}/{node_id}"
NOT_RETRIED: dict[str, tuple[Callable[[PlatformClient], object], str, str]] = {
    "no-such-node": (lambda c: c.node(424242), "GET", NODE_ROUTE),
    "update-missing-node": (lambda c: c.update_node(424242, {"name": "x"}), "POST", NODE_ROUTE),
    "delete-missing-node": (lambda c: c.delete_node(424242), "DELETE", NODE_ROUTE),
    "no-such-employee": (lambda c: c.employee(424242), "GET", EMPLOYEES_ROUTE + "/{employee_id}"),
    "employees-of-missing-node": (
        lambda c: c.list_employees(org_id=424242),
        "GET",
        EMPLOYEES_ROUTE,
    ),
}


@pytest.mark.parametrize("case", list(NOT_RETRIED))
def test_other_envelope_errors_are_not_retried(
    client: PlatformClient, emulator: RunningEmulator, case: str
) -> None:
    call, method, route = NOT_RETRIED[case]
    with pytest.raises(PlatformError) as caught:
        call(client)
    assert caught.value.status not in (0, 115)
    assert "?" not in caught.value.endpoint  # no query string, so no token
    assert requests_seen(emulator, method, route) == 1
    assert client.retries == 0


def test_dropped_before_processing_import_is_resent(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(scripted=[once("drop_before", "import-employees")])
    result = client.import_employees([person("ann"), person("bob")])
    assert set(result.successes) == {"ann", "bob"}
    assert requests_seen(emulator, "POST", IMPORT_EMPLOYEES_ROUTE) == 2
    assert client.retries == 1
    assert sorted(e["username"] for e in emulator.state()["employees"]) == ["ann", "bob"]


def test_dropped_after_processing_import_is_resent_and_held_once(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(scripted=[once("drop_after", "import-employees", method="POST")])
    result = client.import_employees([person("ann"), person("bob")])
    assert set(result.successes) == {"ann", "bob"} and result.failures == {}
    assert requests_seen(emulator, "POST", IMPORT_EMPLOYEES_ROUTE) == 2
    # the first copy was processed; the upsert by username keeps each person once
    assert sorted(e["username"] for e in emulator.state()["employees"]) == ["ann", "bob"]


def test_slow_answer_times_out_and_is_retried(connect: Connect, emulator: RunningEmulator) -> None:
    seen: list[str] = []
    client = connect(timeout=0.5, on_retry=lambda _, reason: seen.append(reason))
    client.token()
    emulator.set_faults(scripted=[once("latency", "/organizations/acme", latency_ms=3000)])
    assert client.root().name == "Acme"
    assert seen == ["timeout"]
    assert requests_seen(emulator, "GET", ORG_ROUTE) == 2


def test_always_slow_ends_as_platform_unavailable(
    connect: Connect, emulator: RunningEmulator
) -> None:
    client = connect(timeout=0.5, retry_attempts=2)
    client.token()
    emulator.set_faults(latency_ms=3000)
    with pytest.raises(PlatformUnavailable, match="ReadTimeout") as caught:
        client.root()
    assert "gave up after 2 attempts" in str(caught.value)
    assert client.calls[ROOT_CALL] == 2
    assert client.retries == 1


def test_message_is_not_resent_after_http_500(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.import_employees([person("ann")])
    emulator.set_faults(scripted=[once("http_500", "/app/mbox")])
    with pytest.raises(PlatformUnavailable, match="not retried"):
        client.send_text(["ann"], "hello")
    assert requests_seen(emulator, "POST", MBOX_ROUTE) == 1
    assert client.retries == 0


def test_message_is_not_resent_after_a_dropped_answer(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.import_employees([person("ann")])
    emulator.set_faults(scripted=[once("drop_after", "/app/mbox")])
    with pytest.raises(PlatformUnavailable, match="may have acted"):
        client.send_text(["ann"], "hello")
    assert len(emulator.state()["messages"]) == 1  # delivered once, never twice


def test_message_is_resent_after_http_429(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.import_employees([person("ann")])
    emulator.set_faults(retry_after=0, scripted=[once("http_429", "/app/mbox")])
    client.send_text(["ann"], "hello")
    assert requests_seen(emulator, "POST", MBOX_ROUTE) == 2
    assert len(emulator.state()["messages"]) == 1
    assert client.retries == 1


def test_token_request_is_retried_too(client: PlatformClient, emulator: RunningEmulator) -> None:
    emulator.set_faults(scripted=[once("http_500", "/v1/token")])
    assert client.root().name == "Acme"
    assert requests_seen(emulator, "POST", "/v1/token") == 2
    assert emulator.state()["tokens_issued"] == 1


def test_nothing_listening_is_retried_then_unavailable(
    connect: Connect, emulator: RunningEmulator
) -> None:
    seen: list[str] = []
    port = free_port()
    client = connect(
        base_url=f"http://127.0.0.1:{port}",
        retry_attempts=3,
        on_retry=lambda _, reason: seen.append(reason),
    )
    with pytest.raises(PlatformUnavailable) as caught:
        client.root()
    assert f"127.0.0.1:{port}" in str(caught.value)
    assert "POST /v1/token" in str(caught.value)
    assert "ConnectError" in str(caught.value)
    assert seen == ["connect", "connect"]
    assert client.calls["POST /v1/token"] == 3


IMPORT_ORGS_ROUTE = "/v1/admin/organizations/{org_code}/import-orgs"


def test_import_orgs_without_serial_numbers_is_not_resent_after_a_dropped_answer(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(scripted=[once("drop_after", "import-orgs")])
    with pytest.raises(PlatformUnavailable, match="may have acted"):
        client.import_orgs([dept("Sales", serial_no="S"), dept("Legal")])
    assert requests_seen(emulator, "POST", IMPORT_ORGS_ROUTE) == 1
    # a second copy would have created a second "Legal": nothing refuses it
    assert sorted(n["name"] for n in emulator.state()["nodes"]) == ["Acme", "Legal", "Sales"]


def test_import_orgs_with_serial_numbers_is_resent_after_a_dropped_answer(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(scripted=[once("drop_after", "import-orgs")])
    result = client.import_orgs([dept("Sales", serial_no="S"), dept("Legal", serial_no="L")])
    assert requests_seen(emulator, "POST", IMPORT_ORGS_ROUTE) == 2
    assert set(result.failures) == {"Acme/Sales", "Acme/Legal"}  # refused by serial_no
    assert sorted(n["name"] for n in emulator.state()["nodes"]) == ["Acme", "Legal", "Sales"]


def test_create_employee_is_not_resent_after_a_dropped_answer(
    client: PlatformClient, emulator: RunningEmulator
) -> None:
    client.token()
    emulator.set_faults(scripted=[once("drop_after", "/employees", method="POST")])
    with pytest.raises(PlatformUnavailable, match="may have acted"):
        client.create_employee(person("ann"))
    assert requests_seen(emulator, "POST", EMPLOYEES_ROUTE) == 1
    assert [e["username"] for e in emulator.state()["employees"]] == ["ann"]


def test_a_token_attempt_does_not_outlast_the_token_deadline(
    monkeypatch: pytest.MonkeyPatch, connect: Connect
) -> None:
    # The token is fetched under the state database's write lock: an attempt started
    # before the deadline must not then wait out the full request timeout (5 s here).
    monkeypatch.setattr(syncd.platform._requests, "TOKEN_RETRY_DEADLINE", 0.5)
    # Its own emulator: the slow token request is still served after the client gave up,
    # and leaving the block waits for it, so it cannot replace a later test's token.
    with serve_in_thread(EmulatorOptions()) as slow:
        slow.set_faults(scripted=[once("latency", "/v1/token", latency_ms=2000)])
        client = connect(target=slow, tokens=MemoryTokenStore(), timeout=5.0)
        with pytest.raises(PlatformUnavailable, match="ReadTimeout") as caught:
            client.token()
        assert "gave up after 1 attempt" in str(caught.value)
        assert client.calls["POST /v1/token"] == 1
