"""A first run adopting the platform's accounts by email, mobile or work number (sync.match_by)."""

from __future__ import annotations

from syncd.errors import EXIT_OK
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of

from .support import Rig, query


def accounts(rig: Rig) -> dict[str, dict[str, str]]:
    return {e["username"]: e for e in rig.emulator.state()["employees"]}


def test_accounts_are_adopted_by_email_and_keep_their_platform_username(
    rig: Rig, admin: AnotherAdmin
) -> None:
    # The platform's accounts predate syncd: other usernames, the same e-mail addresses and
    # names (a name that differs is another person: test_wrong_person).
    admin.add_person("a.nn", name="Ann")
    admin.edit("a.nn", email="ANN@acme.example")  # any letter case matches
    admin.add_person("bob.old", name="Bob")
    admin.edit("bob.old", email="bob@acme.example")
    rig.sync_settings["match_by"] = "email"

    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    adopted = {c.display: c.reason for c in plan_of(result).changes if c.action.value == "update"}
    assert adopted == {
        "a.nn": "adopting the platform's account a.nn (matched by email)",
        "bob.old": "adopting the platform's account bob.old (matched by email)",
    }
    people = accounts(rig)
    assert set(people) == {"a.nn", "bob.old", "cat", "dan", "eve"}  # no second account
    assert people["a.nn"]["extension_id"] == "E1" and people["a.nn"]["email"] == "ann@acme.example"
    held = {r["source_id"]: r for r in query(rig.database, "SELECT * FROM employees")}
    assert (held["E1"]["username"], held["E1"]["matched_by"]) == ("a.nn", "email")

    assert plan_of(rig.sync()).changes == ()
    rig.company.person("ann")["mobile"] = "13912345678"
    result = rig.sync()
    assert [(c.action.value, c.display) for c in plan_of(result).changes] == [("update", "a.nn")]
    assert accounts(rig)["a.nn"]["mobile"] == "13912345678"


def test_mobile_numbers_match_by_their_digits(rig: Rig, admin: AnotherAdmin) -> None:
    admin.add_person("cat.w", name="Cat")
    admin.edit("cat.w", mobile="138-0000-0003")
    rig.sync_settings["match_by"] = "mobile"
    assert rig.sync().exit_code == EXIT_OK
    assert "cat" not in accounts(rig) and accounts(rig)["cat.w"]["extension_id"] == "E3"


def test_a_value_two_accounts_or_two_people_hold_is_a_conflict(
    rig: Rig, admin: AnotherAdmin
) -> None:
    for username in ("dan.a", "dan.b"):
        admin.add_person(username)
    admin.edit("dan.a", sn="W4")
    admin.edit("dan.b", sn="W4")
    rig.company.person("dan")["sn"] = "W4"
    rig.company.person("eve")["sn"] = "W5"
    rig.company.person("bob")["sn"] = "W5"
    rig.sync_settings["match_by"] = "sn"

    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    conflicts = sorted(n.message for n in plan_of(result).notes if n.kind == "conflict")
    assert conflicts == [
        "bob: 2 people in the source hold sn W5: neither adopted nor created until it is unique",
        "dan: 2 accounts on the platform (dan.a, dan.b) hold sn W4: neither adopted nor "
        "created until it is unique",
        "eve: 2 people in the source hold sn W5: neither adopted nor created until it is unique",
    ]
    assert {"bob", "dan", "eve"}.isdisjoint(accounts(rig))
