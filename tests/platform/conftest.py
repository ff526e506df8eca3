"""Fixtures for the platform client: real emulator, real SQLite token store, real HTTP.

``connect(**overrides)`` builds a ``PlatformClient`` for the shared ``emulator`` with
settings made for tests (tiny backoff, short timeouts), over the token store of this
test's state database; clients are closed at teardown.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine

from syncd.emulator import EmulatorOptions, RunningEmulator, serve_in_thread
from syncd.platform import PlatformClient, TokenStoreLike
from syncd.snapshot import TokenStore, open_engine
from tests.platform.platform_helpers import Connect, settings_for


@pytest.fixture
def state_file(tmp_path: Path) -> Path:
    return tmp_path / "syncd.db"


@pytest.fixture
def engine(state_file: Path) -> Iterator[Engine]:
    engine = open_engine(state_file)
    yield engine
    engine.dispose()


@pytest.fixture
def store(engine: Engine) -> TokenStore:
    return TokenStore(engine)


@pytest.fixture
def connect(emulator: RunningEmulator, store: TokenStore) -> Iterator[Connect]:
    """A factory of clients for ``emulator`` (or ``target``), sharing ``store`` unless told."""
    made: list[PlatformClient] = []

    def make(
        *,
        target: RunningEmulator | None = None,
        tokens: TokenStoreLike | None = None,
        transport: httpx.BaseTransport | None = None,
        on_retry: Callable[[str, str], None] | None = None,
        **overrides: Any,
    ) -> PlatformClient:
        settings = settings_for(target or emulator, **overrides)
        client = PlatformClient(
            settings, store if tokens is None else tokens, transport=transport, on_retry=on_retry
        )
        made.append(client)
        return client

    yield make
    for client in made:
        client.close()


@pytest.fixture
def client(connect: Connect) -> PlatformClient:
    return connect()


@pytest.fixture(scope="session")
def v3_emulator_server() -> Iterator[RunningEmulator]:
    """A second emulator that speaks the V3 interface (no /disable, no /enable)."""
    with serve_in_thread(EmulatorOptions(api_version="v3")) as running:
        yield running


@pytest.fixture
def v3_emulator(v3_emulator_server: RunningEmulator) -> RunningEmulator:
    v3_emulator_server.reset(data=True)
    return v3_emulator_server
