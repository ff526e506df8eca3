"""kill -9 of ``syncd sync`` while unique values are freed, set, and sent again without a
value another account holds (issue 25): the next run converges all the same.

The run killed swaps two mobiles, rotates three e-mail addresses, passes a mobile to a new
hire, and gives someone a mobile an account syncd does not manage holds. It is killed at
the Nth ``import-employees`` request (the frees, the sets, the retry without the value),
or after the Nth known problem is written and before its transaction commits. The next
run ends with every value where the source puts it, the refused one recorded once as a
known problem naming its holder, nothing left unanswered, and one more run has nothing to
do and exits 0. The killed run told nothing, so the next one tells the problem once,
whichever of the two found it.
"""

from __future__ import annotations

import pytest

from syncd.errors import EXIT_OK, EXIT_PARTIAL
from tests.engine.company import employee
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of
from tests.support.snapshot_rows import IN_FLIGHT_ITEMS

from .support import Rig, assert_nothing_twice, query
from .test_crashes import Point, kill_in_statement, kill_on_request

FOREIGN = "13912345678"
POINTS = [
    *(Point("import-employees", n) for n in (1, 2, 3, 4, 5)),
    Point("INSERT INTO known_problems", 1, "after"),
]


def values(rig: Rig) -> dict[str, tuple[str, str]]:
    return {
        e["username"]: (e.get("mobile") or "", e.get("email") or "")
        for e in rig.emulator.state()["employees"]
    }


@pytest.mark.parametrize("point", POINTS, ids=str)
def test_a_sync_killed_while_values_move_is_resolved_by_the_next_run(
    rig: Rig, point: Point
) -> None:
    assert rig.sync().exit_code == EXIT_OK
    admin = AnotherAdmin(rig.emulator)
    admin.add_person("outsider")
    admin.edit("outsider", mobile=FOREIGN)
    person = rig.company.person
    person("ann")["mobile"], person("bob")["mobile"] = (
        person("bob")["mobile"],
        person("ann")["mobile"],
    )
    emails = [person(u)["email"] for u in ("cat", "dan", "eve")]
    for username, email in zip(("cat", "dan", "eve"), emails[1:] + emails[:1], strict=True):
        person(username)["email"] = email
    rig.company.employees.insert(0, employee("E9", "gus", "D2", mobile=person("cat")["mobile"]))
    person("cat")["mobile"] = "13700000003"
    rig.company.employees.append(employee("E8", "hal", "D2", mobile=FOREIGN))
    rig.company.write(rig.folder)
    rig.write_config()
    rig.emulator.reset(data=False)  # statistics of this run only

    if point.when == "http":
        kill_on_request(rig, point)
    else:
        kill_in_statement(rig, point)

    result = rig.sync()
    # The killed run told nothing: the next one tells the problem, whoever found it.
    assert (result.outcome, result.exit_code) == ("partial", EXIT_PARTIAL), result.error
    told = [n.message for n in plan_of(result).notes if n.kind == "known problem"]
    assert len(told) == 1 and told[0].startswith(
        f"hal: mobile {FOREIGN} is already used by outsider"
    )
    assert_nothing_twice(rig.emulator)
    found = values(rig)
    for e in rig.company.employees:
        mobile = "" if e["username"] == "hal" else e["mobile"]
        assert found[e["username"]] == (mobile, e["email"]), e["username"]
    assert found["outsider"][0] == FOREIGN
    problems = query(rig.database, "SELECT * FROM known_problems")
    assert [(p["username"], p["value"], p["holder"]) for p in problems] == [
        ("hal", FOREIGN, "outsider")
    ]
    assert not query(rig.database, IN_FLIGHT_ITEMS)
    again = rig.sync()
    assert again.exit_code == EXIT_OK
    assert plan_of(again).changes == ()
