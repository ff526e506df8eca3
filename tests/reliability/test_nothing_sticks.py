"""What another administrator does to the platform is undone by one run, whatever the
platform's clock says, and a first sync's own writes are not read back.

Each test fails on the code before issue 25's fixes: a wiped platform took two runs (the
first one said ok with every person missing); changes made after the platform's clock
was set back were never repaired, not even by the daily listing; a department kept
"because something below it is kept" stayed empty after the same run moved that
subtree out; the run after a first sync listed and compared everyone it had written.
"""

from __future__ import annotations

import json

from syncd import snapshot as store
from syncd.config import platform_of
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.model import Kind
from syncd.plan import Action, Change, Plan, PlatformView
from syncd.platform import PlatformClient
from syncd.survey import view
from syncd.survey.settle import settle
from tests.engine.company import department, employee
from tests.support.admin import AnotherAdmin

from .support import Rig, assert_converged, query, writes
from .test_people_drift import EMPLOYEES, cursor, drift_notes, planned, set_cursor


def check(rig: Rig) -> int:
    """`syncd sync --check`'s exit code: 1 while something is left to do."""
    done = rig.cli("sync", "--check")
    assert done.returncode in (EXIT_OK, EXIT_PARTIAL), done.stdout + done.stderr
    return done.returncode


def quiet(rig: Rig) -> dict[str, int]:
    """The requests of a run that must have nothing to do (it plans and writes nothing)."""
    rig.emulator.reset(data=False)
    result = rig.sync()
    assert result.exit_code == EXIT_OK and result.plan is not None
    assert result.plan.changes == (), planned(result)
    assert writes(rig.emulator) == {}
    requests: dict[str, int] = rig.emulator.stats()["requests"]
    return requests


# ---------------------------------------------------------------- case 3: a wiped platform


def test_a_wiped_platform_is_rebuilt_departments_and_people_by_one_run(synced: Rig) -> None:
    # Another administrator wipes the organization: every node but the root, every
    # employee and every user of the domain (the users list names nobody).
    synced.emulator.reset(data=True)

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [
        ("create", "Acme/Head Office"),
        ("create", "Acme/Head Office/R&D"),
        ("create", "Acme/Head Office/R&D/Backend"),
        ("create", "Acme/Head Office/Sales"),
        ("create", "ann"),
        ("create", "bob"),
        ("create", "cat"),
        ("create", "dan"),
        ("create", "eve"),
    ]
    assert_converged(synced)
    assert check(synced) == EXIT_OK


def test_people_gone_with_their_deleted_department_are_recreated_by_the_same_run(
    synced: Rig, admin: AnotherAdmin
) -> None:
    # Sales (D4) and the people only there deleted; their users left as they were, as on a
    # platform whose removal does not refresh the user: only Sales' disappearance says so.
    newest = int(cursor(synced, "platform.people_refresh_time"))
    admin.delete_person("dan")
    admin.move_person("cat", "D3")  # cat's second position was in Sales
    admin.delete_node("D4")
    dan = admin.call("GET", "/v1/users/dan", type="username")["last_modified"]
    assert dan > newest
    set_cursor(synced, "platform.people_refresh_time", str(dan))  # the users list names nobody

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert ("create", "dan") in planned(result), planned(result)
    assert ("update", "cat") in planned(result), planned(result)
    assert_converged(synced)
    assert check(synced) == EXIT_OK


def test_a_person_deleted_there_while_their_row_is_rejected_is_made_again_once_it_is_read(
    synced: Rig, admin: AnotherAdmin
) -> None:
    # Found by the convergence suite (a wipe while a row was rejected): the deletion was
    # seen once, by a run that could not plan for bob, and never again.
    synced.company.person("bob")["name"] = ""  # rejected: bob is left as he is
    admin.delete_person("bob")
    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("forget", "bob")]  # nothing sent

    synced.company.person("bob")["name"] = "Bob"
    result = synced.sync()
    assert planned(result) == [("create", "bob")]
    assert_converged(synced)


# ---------------------------------------------------------------- case 4: a clock set back


def test_changes_made_after_the_platforms_clock_was_set_back_are_repaired_by_the_next_run(
    synced: Rig, admin: AnotherAdmin
) -> None:
    synced.emulator.set_clock_back(600)  # ten minutes
    admin.edit("dan", mobile="13999999999")
    admin.lock("cat")
    stamp = admin.employee("dan")["last_modified"]
    assert stamp < int(cursor(synced, "platform.people_refresh_time"))  # before the cursor
    assert check(synced) == EXIT_PARTIAL

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [("unlock", "cat"), ("update", "dan")]
    assert_converged(synced)
    # The cursor is the platform's time now: what changes next is read as usual (those
    # stamped before the clock was set back are read again, and found as syncd wrote them).
    assert int(cursor(synced, "platform.people_refresh_time")) <= synced.emulator.state()["now"]
    quiet(synced)
    admin.edit("eve", name="Eve Renamed")
    result = synced.sync()
    assert planned(result) == [("update", "eve")]
    assert_converged(synced)
    synced.emulator.advance_clock(600)  # past every stamp given before it was set back
    quiet(synced)
    assert EMPLOYEES not in quiet(synced)


def test_the_daily_listing_compares_everyone_whatever_their_stamps_say(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.edit("dan", mobile="13999999999")
    admin.lock("cat")
    # As a clock set back and caught up again between two runs leaves it: the changes
    # carry stamps the cursor has passed, and the users list names nobody.
    newest = admin.call("GET", "/v1/users/cat", type="username")["last_modified"]
    set_cursor(synced, "platform.people_refresh_time", str(newest))
    assert quiet(synced).get(EMPLOYEES) is None  # no count moved: nothing listed

    census = json.loads(cursor(synced, "platform.census"))
    census["listed_at"] -= view.CENSUS_EVERY_MS  # the whole tree was listed a day ago
    set_cursor(synced, "platform.census", json.dumps(census))
    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert sorted(planned(result)) == [("unlock", "cat"), ("update", "dan")]
    assert_converged(synced)


def test_a_move_the_cursor_missed_is_found_by_listing_the_nodes_whose_count_it_moved(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.move_person("eve", "D4")
    newest = admin.call("GET", "/v1/users/eve", type="username")["last_modified"]
    set_cursor(synced, "platform.people_refresh_time", str(newest))

    result = synced.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert planned(result) == [("update", "eve")]
    assert drift_notes(result) == ["eve: positions changed on the platform; putting back"]
    assert_converged(synced)


def test_a_census_from_a_time_syncds_clock_has_not_reached_is_listed_again(
    synced: Rig, admin: AnotherAdmin
) -> None:
    admin.edit("dan", mobile="13999999999")
    newest = admin.call("GET", "/v1/users/dan", type="username")["last_modified"]
    set_cursor(synced, "platform.people_refresh_time", str(newest))
    census = json.loads(cursor(synced, "platform.census"))
    census["listed_at"] += view.CENSUS_EVERY_MS  # syncd's clock was set back a day since
    set_cursor(synced, "platform.census", json.dumps(census))

    result = synced.sync()
    assert planned(result) == [("update", "dan")]
    assert_converged(synced)


# ---------------------------------------------------------------- case 9: kept below


def test_a_department_kept_for_a_subtree_this_run_moves_out_is_deleted_by_the_same_run(
    rig: Rig,
) -> None:
    # Ops (D5) is below Backend (D3), below R&D (D2); fay works in Ops.
    rig.sync_settings.update(max_removal_ratio=1.0, leaver_policy="lock")
    company = rig.company
    company.departments.append(department("D5", "Ops", "D3"))
    company.employees.append(employee("E6", "fay", "D5"))
    assert rig.sync().exit_code == EXIT_OK

    # R&D and Ops leave the source; Backend moves to Sales (Ops with it, on the platform);
    # fay leaves and stays locked in Ops, which is kept for her.
    company.departments = [d for d in company.departments if d["id"] not in ("D2", "D5")]
    company.unit("D3")["parent_id"] = "D4"
    company.person("bob")["department"] = "D1"
    company.employees = [e for e in company.employees if e["username"] != "fay"]

    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert ("delete", "Acme/Head Office/R&D") in planned(result), planned(result)
    assert ("delete", "Acme/Head Office/R&D/Backend/Ops") not in planned(result)
    nodes = {n.get("serial_no"): n for n in rig.emulator.state()["nodes"]}
    assert "D2" not in nodes
    assert nodes["D5"]["full_name_path"] == "Acme/Head Office/Sales/Backend/Ops"
    assert check(rig) == EXIT_OK


# ---------------------------------------------------------------- case 7: the first re-sync


def test_the_run_after_a_first_sync_reads_back_nobody_it_wrote(rig: Rig) -> None:
    assert rig.sync().exit_code == EXIT_OK
    requests = quiet(rig)
    assert requests.get("GET /v1/users") == 1  # who changed since the first sync: nobody
    assert EMPLOYEES not in requests  # no employee listed, nobody asked for by name


def test_the_cursor_a_run_leaves_stays_before_a_change_it_did_not_make(
    synced: Rig, admin: AnotherAdmin
) -> None:
    # As the platform stands once a run that wrote bob is answered: dan, whom it did not
    # write, was edited by another administrator while it ran, and bob written after.
    admin.edit("dan", mobile="13999999999")
    admin.edit("bob", mobile="13700000002")
    dan, bob = (admin.employee(u)["last_modified"] for u in ("dan", "bob"))
    assert bob > dan
    since = int(cursor(synced, "platform.people_refresh_time"))
    wrote_bob = Plan((Change(Kind.EMPLOYEE, Action.UPDATE, "E2", "bob"),))
    engine = store.open_engine(synced.database)
    settings = synced.settings()
    client = PlatformClient(platform_of(settings), store.TokenStore(engine))
    try:
        snapshot = store.load_snapshot(engine)
        seen = PlatformView(root_id=admin.node_id(None), root_name="Acme", people_cursor=since)
        settled = settle(client, seen, wrote_bob, snapshot, concurrency=2)
    finally:
        client.close()
        engine.dispose()
    assert settled is not None and settled.people == dan - 1
    # Without dan's change, bob's write is the newest stamp: nothing is read back.
    wrote_both = Plan((*wrote_bob.changes, Change(Kind.EMPLOYEE, Action.UPDATE, "E4", "dan")))
    engine = store.open_engine(synced.database)
    client = PlatformClient(platform_of(settings), store.TokenStore(engine))
    try:
        settled = settle(client, seen, wrote_both, store.load_snapshot(engine), concurrency=2)
    finally:
        client.close()
        engine.dispose()
    assert settled is not None and settled.people == bob


def test_nobody_is_read_back_after_a_run_that_wrote_people(synced: Rig) -> None:
    synced.company.person("bob")["mobile"] = "13700000002"
    synced.company.person("eve")["department"] = "D4"
    assert sorted(planned(synced.sync())) == [("update", "bob"), ("update", "eve")]
    requests = quiet(synced)
    assert requests.get("GET /v1/users") == 1
    assert EMPLOYEES not in requests  # the counts the writes moved are the census's now
    assert query(synced.database, "SELECT * FROM run_items WHERE outcome = 'failed'") == []
