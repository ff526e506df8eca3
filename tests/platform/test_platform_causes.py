"""The client's errors keep their causes, and no secret rides along in them; and each
client keeps what its own answers said.

Generated: every kind of call (the token request, a read, a repeatable write, a write
never sent twice) meets every failure the client translates (HTTP 5xx to the end, 429
asking too long a wait, a connection dropped before or after the request, a timeout, an
envelope error whose message echoes the secret and the token, refused credentials, a
closed port, TLS spoken to a plain-HTTP server). Each error, formatted with its chain of
causes as a traceback prints it, holds neither the application secret nor any access
token the platform gave.
"""

from __future__ import annotations

import socket
import traceback
from collections.abc import Callable
from typing import Any

import pytest

from syncd.access_token import CachedToken
from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from syncd.errors import PlatformError, SyncdError, TokenError
from syncd.platform import MemoryTokenStore, PlatformClient
from tests.platform.platform_helpers import Connect
from tests.support.payloads import person

SECRET = "demo-secret"  # the emulator's application secret (platform_helpers.settings_for)
WRONG_SECRET = "wrong-secret-7f3a-never-valid"


class RecordingTokens(MemoryTokenStore):
    """A token store that remembers every token it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def renew(
        self, app: str, stale: str | None, fetch: Callable[[], CachedToken], now_ms: int
    ) -> CachedToken:
        def recorded() -> CachedToken:
            token = fetch()
            self.seen.append(token.access_token)
            return token

        return super().renew(app, stale, recorded, now_ms)


CALLS: dict[str, tuple[str, Callable[[PlatformClient], object]]] = {
    "token": ("/v1/token", lambda c: c.token()),
    "read": ("/v1/admin/organizations/acme", lambda c: c.root()),
    "write": ("/import-employees", lambda c: c.import_employees([person("ann")])),
    "once": ("/employees", lambda c: c.create_employee(person("bob"))),
}

FAULTS = (
    "http_500",
    "http_429",
    "drop_before",
    "drop_after",
    "latency",
    "echoing_error",
    "refused_credentials",
    "closed_port",
    "tls_to_plain_http",
)


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def provoke(
    connect: Connect, emulator: RunningEmulator, call: str, fault: str, tokens: RecordingTokens
) -> SyncdError:
    """Make ``call`` meet ``fault``; the error the client raised."""
    match, action = CALLS[call]
    overrides: dict[str, Any] = {"retry_attempts": 2, "timeout": 0.3, "retry_after_max": 0.5}
    if fault == "refused_credentials":
        overrides["client_secret"] = WRONG_SECRET
    elif fault == "closed_port":
        overrides["base_url"] = f"http://127.0.0.1:{closed_port()}"
    elif fault == "tls_to_plain_http":
        overrides["base_url"] = emulator.base_url.replace("http://", "https://")
    client = connect(tokens=tokens, **overrides)
    token = ""
    if call != "token" and fault not in ("refused_credentials", "closed_port", "tls_to_plain_http"):
        token = client.token()  # so that the fault meets the data request
    scripted: dict[str, Any] = {"match": match, "count": 10}
    if fault in ("http_500", "http_429", "drop_before", "drop_after"):
        emulator.set_faults(retry_after=5, scripted=[{**scripted, "fault": fault}])
    elif fault == "latency":
        emulator.set_faults(scripted=[{**scripted, "fault": "latency", "latency_ms": 1500}])
    elif fault == "echoing_error":
        echo = f"refused: secret {SECRET} token {token} url ?access_token={token}"
        status = 202102 if call == "token" else 208502
        emulator.set_faults(
            scripted=[{**scripted, "fault": "error", "status": status, "message": echo}]
        )
    try:
        action(client)
    except SyncdError as exc:
        return exc
    finally:
        emulator.set_faults()
    raise AssertionError(f"{call} met {fault} and succeeded")


@pytest.mark.parametrize("fault", FAULTS)
@pytest.mark.parametrize("call", sorted(CALLS))
def test_no_secret_in_an_error_or_its_causes(
    connect: Connect, emulator: RunningEmulator, call: str, fault: str
) -> None:
    tokens = RecordingTokens()
    error = provoke(connect, emulator, call, fault, tokens)

    printed = "".join(traceback.format_exception(error))
    forbidden = [SECRET, WRONG_SECRET, *tokens.seen]
    assert [value for value in forbidden if value in printed] == []
    if fault == "echoing_error":
        assert "***" in str(error)  # the echo was there, masked


def test_a_refused_token_request_keeps_the_platforms_answer_as_its_cause(
    connect: Connect, emulator: RunningEmulator
) -> None:
    error = provoke(connect, emulator, "token", "refused_credentials", RecordingTokens())

    assert isinstance(error, TokenError)
    assert isinstance(error.__cause__, PlatformError)
    assert error.__cause__.status == error.status


def test_an_envelope_error_on_the_token_request_keeps_its_cause_masked(
    connect: Connect, emulator: RunningEmulator
) -> None:
    error = provoke(connect, emulator, "token", "echoing_error", RecordingTokens())

    assert isinstance(error, TokenError) and isinstance(error.__cause__, PlatformError)
    assert SECRET not in error.__cause__.message and "***" in error.__cause__.message


def test_each_client_reads_the_platform_time_its_own_answers_gave(
    connect: Connect, emulator: RunningEmulator
) -> None:
    """The Date header was kept per thread for every client at once: a second client's
    answer on the same thread became the first one's platform time."""
    with serve_in_thread(EmulatorOptions()) as behind:
        behind.set_clock_back(3600)
        ours, theirs = connect(), connect(target=behind, tokens=MemoryTokenStore())
        ours.root()
        theirs.root()
        mine, other = ours.platform_time(), theirs.platform_time()

    assert mine is not None and other is not None
    assert mine - other >= 3_500_000  # an hour apart, each as its own platform said
