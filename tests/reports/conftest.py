"""Real runs for the report tests: CSV files synced to the emulator by the real runner.

``runs`` is four runs in a state directory of the test's own: made once per test module
(four real syncs each time cost most of these tests' time), then copied, settings, CSV files
and state database, into each test's folder, so a test that prunes or damages its copy
changes no other test's:

1. partial: two people the platform rejects (one named ``<script>…``), one more whose
   error text starts like a spreadsheet formula, and a rejected source row;
2. a dry run of a rename, an update and a username change (a conflict note);
3. the same, applied: ok;
4. blocked: most people gone from the source, past the removal guard.
"""

from __future__ import annotations

import copy
import dataclasses
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from syncd import snapshot as store
from syncd.config import Settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunResult
from tests.engine.company import World, employee, small_company

SCRIPT_NAME = "<script>alert('x')</script> Mallory"
MOBILE_TAKEN = "mobile already used by another employee"
FORMULA_ERROR = '=HYPERLINK("http://evil.example","click")'
REJECTS = [
    {"field": "username", "pattern": "^bad", "message": MOBILE_TAKEN},
    {"field": "username", "pattern": "^formula", "message": FORMULA_ERROR},
]


@dataclass
class Runs:
    world: World
    partial: RunResult
    dry: RunResult
    ok: RunResult
    blocked: RunResult

    @property
    def settings(self) -> Settings:
        return self.world.settings()

    @property
    def config(self) -> Path:
        return self.world.folder / "syncd.toml"

    def state(self) -> store.StateStore:
        return store.StateStore.open(self.world.folder / "state" / "syncd.db")


def make_world(tmp_path: Path, emulator: RunningEmulator) -> World:
    world = World(tmp_path, emulator, small_company())
    world.company.employees += [
        employee("E7", "bad1", "D2", name=SCRIPT_NAME),
        employee("E8", "bad2", "D3"),
        employee("E9", "formula1", "D4"),
        employee("E10", "", "D4"),  # no username: the source rejects the row
    ]
    return world


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator) -> World:
    return make_world(tmp_path, emulator)


@pytest.fixture(scope="module")
def module_runs(tmp_path_factory: pytest.TempPathFactory, emulator_server: RunningEmulator) -> Runs:
    """The four runs, made once for the test module (the emulator's data reset first)."""
    emulator_server.reset(data=True)
    world = make_world(tmp_path_factory.mktemp("runs"), emulator_server)
    world.emulator.set_faults(reject=REJECTS)
    partial = world.sync()
    world.emulator.set_faults()
    world.company.unit("D3")["name"] = "Platform"
    world.company.person("bob")["mobile"] = "13999999999"
    world.company.person("cat")["username"] = "kat"  # a conflict note: not renamed in place
    dry = world.sync(dry_run=True)
    ok = world.sync()
    world.company.employees = world.company.employees[:2]
    blocked = world.sync()
    return Runs(world, partial, dry, ok, blocked)


@pytest.fixture
def runs(module_runs: Runs, tmp_path: Path) -> Runs:
    """The module's four runs, in a copy of their folder that is this test's alone."""
    folder = tmp_path / "world"
    shutil.copytree(module_runs.world.folder, folder)
    made = module_runs.world
    world = dataclasses.replace(made, folder=folder, company=copy.deepcopy(made.company))
    world.settings()  # the copy's settings file names its own folder
    return dataclasses.replace(module_runs, world=world)


@pytest.fixture
def reports_settings(world: World) -> Callable[..., Settings]:
    """Settings with extra ``[reports]`` keys, written to the world's settings file."""

    def make(**reports: Any) -> Settings:
        from syncd.config import load_settings

        world.settings()  # writes the file
        path = world.folder / "syncd.toml"
        lines = [f"{k} = {v!r}".replace("'", '"') for k, v in reports.items()]
        path.write_text(path.read_text() + "[reports]\n" + "\n".join(lines) + "\n")
        return load_settings(path)

    return make
