"""Neither the access token nor the application secret shows in logs, errors or reprs.

Everything is captured at DEBUG, httpx and httpcore included, over calls that renew the
token, retry, and fail in each of the ways the client reports.
"""

from __future__ import annotations

import logging
import traceback

import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import PlatformError, PlatformUnavailable, SyncdError, TokenError
from syncd.platform import MemoryTokenStore, app_key
from syncd.snapshot import TokenStore
from tests.platform.platform_helpers import Connect, settings_for
from tests.support.payloads import person

SECRET = "demo-secret"


def failures(connect: Connect, emulator: RunningEmulator) -> tuple[list[str], list[SyncdError]]:
    """Run calls that succeed, renew, retry and fail; the tokens seen and the errors raised."""
    client = connect()
    errors: list[SyncdError] = []
    tokens = [client.token()]
    client.import_employees([person("ann")])
    tokens.append(emulator.issue_token())  # the client's token is now refused: 10011
    client.root()
    tokens.append(client.token())
    emulator.set_faults(scripted=[{"match": "/organizations/acme", "fault": "http_500"}])
    client.root()  # one retry
    with pytest.raises(PlatformError) as envelope_error:
        client.node(987654)
    errors.append(envelope_error.value)
    emulator.set_faults(http_500_rate=1.0)
    with pytest.raises(PlatformUnavailable) as unavailable:
        client.root()
    errors.append(unavailable.value)
    emulator.set_faults()
    wrong = connect(client_secret="not-the-secret-either", tokens=MemoryTokenStore())
    with pytest.raises(TokenError) as refused:
        wrong.root()
    errors.append(refused.value)
    assert client.retries >= 3
    return tokens, errors


def test_no_token_or_secret_in_logs_errors_or_reprs(
    connect: Connect,
    emulator: RunningEmulator,
    store: TokenStore,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for name in ("syncd", "httpx", "httpcore"):
        caplog.set_level(logging.DEBUG, logger=name)
    tokens, errors = failures(connect, emulator)
    forbidden = [*tokens, SECRET, "not-the-secret-either"]

    texts = [caplog.text, *(record.getMessage() for record in caplog.records)]
    for error in errors:
        texts += [str(error), repr(error), "".join(traceback.format_exception(error))]
    cached = store.get(app_key(settings_for(emulator)))
    texts += [repr(cached), repr(settings_for(emulator)), repr(connect())]

    for text in texts:
        for value in forbidden:
            assert value not in text
    # the capture did see the requests that carried the token, masked
    assert "access_token=***" in caplog.text
    assert any(r.name.startswith("httpcore") for r in caplog.records)
