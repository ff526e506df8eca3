"""Fixtures of the command-line tests: a ``site`` (CSV source, settings, state directory)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from syncd.emulator import RunningEmulator
from tests.daemon.support import Site


@pytest.fixture
def site(tmp_path: Path, emulator: RunningEmulator) -> Iterator[Site]:
    made = Site(tmp_path, emulator)
    try:
        yield made
    finally:
        made.close()
