"""People changed on the platform behind syncd's back: found, reported, put back.

Another administrator works on the platform through its API between two syncs. The next
sync finds what changed among the people syncd holds (the users list with
``refresh_time``, then their employee records) and who was deleted (on a complete read,
the organization's employees listed in the nodes whose count moved, and along the whole
tree once a day; on any read, those the users list names whose employee record is gone),
and puts each back to the source's truth; the report lists every drift with the
platform's value before and the source's after. People syncd does not hold are left alone.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing

import pytest

from syncd.errors import EXIT_BLOCKED, EXIT_OK, EXIT_PARTIAL
from syncd.plan import Action
from syncd.run.runner import RunResult
from syncd.survey import view
from tests.engine.company import employee
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of

from .support import Rig, assert_converged, query, writes


def drift_notes(result: RunResult) -> list[str]:
    assert result.plan is not None
    return [n.message for n in result.plan.notes if n.kind == "drift"]


def planned(result: RunResult) -> list[tuple[str, str]]:
    assert result.plan is not None
    return [(c.action.value, c.display) for c in result.plan.changes]


def check_exits_1(rig: Rig) -> None:
    """`syncd sync --check` sees the drift before it is repaired."""
    done = rig.cli("sync", "--check")
    assert done.returncode == EXIT_PARTIAL, done.stdout + done.stderr


def test_an_active_person_deleted_on_the_platform_is_recreated(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.delete_person("bob")
    # The domain's user stays in the users list: only the organization's employees say
    # bob is gone.
    assert admin.call("GET", "/v1/users/bob", type="username")["username"] == "bob"
    check_exits_1(synced)

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("create", "bob")]
    assert drift_notes(result) == ["bob was deleted on the platform: recreating the account"]
    assert_converged(synced)
    assert plan_of(synced.sync()).changes == ()


def test_a_person_locked_on_the_platform_is_unlocked(synced: Rig, admin: AnotherAdmin) -> None:
    admin.lock("cat")
    check_exits_1(synced)
    result = synced.sync()
    assert planned(result) == [("unlock", "cat")]
    assert drift_notes(result) == ["cat was locked on the platform; unlocking"]
    assert_converged(synced)


def test_a_person_moved_and_edited_on_the_platform_is_put_back_with_before_and_after(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.move_person("eve", "D4")
    admin.edit("dan", mobile="13999999999", email="dan@elsewhere.example")
    check_exits_1(synced)

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [("update", "dan"), ("update", "eve")]
    assert sorted(drift_notes(result)) == [
        "dan: email, mobile changed on the platform; putting back",
        "eve: positions changed on the platform; putting back",
    ]
    items = {
        r["display"]: r
        for r in query(synced.database, "SELECT * FROM run_items WHERE run_id = ?", result.run_id)
    }
    dan_before, dan_after = json.loads(items["dan"]["before"]), json.loads(items["dan"]["after"])
    assert (dan_before["mobile"], dan_after["mobile"]) == ("13999999999", "13800000004")
    eve_before, eve_after = json.loads(items["eve"]["before"]), json.loads(items["eve"]["after"])
    assert [p["department"] for p in eve_before["positions"]] == ["D4"]
    assert [p["department"] for p in eve_after["positions"]] == ["D3"]
    assert_converged(synced)
    dan = admin.employee("dan")
    assert (dan["mobile"], dan["email"]) == ("13800000004", "dan@acme.example")


def test_a_field_the_platform_filled_where_the_source_has_none_is_cleared(
    synced: Rig, admin: AnotherAdmin
) -> None:
    synced.company.person("ann")["mobile"] = ""
    assert synced.sync().exit_code == EXIT_OK
    admin.edit("ann", mobile="13700000000")
    result = synced.sync()
    assert planned(result) == [("update", "ann")]
    assert admin.employee("ann")["mobile"] == ""


def test_a_leaver_unlocked_on_the_platform_is_locked_again_and_one_deleted_there_is_forgotten(
    synced: Rig, admin: AnotherAdmin
) -> None:
    synced.sync_settings.update(leaver_policy="lock")
    company = synced.company
    company.employees = [e for e in company.employees if e["username"] not in ("bob", "dan")]
    assert synced.sync().exit_code == EXIT_OK  # bob and dan locked as gone
    admin.unlock("bob")
    admin.delete_person("dan")

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [("forget", "dan"), ("lock", "bob")]
    assert admin.employee("bob")["locked"] is True
    assert not query(synced.database, "SELECT * FROM employees WHERE username = 'dan'")
    assert plan_of(synced.sync()).changes == ()


def test_a_departed_person_deleted_on_the_platform_is_not_recreated(
    synced: Rig, admin: AnotherAdmin
) -> None:
    synced.company.person("dan")["status"] = "departed"
    assert synced.sync().exit_code == EXIT_OK
    admin.delete_person("dan")
    result = synced.sync()
    assert planned(result) == [("forget", "dan")]
    assert "dan" not in synced.platform().people
    assert plan_of(synced.sync()).changes == ()


@pytest.mark.parametrize("left", ["before", "now"])
@pytest.mark.parametrize("renamed", ["dan", "daniel", "Dan"])
def test_a_leaver_deleted_on_the_platform_is_let_go_of_whatever_their_username_did(
    synced: Rig, admin: AnotherAdmin, left: str, renamed: str
) -> None:
    """Found by the --long convergence suite (seeds 83, 102, 145): a departed person whose
    username the source changed, and whose account another administrator deleted (or a
    wipe did), was sent a lock that failed "no matching employee" at every run (exit 1 for
    ever). There is nothing to lock: the record is let go of, nothing is sent."""
    dan = synced.company.person("dan")
    if left == "before":
        dan["status"] = "departed"
        assert synced.sync().exit_code == EXIT_OK
    admin.delete_person("dan")
    dan["username"], dan["status"] = renamed, "departed"
    before = writes(synced.emulator)

    result = synced.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("forget", "dan")]
    assert writes(synced.emulator) == before
    assert not query(synced.database, "SELECT * FROM employees WHERE source_id = 'E4'")
    assert plan_of(synced.sync()).changes == ()


@pytest.mark.parametrize("taken", [False, True])
@pytest.mark.parametrize("policy", ["conflict", "remove_and_create"])
@pytest.mark.parametrize("renamed", ["daniel", "Dan"])
def test_an_active_person_renamed_after_their_account_was_deleted_gets_one_under_the_new_name(
    synced: Rig, admin: AnotherAdmin, renamed: str, policy: str, taken: bool
) -> None:
    """Someone deleted dan's account, and HR renamed him: there is no old account to keep,
    rename or replace. He used to get a conflict note at every run and no account at all
    (under "conflict"), or a removal that could only fail. Now he is planned as any record
    not synced yet: an account is made under the new username, unless another person's
    account holds it (a conflict, and that account is left alone)."""
    synced.sync_settings.update(username_change=policy)
    assert synced.sync().exit_code == EXIT_OK
    admin.delete_person("dan")
    synced.company.person("dan")["username"] = renamed
    if taken:
        admin.add_person(renamed, "D2", name="Someone Else")
    theirs = {e["username"]: e for e in synced.emulator.state()["employees"]}.get(renamed)

    for _ in range(2):
        result = synced.sync()
        assert result.exit_code in (EXIT_OK, EXIT_PARTIAL), result.error
        accounts = {e["username"]: e for e in synced.emulator.state()["employees"]}
        assert "dan" not in accounts
        if taken:
            assert accounts[renamed] == theirs  # not adopted, not written, not locked
            assert not query(synced.database, "SELECT * FROM employees WHERE source_id = 'E4'")
        else:
            assert accounts[renamed]["extension_id"] == "E4"
            assert synced.admin_view()[renamed] == ("Sales", False)
    assert plan_of(result).changes == ()


@pytest.mark.parametrize("left", [False, True], ids=["active", "departed"])
def test_accounts_deleted_while_their_rows_are_rejected_count_as_if_made_at_once(
    synced: Rig, admin: AnotherAdmin, left: bool
) -> None:
    """Four accounts deleted on the platform while their rows are rejected: the records are
    let go of, and once the rows are mended the accounts are made as a wiped platform's are
    (people held active: no review), while people who had left stay a re-activation that
    stops the run (past the floor of 3), exactly as had the rows been read all along."""
    four = [f"fay{n}" for n in range(4)]
    synced.company.employees += [employee(f"E{n}", f"fay{n - 10}", "D4") for n in range(10, 16)]
    assert synced.sync().exit_code == EXIT_OK
    if left:
        for name in four:
            synced.company.person(name)["status"] = "departed"
        assert synced.sync().exit_code == EXIT_OK
    for name in four:
        admin.delete_person(name)
        synced.company.person(name)["name"] = ""  # rejected: a name is required
    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [("forget", name) for name in four]

    for name in four:
        synced.company.person(name).update(name=name.title(), status="active")
    result = synced.sync()
    if left:
        assert result.exit_code == EXIT_BLOCKED
        assert "--allow-reactivations 4" in str(result.error)
        assert not set(four) & set(synced.admin_view())
    else:
        assert result.exit_code == EXIT_OK, result.error
        assert sorted(planned(result)) == [("create", name) for name in four]
        assert all(synced.admin_view()[name] == ("Sales", False) for name in four)
        assert_converged(synced)


def test_people_syncd_does_not_hold_are_left_alone(synced: Rig, admin: AnotherAdmin) -> None:
    admin.add_person("guest", "D2")
    admin.add_person("visitor")
    admin.lock("visitor")
    admin.edit("guest", mobile="13600000000")
    before = synced.emulator.state()["employees"]

    result = synced.sync()
    assert result.exit_code == EXIT_OK and result.plan is not None
    assert result.plan.changes == () and drift_notes(result) == []
    foreign = {e["username"]: e for e in synced.emulator.state()["employees"]}
    assert {u: foreign[u] for u in ("guest", "visitor")} == {
        e["username"]: e for e in before if e["username"] in ("guest", "visitor")
    }


EMPLOYEES = "GET /v1/admin/organizations/{code}/employees"


def test_a_no_change_run_lists_no_employee_and_writes_nothing(synced: Rig) -> None:
    synced.emulator.reset(data=False)  # count this run's requests only
    result = synced.sync()
    assert result.exit_code == EXIT_OK and result.plan is not None and result.plan.changes == ()
    requests = synced.emulator.stats()["requests"]
    assert writes(synced.emulator) == {}
    assert requests.get("GET /v1/users") == 1  # who changed since the last run: nobody
    # Every node's employee count is as the last run found it: nobody listed or asked for.
    assert EMPLOYEES not in requests


def test_a_deletion_is_found_by_listing_the_one_node_whose_count_it_moved(
    synced: Rig, admin: AnotherAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(view, "LISTING_PART", 2)  # the whole tree: 4 listings
    admin.delete_person("dan")  # Sales (D4): dan and cat; now cat alone
    synced.emulator.reset(data=False)

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("create", "dan")]
    assert synced.emulator.stats()["requests"][EMPLOYEES] == 1 + 1  # Sales; dan by name
    assert_converged(synced)


def test_a_deletion_a_hire_hides_in_the_same_node_is_found_by_the_daily_listing(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.delete_person("dan")
    admin.add_person("guest", "D4")  # Sales holds two people again
    # As on a platform whose removal leaves the user's refresh_time as it was: the users
    # list names nobody changed since the hire.
    newest = admin.call("GET", "/v1/users/guest", type="username")["last_modified"]
    set_cursor(synced, "platform.people_refresh_time", str(newest))
    assert plan_of(synced.sync()).changes == ()

    census = json.loads(cursor(synced, "platform.census"))
    census["listed_at"] -= view.CENSUS_EVERY_MS  # the whole tree was listed a day ago
    set_cursor(synced, "platform.census", json.dumps(census))
    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("create", "dan")]
    assert admin.employee("dan")["username"] == "dan"
    assert admin.employee("guest")["username"] == "guest"  # not syncd's: left alone
    assert plan_of(synced.sync()).changes == ()


def cursor(rig: Rig, name: str) -> str:
    return str(query(rig.database, "SELECT value FROM cursors WHERE name = ?", name)[0]["value"])


def set_cursor(rig: Rig, name: str, value: str) -> None:
    with closing(sqlite3.connect(rig.database)) as db, db:
        db.execute("UPDATE cursors SET value = ? WHERE name = ?", (value, name))


def test_a_drift_whose_repair_fails_is_found_again_by_the_next_run(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.edit("dan", mobile="13999999999")
    synced.emulator.set_faults(reject=[{"field": "username", "pattern": "^dan$"}])
    assert synced.sync().exit_code == EXIT_PARTIAL
    synced.emulator.set_faults()
    result = synced.sync()
    assert [c.action for c in plan_of(result).changes] == [Action.UPDATE]
    assert admin.employee("dan")["mobile"] == "13800000004"


def test_a_person_moved_there_behind_syncds_back_does_not_keep_a_dropped_department(
    synced: Rig, admin: AnotherAdmin
) -> None:
    # Sales (D4) leaves the source; another admin has just put bob in it. The run moves
    # bob back, so Sales is empty by the time its delete is sent: one run is enough.
    admin.move_person("bob", "D4")
    company = synced.company
    company.departments = [d for d in company.departments if d["id"] != "D4"]
    company.person("dan")["department"] = "D1"
    company.person("cat")["positions"] = ""

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert ("delete", "Acme/Head Office/Sales") in planned(result)
    assert "D4" not in synced.platform().nodes
    assert plan_of(synced.sync()).changes == ()


def test_a_drift_on_a_person_whose_row_is_rejected_is_put_back_once_the_row_is_mended(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.move_person("bob", "D4")
    synced.company.person("bob")["name"] = ""  # the row is rejected: bob is left as he is
    result = synced.sync()
    assert result.exit_code == EXIT_OK and planned(result) == []
    assert synced.admin_view()["bob"] == ("Sales", False)

    synced.company.person("bob")["name"] = "Bob"  # mended: the drift must still be seen
    result = synced.sync()
    assert planned(result) == [("update", "bob")]
    assert drift_notes(result) == ["bob: positions changed on the platform; putting back"]
    assert synced.admin_view()["bob"] == ("R&D", False)


def test_a_platform_that_caps_its_pages_makes_no_one_look_deleted(synced: Rig) -> None:
    synced.emulator.set_faults(page_cap=2)  # 5 people and the root's: pages of 2 at most
    result = synced.sync()
    assert result.exit_code == EXIT_OK and result.plan is not None
    assert result.plan.changes == () and drift_notes(result) == []


def test_the_employees_are_listed_in_parts_along_the_tree_and_nobody_else_looks_deleted(
    synced: Rig, admin: AnotherAdmin, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Parts of 2 people at most, once eve is gone: the root and Head Office (ann) alone,
    # R&D with Backend (bob, cat) and Sales (cat, dan) whole; cat, in two parts, is one.
    monkeypatch.setattr(view, "LISTING_PART", 2)
    monkeypatch.setattr(view, "CENSUS_EVERY_MS", 0)  # the whole tree, every complete read
    admin.delete_person("eve")
    synced.emulator.reset(data=False)

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("create", "eve")]
    listings = synced.emulator.stats()["requests"][EMPLOYEES]
    assert listings == 4 + 1  # the parts, and eve asked about by name
    assert_converged(synced)


def test_drift_check_off_reads_nobody_on_the_platform_and_leaves_people_as_they_are(
    synced: Rig, admin: AnotherAdmin
) -> None:
    synced.sync_settings.update(drift_check=False)
    admin.edit("dan", mobile="13999999999")
    admin.delete_person("bob")
    synced.emulator.reset(data=False)

    result = synced.sync()
    assert result.exit_code == EXIT_OK and planned(result) == [] and drift_notes(result) == []
    reads = [k for k in synced.emulator.stats()["requests"] if k.startswith("GET")]
    assert not [k for k in reads if "/users" in k or "/employees" in k], reads

    synced.sync_settings.update(drift_check=True)  # and on again: all of it is found
    assert sorted(planned(synced.sync())) == [("create", "bob"), ("update", "dan")]


def test_a_drift_is_in_the_report_shown_on_the_command_line_with_before_and_after(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.move_person("eve", "D4")
    admin.edit("dan", mobile="13999999999")
    done = synced.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stdout + done.stderr

    shown = synced.cli("reports", "show", "latest")
    assert shown.returncode == EXIT_OK, shown.stderr
    lines = [line.strip() for line in shown.stdout.splitlines()]
    # Each repair is an update said to be drift, with the platform's value before and the
    # source's after, and a drift note says what changed there.
    updates = [line for line in lines if line.startswith("~ update employee")]
    assert [u.split(":", 1)[1].split("—")[0].strip() for u in updates] == [
        "drift: mobile changed on the platform",
        "drift: positions changed on the platform",
    ], shown.stdout
    assert "mobile: 13999999999 → 13800000004" in lines, shown.stdout
    assert "positions: Acme/Head Office/Sales → Acme/Head Office/R&D/Backend" in lines
    assert "drift: E4: dan: mobile changed on the platform; putting back" in lines
    assert "drift: E5: eve: positions changed on the platform; putting back" in lines
