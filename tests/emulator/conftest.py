"""Fixtures of the emulator tests: a plain client and an authenticated ``Api``."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from syncd.emulator import RunningEmulator
from tests.support.waiting import scaled

from .support import Api


@pytest.fixture
def client(emulator: RunningEmulator) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=emulator.base_url, timeout=scaled(10.0)) as plain:
        yield plain


@pytest.fixture
def api(emulator: RunningEmulator, client: httpx.Client) -> Api:
    return Api(emulator, client)
