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
from dataclasses import dataclass

import pytest

from syncd import snapshot as store
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.plan import Note
from syncd.run.runner import RunResult
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


def known_problem_notes(result: RunResult) -> list[Note]:
    """The run's notes of a known problem (told once: none on the runs after)."""
    return [n for n in plan_of(result).notes if n.kind == "known problem"]


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
        assert not known_problem_notes(result)  # told once
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


@dataclass(frozen=True)
class Refused:
    """A malformed value drawn for a field, and the person whose source row now holds it."""

    name: str  # the field: mobile or email
    bad: str
    someone: str
    person: dict[str, str]  # their row in the company's CSV files


def refuse_a_form(world: World, draw: random.Random) -> Refused:
    """After a first sync, a malformed value for someone (with another change) and a new hire."""
    name = draw.choice(sorted(MALFORMED))
    bad = draw.choice(MALFORMED[name])
    assert world.sync().exit_code == EXIT_OK
    someone = draw.choice(["ann", "bob", "cat"])
    person = world.company.person(someone)
    person[name], person["job_title"] = bad, "Refused Form Tester"  # and another change
    world.company.employees.append(employee("E9", "gus", "D2", **{name: bad}))  # a new hire
    return Refused(name, bad, someone, person)


def check_written_without_it(world: World, refused: Refused) -> None:
    """The new hire and the person are on the platform, without the value, with the change."""
    name, someone = refused.name, refused.someone
    platform = world.emulator.state()["employees"]
    by_name = {e["username"]: e for e in platform}
    assert "gus" in by_name and not by_name["gus"].get(name)
    assert not by_name[someone].get(name)  # the old value is not what the source says
    titles = {p.get("job_title") for p in by_name[someone]["positions"]}
    assert "Refused Form Tester" in titles


def check_told_once(world: World, first: RunResult, refused: Refused) -> None:
    """The run that met the value: partial, with the people written and the problem known."""
    assert (first.outcome, first.exit_code) == ("partial", EXIT_PARTIAL), first.error
    assert first.applied is not None and not first.applied.failed
    check_written_without_it(world, refused)
    found = {(p["username"], p["field"], p["value"]) for p in problems(world)}
    name, bad = refused.name, refused.bad
    assert found == {(refused.someone, name, bad), ("gus", name, bad)}
    notes = known_problem_notes(first)
    assert len(notes) == 2 and all("refuse" in n.message for n in notes), notes


def check_sent_without_it_and_not_told_again(world: World, someone: str) -> None:
    third = world.sync()
    assert (third.outcome, third.exit_code) == ("ok", EXIT_OK), third.error
    assert not known_problem_notes(third)
    assert {e["username"]: e["name"] for e in world.emulator.state()["employees"]}[
        someone
    ] == "Renamed Person"


def mended_value(refused: Refused) -> str:
    return "13900000077" if refused.name == "mobile" else f"{refused.someone}.mended@acme.example"


@pytest.mark.parametrize("seed", range(4))
def test_a_value_refused_for_its_form_is_a_known_problem_told_once(world: World, seed: int) -> None:
    refused = refuse_a_form(world, random.Random(seed))

    first = world.sync()

    # Told once; the people are written with everything else they have.
    check_told_once(world, first, refused)

    # Known: nothing sent, exit 0, not told again.
    writes = world.writes()
    second = world.sync()
    assert (second.outcome, second.exit_code) == ("ok", EXIT_OK), second.error
    assert plan_of(second).changes == () and world.writes() == writes

    # Another change of the person: sent, without the value still refused; not told again.
    refused.person["name"] = "Renamed Person"
    check_sent_without_it_and_not_told_again(world, refused.someone)

    # HR mends it: set, and the problem is gone.
    mended = mended_value(refused)
    refused.person[refused.name] = mended
    assert world.sync().exit_code == EXIT_OK
    assert held(world, refused.name)[refused.someone] == mended
    assert {p["username"] for p in problems(world)} == {"gus"}
