"""Known problems follow the value to its current holder, and a value the platform refuses
for its form is a known problem too (issue 32). Against the emulator over HTTP.

- A value another account holds, passed on from account to account (a chain drawn from a
  seed): each run finds the new holder without sending the person again, exits 0, does
  not tell the problem again, and ``syncd status`` names the account that holds it now;
  once nobody holds it, the person gets it.
- A malformed value (a mobile, an e-mail address, drawn from seeds): the person is
  written without it, with their other changes; the problem is told once (exit 1), the
  runs after it exit 0 and send nothing; once the source mends it, it is set.
"""

from __future__ import annotations

import random

import pytest

from syncd import snapshot as store
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from tests.engine.company import World, employee
from tests.engine.test_cli import config_of
from tests.support.admin import AnotherAdmin
from tests.support.cli import syncd
from tests.support.runs import plan_of

STRANGERS = ("stranger1", "stranger2", "stranger3", "stranger4")  # accounts syncd does not own
VALUE = "13912345678"


def problems(world: World) -> list[dict[str, object]]:
    engine = store.open_engine(world.folder / "state" / "syncd.db")
    try:
        with engine.connect() as conn:
            return store.problem_rows(conn)
    finally:
        engine.dispose()


def held(world: World, name: str) -> dict[str, str]:
    return {e["username"]: e[name] for e in world.emulator.state()["employees"] if e.get(name)}


@pytest.mark.parametrize("seed", range(4))
def test_a_refused_value_passed_on_is_followed_to_its_holder_without_sending_again(
    world: World, capsys: pytest.CaptureFixture[str], seed: int
) -> None:
    draw = random.Random(seed)
    assert world.sync().exit_code == EXIT_OK
    admin = AnotherAdmin(world.emulator)
    for username in STRANGERS:
        admin.add_person(username)
    holder = draw.choice(STRANGERS)
    admin.edit(holder, mobile=VALUE)
    world.company.employees.append(employee("E9", "gus", "D2", mobile=VALUE))
    first = world.sync()
    assert (first.outcome, first.exit_code) == ("partial", EXIT_PARTIAL)

    for _ in range(draw.randint(2, 4)):
        # Passed on: the holder gives it up, another account takes it.
        taker = draw.choice([s for s in STRANGERS if s != holder])
        admin.edit(holder, mobile="")
        admin.edit(taker, mobile=VALUE)
        holder = taker
        writes = world.writes()

        result = world.sync()

        assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
        assert world.writes() == writes, f"sent again while {holder} holds it"
        assert not [n for n in plan_of(result).notes if n.kind == "known problem"]  # told once
        (problem,) = problems(world)
        assert (problem["value"], problem["holder"], problem["first_run"]) == (
            VALUE,
            holder,
            first.run_id,
        )
        code, output = syncd(capsys, "status", "--config", config_of(world))
        assert code == EXIT_OK, output
        assert f"gus: mobile {VALUE} held by {holder}," in output

    admin.edit(holder, mobile="")  # given up at last: set
    result = world.sync()
    assert (result.outcome, result.exit_code) == ("ok", EXIT_OK), result.error
    assert held(world, "mobile")["gus"] == VALUE
    assert problems(world) == []


MALFORMED = {
    "mobile": ("12ab", "+", "1234", "call me", "1" * 20, "13-9"),
    "email": ("no-at-sign", "a@b", "x y@acme.example", "@acme.example", "bob@"),
}


@pytest.mark.parametrize("seed", range(4))
def test_a_value_refused_for_its_form_is_a_known_problem_told_once(world: World, seed: int) -> None:
    draw = random.Random(seed)
    name = draw.choice(sorted(MALFORMED))
    bad = draw.choice(MALFORMED[name])
    assert world.sync().exit_code == EXIT_OK
    someone = draw.choice(["ann", "bob", "cat"])
    person = world.company.person(someone)
    person[name], person["job_title"] = bad, "Refused Form Tester"  # and another change
    world.company.employees.append(employee("E9", "gus", "D2", **{name: bad}))  # a new hire

    first = world.sync()

    # Told once; the people are written with everything else they have.
    assert (first.outcome, first.exit_code) == ("partial", EXIT_PARTIAL), first.error
    assert first.applied is not None and not first.applied.failed
    platform = world.emulator.state()["employees"]
    by_name = {e["username"]: e for e in platform}
    assert "gus" in by_name and not by_name["gus"].get(name)
    assert not by_name[someone].get(name)  # the old value is not what the source says
    titles = {p.get("job_title") for p in by_name[someone]["positions"]}
    assert "Refused Form Tester" in titles
    found = {(p["username"], p["field"], p["value"]) for p in problems(world)}
    assert found == {(someone, name, bad), ("gus", name, bad)}
    notes = [n for n in plan_of(first).notes if n.kind == "known problem"]
    assert len(notes) == 2 and all("refuse" in n.message for n in notes), notes

    # Known: nothing sent, exit 0, not told again.
    writes = world.writes()
    second = world.sync()
    assert (second.outcome, second.exit_code) == ("ok", EXIT_OK), second.error
    assert plan_of(second).changes == () and world.writes() == writes

    # Another change of the person: sent, without the value still refused; not told again.
    person["name"] = "Renamed Person"
    third = world.sync()
    assert (third.outcome, third.exit_code) == ("ok", EXIT_OK), third.error
    assert not [n for n in plan_of(third).notes if n.kind == "known problem"]
    assert {e["username"]: e["name"] for e in world.emulator.state()["employees"]}[
        someone
    ] == "Renamed Person"

    # HR mends it: set, and the problem is gone.
    mended = "13900000077" if name == "mobile" else f"{someone}.mended@acme.example"
    person[name] = mended
    assert world.sync().exit_code == EXIT_OK
    assert held(world, name)[someone] == mended
    assert {p["username"] for p in problems(world)} == {"gus"}
