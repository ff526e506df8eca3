"""Recovery is not change: a large apply killed with several batches in flight, then runs.

A real ``syncd sync`` creating a company in batches, several in flight at once, is killed
with SIGKILL at a point drawn from a seed (a request importing people on the wire, or a
statement of the journal writer's transactions), with batch sizes and concurrency drawn
too. The people whose batches were in flight are settled at the next start by what the
platform holds: created if absent, left alone if equal. So the next run, under an update
guard that stops at the first update planned, is not blocked, converges, and writes to
nobody the killed run already created (their records' ``last_modified`` on the emulator
stay as they were); the run after it has nothing to do.

Issue 32: every in-flight person was recovered with an empty hash and planned as an
update with nothing changed, which tripped ``max_updates`` for good (or, let through,
wrote everyone again).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from syncd.errors import EXIT_OK
from tests.support.runs import plan_of

from .support import Rig, assert_converged, big_company
from .test_crashes import SETTLE, Point, kill_in_statement, kill_on_request


@dataclass(frozen=True)
class Shape:
    """A killed first sync: how many people, in what batches, how many in flight, where."""

    people: int
    batch_size: int
    concurrency: int
    point: Point

    def __str__(self) -> str:
        return f"{self.people}p/b{self.batch_size}/c{self.concurrency}/{self.point}"


def drawn(seed: int) -> Shape:
    """A shape drawn from ``seed``: kill points among the people's batches, where several
    are in flight (departments come first: 10 of them, in a batch or two per level)."""
    draw = random.Random(seed)
    batch_size = draw.randint(2, 6)
    concurrency = draw.randint(2, 4)
    people = draw.randint(6, 12) * batch_size
    batches = people // batch_size
    if draw.random() < 0.5:
        # The Nth request importing people arrives, the ones before it answered or in flight.
        point = Point("import-employees", draw.randint(concurrency + 1, batches))
    elif draw.random() < 0.5:
        # The snapshot rows of the Nth batch of people answered, before or after they run.
        point = Point("INSERT INTO employees", draw.randint(1, batches - 1), _either(draw))
    else:
        # The Nth batch of people's answers, once one or more before it settled (the
        # departments' batches come first: one for the head office, then its nine units).
        departments = 1 + -(-9 // batch_size)
        point = Point(SETTLE, departments + draw.randint(2, batches - 1), _either(draw))
    return Shape(people, batch_size, concurrency, point)


def _either(draw: random.Random) -> str:
    return draw.choice(("before", "after"))


def last_modified(rig: Rig) -> dict[str, int]:
    """Each person on the platform: when their record was last written."""
    return {e["username"]: int(e["last_modified"]) for e in rig.emulator.state()["employees"]}


def killed_first_sync_then_synced(rig: Rig, shape: Shape) -> None:
    rig.platform_options.update(batch_size=shape.batch_size, concurrency=shape.concurrency)
    # Any update of a synced person planned stops the run: recovery must plan none.
    rig.sync_settings.update(max_updates=0, max_update_ratio=0.0)
    rig.company = big_company(shape.people, departments=10)
    rig.company.write(rig.folder)
    rig.write_config()

    if shape.point.when == "http":
        kill_on_request(rig, shape.point)
        rig.emulator.set_faults()
    else:
        kill_in_statement(rig, shape.point)
    created = last_modified(rig)
    assert len(created) > 0, f"{shape}: nobody was created before the kill"

    result = rig.sync()

    assert result.exit_code == EXIT_OK, f"{shape}: {result.error}"
    assert_converged(rig)
    after = last_modified(rig)
    written_again = sorted(u for u, stamp in created.items() if after[u] != stamp)
    assert written_again == [], f"{shape}: {len(written_again)} needless writes"
    assert len(after) == shape.people
    assert plan_of(rig.sync()).changes == ()


@pytest.mark.parametrize("seed", range(6))
def test_a_large_apply_killed_in_flight_converges_without_an_update(rig: Rig, seed: int) -> None:
    killed_first_sync_then_synced(rig, drawn(seed))


@pytest.mark.long
@pytest.mark.parametrize("seed", range(6, 40))
def test_more_shapes_of_a_killed_large_apply(rig: Rig, seed: int) -> None:
    killed_first_sync_then_synced(rig, drawn(seed))
