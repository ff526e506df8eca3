"""Identity and ownership over real HTTP and a real state database: usernames in another
letter case, re-keys and adoptions keeping their lock state, locks only for accounts syncd
owns, adoption of a tree that grows in the same run, and department deletes that never
leave a child behind."""

from __future__ import annotations

import random
import sqlite3
import unicodedata
from typing import Any

import pytest

from syncd.config import load_settings
from syncd.errors import EXIT_OK, EXIT_PARTIAL
from syncd.run.runner import RunRequest, run_sync
from tests.engine.company import PATHS_HEADER, World, department, employee
from tests.support.admin import AnotherAdmin

DELETE_NODE = "DELETE /v1/admin/organizations/{org_code}/{node_id}"
UNLOCK = "POST /v1/admin/organizations/{code}/employees/{employee_id}/unlock"


def rows(world: World, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(world.folder / "state" / "syncd.db") as db:
        return db.execute(sql, args).fetchall()


def lose_state(world: World) -> None:
    """A new host, or a lost state database: the next run adopts what the platform holds."""
    for suffix in ("", "-wal", "-shm"):
        (world.folder / "state" / f"syncd.db{suffix}").unlink(missing_ok=True)


def dan_locked_then_state_lost(world: World) -> None:
    """dan departs and is locked on the platform; then the state database is lost."""
    world.sync_settings["max_removal_ratio"] = 1.0
    world.sync()
    world.company.person("dan")["status"] = "departed"
    world.sync()
    lose_state(world)


def planned(world: World, **request: Any) -> list[tuple[str, str, str]]:
    result = world.sync(**request)
    assert result.exit_code == EXIT_OK, result.error
    assert result.plan is not None
    return [(c.kind.value, c.action.value, c.key) for c in result.plan.changes]


# ---------------------------------------------------------------- usernames


def test_a_username_changed_in_letter_case_never_makes_a_second_account(world: World) -> None:
    world.sync_settings["max_removal_ratio"] = 1.0
    world.sync()
    world.company.person("bob")["username"] = "Bob"

    result = world.sync()  # by default a conflict: nothing is sent
    assert result.exit_code == EXIT_OK and result.plan is not None
    assert result.plan.changes == ()
    assert [n.kind for n in result.plan.notes] == ["conflict"]
    assert sorted(world.platform().usernames) == ["ann", "bob", "cat", "dan", "eve"]

    # Nor with remove_and_create: a look-alike is never a new account, bob keeps his.
    assert planned(world, sync={"username_change": "remove_and_create"}) == []
    assert sorted(world.platform().usernames) == ["ann", "bob", "cat", "dan", "eve"]
    assert rows(world, "SELECT username FROM employees WHERE source_id = 'E2'") == [("bob",)]
    world.company.person("Bob")["username"] = "robert"  # a real change of username
    replaced = planned(world, sync={"username_change": "remove_and_create"})
    assert replaced == [("employee", "remove", "E2"), ("employee", "create", "E2")]
    assert sorted(world.platform().usernames) == ["ann", "cat", "dan", "eve", "robert"]


@pytest.mark.parametrize(
    ("there", "hired"),
    [("MÜLLER", "müller"), ("Zoe", "zoe"), ("ZOË", "Zoë"), ("Ivan\u200b", "ivan")],
)
def test_a_hire_never_gets_a_second_account_beside_one_made_lately_in_another_spelling(
    world: World, there: str, hired: str
) -> None:
    """Found by the identity campaign (seed 1733, two installations on one platform): one
    made ``MÜLLER9``, then the other, hiring ``müller9``, made a second account beside it.
    The platform is asked by exact username, and no spelling asked for was that one; the
    users list names it (made since the last run), so it is asked for too: a conflict."""
    world.sync()
    AnotherAdmin(world.emulator).add_person(there, "D1", name="Someone Else")
    world.company.employees.append(employee("E9", hired, "D2"))

    result = world.sync()

    assert result.exit_code == EXIT_OK and result.plan is not None, result.error
    assert [c.key for c in result.plan.changes] == []  # neither created nor adopted
    assert any(n.kind == "conflict" and n.key == "E9" for n in result.plan.notes), result.plan
    assert sorted(world.platform().usernames) == sorted(["ann", "bob", "cat", "dan", "eve", there])


BASES = ("müller", "zoë", "ivan", "søren", "anaïs", "lee", "björn", "inès")
INVISIBLE = ("\u200b", "\u200d", "\u2060", "\ufeff")


def platform_spelling(rng: random.Random, base: str) -> str:
    """``base`` as an account might be spelled on the platform: otherwise than its own
    case-folded NFC form (so no look-up of a look-alike's usual spellings finds it)."""
    how = rng.choice(("upper", "title", "nfd", "invisible"))
    if how == "upper":
        return base.upper()
    if how == "title":
        return base.title()
    if how == "nfd" and unicodedata.normalize("NFD", base) != base:
        return unicodedata.normalize("NFD", base)
    at = rng.randint(1, len(base) - 1)
    return base[:at] + rng.choice(INVISIBLE) + base[at:]


def look_alike_of(rng: random.Random, base: str, there: str) -> str:
    """A spelling of ``base`` a source might hold, other than ``there``."""
    spelled = [base, base.upper(), base.title(), unicodedata.normalize("NFD", base.title())]
    return rng.choice([s for s in spelled if s != there])


@pytest.mark.parametrize("seed", range(3))
def test_a_hire_never_gets_a_second_account_beside_one_made_before_the_last_run(
    world: World, seed: int
) -> None:
    """Found by the identity campaign once another installation's HR system spelled its
    usernames in a letter case of its own (``Noël8b`` made in one round, ``noël8b`` hired
    by the other installation in a later one). Accounts in generated look-alike spellings
    are made by another administrator before syncd's first run, or between two runs
    (then one run more with nobody new): the users list named them then, and the census
    of names keeps them, so hires in another spelling are conflicts, never a second
    account, however long after."""
    rng = random.Random(seed)
    bases = [f"{base}{n}" for n, base in enumerate(rng.sample(BASES, 6), 1)]
    there = {base: platform_spelling(rng, base) for base in bases}
    admin = AnotherAdmin(world.emulator)
    first, later = bases[:3], bases[3:]
    for base in first:
        admin.add_person(there[base], name=f"Someone Else {base}")
    world.sync()
    for base in later:
        admin.add_person(there[base], "D1", name=f"Someone Else {base}")
    world.sync()  # nobody new: the accounts were named by the users list, and kept
    world.sync()
    hired = {f"E{20 + n}": look_alike_of(rng, base, there[base]) for n, base in enumerate(bases)}
    for n, (key, username) in enumerate(hired.items()):
        world.company.employees.append(employee(key, username, f"D{1 + n % 3}"))

    result = world.sync()

    assert result.exit_code == EXIT_OK and result.plan is not None, result.error
    assert [c.key for c in result.plan.changes] == []  # neither created nor adopted
    conflicts = {n.key for n in result.plan.notes if n.kind == "conflict"}
    assert conflicts == set(hired), (hired, there, result.plan.notes)
    usernames = world.platform().usernames
    assert sorted(usernames) == sorted(["ann", "bob", "cat", "dan", "eve", *there.values()])


def test_a_census_of_names_lost_or_damaged_is_read_again_in_full(world: World) -> None:
    """The census kept in the state database damaged (or lost): the next run reads the
    whole users list again, so an account made before it is still found."""
    AnotherAdmin(world.emulator).add_person("Zoë7", name="Someone Else")
    world.sync()
    world.sync()
    kept = rows(world, "SELECT value FROM cursors WHERE name = 'platform.names'")
    assert kept and "Zoë7" in kept[0][0]
    with sqlite3.connect(world.folder / "state" / "syncd.db") as db:
        db.execute("UPDATE cursors SET value = '{\"usernames\": 7}' WHERE name = 'platform.names'")
    world.company.employees.append(employee("E9", "zoë7", "D2"))

    result = world.sync()

    assert result.exit_code == EXIT_OK and result.plan is not None, result.error
    assert [c.key for c in result.plan.changes] == []
    assert [(n.kind, n.key) for n in result.plan.notes] == [("conflict", "E9")]
    assert "Zoë7" in rows(world, "SELECT value FROM cursors WHERE name = 'platform.names'")[0][0]


# ---------------------------------------------------------------- lock state


def test_a_rekeyed_person_keeps_their_lock(world: World) -> None:
    world.sync_settings["max_removal_ratio"] = 1.0
    world.sync()
    world.company.person("dan")["status"] = "departed"
    world.sync()  # locked
    world.company.person("dan")["id"] = "E40"  # the HR system re-keyed dan

    assert planned(world) == [("employee", "update", "E40")]
    assert rows(world, "SELECT source_id, locked FROM employees WHERE username = 'dan'") == [
        ("E40", 1)
    ]
    assert planned(world) == []  # not locked a second time
    assert world.platform().people["dan"][1:] == ("E40", "D4", (), True)


def test_an_adopted_locked_account_stays_locked_in_the_snapshot(world: World) -> None:
    dan_locked_then_state_lost(world)

    assert ("employee", "lock", "E4") not in planned(world)  # adopted as it is: locked
    assert rows(world, "SELECT locked, lock_reason FROM employees WHERE username = 'dan'") == [
        (1, "departed")
    ]
    assert planned(world) == []


def test_no_unlock_for_an_account_whose_adoption_failed(world: World) -> None:
    dan_locked_then_state_lost(world)
    world.company.person("dan")["status"] = "active"
    world.emulator.set_faults(reject=[{"field": "username", "pattern": "^dan$"}])
    before = world.emulator.stats()["requests"].get(UNLOCK, 0)

    result = world.sync()

    assert result.exit_code == EXIT_PARTIAL
    assert world.emulator.stats()["requests"].get(UNLOCK, 0) == before  # never sent
    assert world.platform().people["dan"][4] is True  # not syncd's account yet: left alone
    failed = rows(
        world,
        "SELECT action, error FROM run_items WHERE run_id = ? AND outcome = 'failed'",
        result.run_id,
    )
    assert failed == [
        ("update", "rejected by rule"),
        ("unlock", "this person's account is not synced: not created or adopted"),
    ]
    world.emulator.set_faults()
    assert planned(world) == [("employee", "update", "E4"), ("employee", "unlock", "E4")]
    assert world.platform().same_as(world.company.expected())


# ---------------------------------------------------------------- departments


def test_first_run_adopts_a_tree_and_creates_a_department_under_an_adopted_one(
    world: World,
) -> None:
    world.sync()
    lose_state(world)
    world.company.departments.append(department("D5", "Support", "D2"))

    changes = planned(world)

    assert ("department", "create", "D5") in changes
    assert world.platform().same_as(world.company.expected())
    assert planned(world) == []


def test_a_department_whose_child_could_not_be_deleted_is_not_sent_a_delete(
    world: World,
) -> None:
    world.sync_settings["max_removal_ratio"] = 1.0
    world.sync()
    company = world.company
    company.departments = [d for d in company.departments if d["id"] not in ("D2", "D3")]
    company.person("bob")["department"] = "D1"
    company.person("cat")["department"] = "D1"
    company.person("eve")["department"] = "D1"
    # Someone the plan could not foresee is in Backend (D3) when its delete comes.
    backend = next(n["id"] for n in world.emulator.state()["nodes"] if n["serial_no"] == "D3")
    refusal = {"status": 208507, "message": "organization still has employees"}
    world.emulator.set_faults(
        scripted=[{"match": f"/{backend}", "method": "DELETE", "fault": "error", **refusal}]
    )
    deletes_before = world.emulator.stats()["requests"].get(DELETE_NODE, 0)

    result = world.sync()

    assert result.exit_code == EXIT_PARTIAL
    assert world.emulator.stats()["requests"][DELETE_NODE] == deletes_before + 1  # D3 only
    failed = rows(
        world,
        "SELECT key, error FROM run_items WHERE run_id = ? AND outcome = 'failed' ORDER BY seq",
        result.run_id,
    )
    assert [key for key, _ in failed] == ["D3", "D2"]
    assert failed[1][1] == (
        "a child department is still there: Acme/Head Office/R&D/Backend could not be deleted"
    )
    assert {"D2", "D3"} <= set(world.platform().nodes)


def test_a_node_found_after_a_lost_answer_is_checked_against_what_was_sent(world: World) -> None:
    import_orgs = "import-orgs"
    world.emulator.set_faults(scripted=[{"match": import_orgs, "fault": "drop_after"}])

    result = world.sync()  # the first level's answer is lost; the resent one finds it there

    assert result.exit_code == EXIT_OK, result.error
    # Found by serial_no as this run sent it: recorded as confirmed, nothing left to do.
    assert rows(world, "SELECT hash FROM departments WHERE source_id = 'D1'") != [("",)]
    assert planned(world) == []
    assert world.platform().same_as(world.company.expected())


def test_an_employees_file_cut_short_in_the_paths_layout_deletes_no_department(
    world: World,
) -> None:
    # In this layout the departments are the paths the rows name: a cut file loses the
    # department only its lost rows named, and no department row is rejected to say so.
    world.sync_settings["max_removal_ratio"] = 1.0
    rows_text = [
        PATHS_HEADER,
        "E1,ann,Ann,Head Office,ann@acme.example,13800000001,active",
        "E2,bob,Bob,Head Office/R&D,bob@acme.example,13800000002,active",
        "E3,cat,Cat,Head Office/Archive,cat@acme.example,13800000003,active",
    ]
    employees = world.folder / "employees.csv"
    config = world.folder / "syncd.toml"
    assert run_sync(world.paths_layout(rows_text[1:]), RunRequest()).exit_code == EXIT_OK
    assert len(world.platform().nodes) == 3

    employees.write_text("\n".join(rows_text)[:-30], encoding="utf-8")  # inside the last row
    result = run_sync(load_settings(config), RunRequest())

    assert result.plan is not None and result.directory is not None
    assert len(result.directory.departments) == 2  # Archive is not in this read
    assert result.plan.changes == ()
    assert [n.kind for n in result.plan.notes] == ["leavers", "set aside"]
    assert result.exit_code == EXIT_PARTIAL  # nobody could be found gone: loud
    assert len(world.platform().nodes) == 3
