"""Sync directory A, then directory B: the platform ends equal to B, whatever A and B are."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from tests.engine.company import Company, World, department, employee
from tests.support.examples import examples

IDS = [f"D{n}" for n in range(8)]


@st.composite
def companies(draw: st.DrawFn) -> Company:
    """A valid company: a tree (parents drawn among earlier ids), people placed in it."""
    chosen = draw(st.lists(st.sampled_from(IDS), min_size=1, max_size=len(IDS), unique=True))
    departments = []
    for n, dept_id in enumerate(chosen):
        parent = draw(st.sampled_from(["", *chosen[:n]]))
        variant = draw(st.sampled_from("abc"))
        departments.append(department(dept_id, f"{dept_id}-{variant}", parent))
    people = draw(st.lists(st.integers(1, 30), max_size=12, unique=True))
    employees = []
    for n in people:
        place = draw(st.sampled_from(chosen))
        name = draw(st.sampled_from(["Ann", "Bo", "王伟", "Zoë"]))
        employees.append(employee(f"E{n}", f"u{n}", place, name=name))
    return Company(departments, employees)


@settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(first=companies(), second=companies())
def test_syncing_a_then_b_leaves_the_platform_equal_to_b(
    emulator: RunningEmulator, first: Company, second: Company
) -> None:
    emulator.reset(data=True)
    with tempfile.TemporaryDirectory() as folder:
        world = World(Path(folder), emulator, first)
        world.sync_settings.update(
            leaver_policy="remove",
            max_removal_ratio=1.0,
            max_removals=1000,
            max_field_changes=1000,  # B may rename everyone: the guard is tested elsewhere
        )
        assert world.sync().exit_code == EXIT_OK
        assert world.platform().same_as(first.expected())
        world.company = second
        result = world.sync(allow_removals=1000)  # B may empty A out: the guard is tested elsewhere
        assert result.exit_code == EXIT_OK, result.error
        assert world.platform().same_as(second.expected())
