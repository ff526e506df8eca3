"""Engine fixtures: a small company in CSV files and settings pointing at the emulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.emulator import RunningEmulator
from tests.engine.company import World, small_company


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator) -> World:
    return World(tmp_path, emulator, small_company())
