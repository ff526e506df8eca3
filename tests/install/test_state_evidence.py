"""Evidence over memory (issue 32): the state database is syncd's memory, the platform is
the evidence. Where they disagree about who holds an account (a restored or copied state
database, another installation on the same platform), nobody is changed until the
evidence names the person (README, "Who can sign in")."""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_BLOCKED, EXIT_FAILED, EXIT_OK, EXIT_PARTIAL
from syncd.plan.values import ACCESS_KEPT
from tests.engine.company import Company, World, department, employee, small_company
from tests.install.test_state_lineage import back_up, cli, database, restore
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of


@pytest.fixture
def world(tmp_path: Path, emulator: RunningEmulator) -> World:
    return World(tmp_path, emulator, small_company(), {"max_removal_ratio": 1.0})


@pytest.fixture
def either(tmp_path: Path, emulator: RunningEmulator, store_url: str | None) -> World:
    """A world whose state database is SQLite's, then PostgreSQL's."""
    limits = {"max_removal_ratio": 1.0}
    return World(tmp_path, emulator, small_company(), limits, database_url=store_url)


def fay_recycled(world: World) -> None:
    """fay (E6) joins after the backup and is synced; the backup is restored; fay leaves and
    a new hire, E7, is given her username: another person (name, mobile)."""
    world.company.employees.remove(world.company.person("fay"))
    world.company.employees.append(
        employee("E7", "fay", "D3", name="Fay Newhire", mobile="13912345678")
    )


# ---------------------------------------------------------------- a restore and a recycled name


def test_a_restore_and_a_recycled_username_never_hand_the_former_holders_account_over(
    world: World,
) -> None:
    assert world.sync().exit_code == EXIT_OK
    backup = back_up(world)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    restore(world, backup)
    fay_recycled(world)
    before = world.writes()

    # Before: exit 0, fay's account renamed to E7, E7's mobile, active; E6 never locked.
    stopped = world.sync()
    assert stopped.exit_code == EXIT_FAILED
    assert "person fay (extension_id E6)" in (stopped.error or "")
    assert world.writes() == before  # nothing sent
    assert world.platform().people["fay"] == ("Fay", "E6", "D2", (), False)

    assert cli(world, "state", "rebuild") == EXIT_OK
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    changes = [(c.action.value, c.key) for c in plan_of(result).changes]
    assert changes == [("lock", "E6")]  # the leaver is locked; the new hire gets nothing
    assert world.platform().people["fay"] == ("Fay", "E6", "D2", (), True)
    assert any("E7" in n.key for n in plan_of(result).notes if n.kind == "conflict")


@pytest.mark.parametrize("fate", ["stays", "departs", "leaves"])
@pytest.mark.parametrize("copy", ["database", "directory"])
def test_a_restore_holding_a_removed_leavers_username_finds_the_new_holders_account(
    world: World, tmp_path: Path, copy: str, fate: str
) -> None:
    """Found by the identity campaign (seed 628) and the evidence histories: fay (E6) is in
    the backup; she leaves and her account is removed; her username is given to E7, whose
    account syncd makes. The backup is put back. The database holds fay under "fay", so
    the account there looked like hers with a stranger's mark: a conflict at every run
    (exit 1), and, had E7 left too, E7 active for ever. If E7 stays, the source names the
    account's mark under its username: it is E7's. If E7 left, it is an account the
    database never knew: the run stops, and after `syncd state rebuild` it is removed as
    a leaver's. If E7 is read departed, the account is theirs and locked in the first run
    (the identity campaign, seed 6220: it was left active for that run). Either way fay,
    whose username names another's account, is forgotten."""
    world.sync_settings.update(leaver_policy="remove")
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    backup = copy_state(world, tmp_path)
    world.company.employees.remove(world.company.person("fay"))
    assert world.sync().exit_code == EXIT_OK  # fay's account removed
    world.company.employees.append(employee("E7", "fay", "D3", name="Fay Newhire"))
    assert world.sync().exit_code == EXIT_OK  # E7's account made under "fay"
    put_copy_back(world, tmp_path, copy, backup)
    if fate == "leaves":
        world.company.employees.remove(world.company.person("fay"))
        before = world.writes()
        stopped = world.sync()  # before: exit 1, "carries extension_id E7", E7 active
        assert stopped.exit_code == EXIT_FAILED, stopped.error
        assert "person fay (extension_id E7)" in (stopped.error or "")
        assert world.writes() == before
        assert cli(world, "state", "rebuild") == EXIT_OK
    if fate == "departs":
        world.company.person("fay")["status"] = "departed"

    result = world.sync()  # E7's account is adopted in the run that lets E6 go
    assert result.exit_code == EXIT_OK, result.error
    assert not [n for n in plan_of(result).notes if n.kind == ACCESS_KEPT]

    fay = world.platform().people.get("fay")
    locked = fate == "departs"
    assert fay == (None if fate == "leaves" else ("Fay Newhire", "E7", "D3", (), locked))
    assert world.query("SELECT source_id FROM employees WHERE source_id IN ('E6', 'E7')") == (
        [] if fate == "leaves" else [("E7",)]
    )
    assert plan_of(world.sync()).changes == ()
    assert world.platform().people.get("fay") == fay


# ---------------------------------------------------------------- a restore and a number handed on


def fay_handed_on(world: World, username: str) -> None:
    """fay (E6) leaves; HR gives her number to a new hire, another person (name, mobile),
    under ``username``."""
    world.company.employees.remove(world.company.person("fay"))
    world.company.employees.append(
        employee("E6", username, "D3", name="Gil Newhire", mobile="13912345678")
    )


@pytest.mark.parametrize("copy", ["database", "directory"])
def test_a_restore_from_before_a_number_was_handed_on_leaves_the_new_holder_in(
    world: World, tmp_path: Path, copy: str
) -> None:
    """Found by the identity campaign (seed 2092): fay (E6) is synced and the state
    copied; fay leaves, HR gives E6 to gil: fay is a leaver (removed), and gil's account
    is made carrying E6 the run after (a record showing another person under a key is no
    rename, whatever username_change says). The copy is put back. The database followed
    E6 to gil's account but kept the fields it wrote for fay there, so gil's record looked
    like another person's under fay's key, and gil, active, would be removed as the
    leaver fay is. The account bears gil's name: evidence beats memory."""
    world.sync_settings.update(leaver_policy="remove", username_change="remove_and_create")
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    backup = copy_state(world, tmp_path)
    fay_handed_on(world, "gil")
    assert world.sync().exit_code == EXIT_OK
    assert "fay" not in world.platform().people and "gil" not in world.platform().people
    assert world.sync().exit_code == EXIT_OK
    assert "gil" in world.platform().people
    put_copy_back(world, tmp_path, copy, backup)

    for _ in range(2):
        result = world.sync()
        assert result.exit_code == EXIT_OK, result.error
        assert {c.action.value for c in plan_of(result).changes} <= {"update", "forget"}

    assert world.platform().people["gil"] == ("Gil Newhire", "E6", "D3", (), False)
    assert plan_of(world.sync()).changes == ()


@pytest.mark.parametrize("copy", ["database", "directory"])
def test_a_restore_from_before_a_holder_joined_finds_their_number_handed_on(
    world: World, tmp_path: Path, copy: str
) -> None:
    """Found by the identity campaign (seed 2032): the state is copied before fay (E6)
    joins and is synced; it is put back; fay leaves and HR gives E6 and her username to
    gil. The account carries E6 under "fay", as the source's record does: it passed for
    that record's own, whose adoption is refused (it shows another person), and fay stayed
    active for good. It is fay's, a record the state lost: the run stops and sends
    nothing; after `syncd state rebuild` she is a leaver, and gil gets an account of his
    own once hers is removed."""
    world.sync_settings.update(leaver_policy="remove")
    assert world.sync().exit_code == EXIT_OK
    backup = copy_state(world, tmp_path)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    put_copy_back(world, tmp_path, copy, backup)
    fay_handed_on(world, "fay")
    before = world.writes()

    stopped = world.sync()  # before: exit 0, fay's account active for good

    assert stopped.exit_code == EXIT_FAILED, stopped.error
    told = " ".join((stopped.error or "").split())
    assert "person fay (extension_id E6) (the source's record under it shows another" in told
    assert world.writes() == before
    assert cli(world, "state", "rebuild") == EXIT_OK
    removed = world.sync()
    assert removed.exit_code == EXIT_OK, removed.error
    assert [(c.action.value, c.key) for c in plan_of(removed).changes] == [("remove", "E6")]
    assert "fay" not in world.platform().people
    assert world.sync().exit_code == EXIT_OK
    assert world.platform().people["fay"] == ("Gil Newhire", "E6", "D3", (), False)
    assert plan_of(world.sync()).changes == ()


def test_an_account_whose_extension_id_names_another_record_is_never_adopted(
    world: World,
) -> None:
    """No state check at all (an accepted database): the account's own mark is the
    evidence, and adoption by username refuses it."""
    assert world.sync().exit_code == EXIT_OK
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    for leftover in database(world).parent.glob("syncd.db*"):
        leftover.unlink()  # the state database lost; fay (E6) leaves, E7 gets her username
    fay_recycled(world)
    assert world.sync().exit_code == EXIT_FAILED  # behind: E6 named
    assert cli(world, "state", "accept") == EXIT_OK  # the admin says: as it is
    before = world.writes()

    result = world.sync()  # before: fay's account taken by E7, renamed, its mobile
    assert result.exit_code == EXIT_OK, result.error
    assert world.platform().people["fay"] == ("Fay", "E6", "D2", (), False)
    assert [c.key for c in plan_of(result).changes if c.display == "fay"] == []
    (note,) = [n for n in plan_of(result).notes if n.kind == "conflict" and n.key == "E7"]
    assert "carries extension_id E6" in note.message
    assert not any("fay" in str(r) for r in set(world.writes()) - set(before))


# ---------------------------------------------------------------- two installations


def other_installation(tmp_path: Path, emulator: RunningEmulator) -> World:
    """Another installation on the same platform: its own department and people, one of
    whom has a username the first installation's source gives to someone else."""
    company = Company(
        departments=[department("B1", "Branch")],
        employees=[employee("B-7", "kim", "B1", name="Kim Branch"), employee("B-8", "lou", "B1")],
    )
    (tmp_path / "b").mkdir()
    return World(tmp_path / "b", emulator, company)


def test_adoption_never_takes_another_installations_account_after_accept(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    other = other_installation(tmp_path, emulator)
    assert other.sync().exit_code == EXIT_OK
    (tmp_path / "a").mkdir()
    ours = World(tmp_path / "a", emulator, small_company(), {"max_removal_ratio": 1.0})
    ours.company.employees.append(employee("E9", "kim", "D3", name="Kim Head"))
    stopped = ours.sync()  # the other installation's records: unknown to this one
    assert stopped.exit_code == EXIT_FAILED and "person kim (extension_id B-7)" in (
        stopped.error or ""
    )
    assert cli(ours, "state", "accept") == EXIT_OK  # they are another program's

    result = ours.sync()  # before: kim's account adopted for E9, renamed "Kim Head"
    assert result.exit_code == EXIT_OK, result.error
    assert ours.platform().people["kim"] == ("Kim Branch", "B-7", "B1", (), False)
    assert any(n.key == "E9" for n in plan_of(result).notes if n.kind == "conflict")
    # The other installation finds its person as it left them: nothing to put back.
    again = other.sync()
    assert again.exit_code == EXIT_OK, again.error
    assert plan_of(again).changes == ()


# ---------------------------------------------------------------- look-alikes of an account


def import_account(
    emulator: RunningEmulator, username: str, *, path: str = "Acme", **more: str
) -> None:
    """An account another program made, or changed, through the platform's own API."""
    body = {"username": username, "name": "Someone", "positions": [{"org_path": path}], **more}
    with httpx.Client(base_url=emulator.base_url) as http:
        answer = http.post(
            "/v1/admin/organizations/acme/import-employees",
            params={"access_token": emulator.issue_token()},
            json=[body],
        ).json()
    assert answer["status"] == 0 and username in answer["result"]["successes"], answer


@pytest.mark.parametrize(
    ("theirs", "ours"),
    [
        ("alice", "Alice"),  # the source's letter case
        ("alice", "ALICE"),
        ("ren\u00e9e", "RENE\u0301E"),  # NFD and upper case
        ("ren\u00e9e", "Ren\u00e9e"),
    ],
)
def test_a_look_alike_of_a_platform_account_is_a_conflict_never_a_second_account(
    either: World, theirs: str, ours: str
) -> None:
    world = either
    import_account(world.emulator, theirs)
    world.company.employees.append(employee("E6", ours, "D2", email="e6@acme.example"))
    result = world.sync()  # before: a second account, ours, beside theirs

    assert result.exit_code == EXIT_OK, result.error
    people = world.platform().usernames
    assert theirs in people and ours not in people
    assert ("create", "E6") not in [(c.action.value, c.key) for c in plan_of(result).changes]
    (note,) = [n for n in plan_of(result).notes if n.kind == "conflict"]
    assert note.key == "E6" and "differs from" in note.message


# ---------------------------------------------------------------- a restore last-run misses


def fay_joins_after_a_copy(world: World, copy: Path) -> None:
    """The state directory is copied after a sync; fay joins and is synced."""
    assert world.sync().exit_code == EXIT_OK
    shutil.copytree(world.folder / "state", copy)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK


def put_back(world: World, copy: Path) -> None:
    shutil.rmtree(world.folder / "state")
    shutil.copytree(copy, world.folder / "state")


def copy_state(world: World, tmp_path: Path) -> Path:
    """Both copies of the state as it is now: the whole directory (a VM snapshot, in
    ``tmp_path/snapshot``) and the database alone (README's backup); the backup's path."""
    shutil.copytree(world.folder / "state", tmp_path / "snapshot")
    return back_up(world)


def put_copy_back(world: World, tmp_path: Path, copy: str, backup: Path) -> None:
    """Put one of ``copy_state``'s copies back: the database alone ("database": last-run
    says it is behind) or the whole directory (last-run too: only the accounts a read
    comes upon say it)."""
    if copy == "database":
        restore(world, backup)
    else:
        put_back(world, tmp_path / "snapshot")


def test_a_new_host_given_the_nightly_backup_finds_it_behind(world: World) -> None:
    assert world.sync().exit_code == EXIT_OK
    backup = back_up(world)  # `syncd state backup`: the database alone, checked
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    shutil.rmtree(world.folder / "state")  # the old host is gone: a new one, no last-run
    (world.folder / "state").mkdir(mode=0o700)
    backup.rename(database(world))
    world.company.employees.pop()  # fay leaves
    before = world.writes()

    stopped = world.sync()  # before: exit 0, fay active for ever
    assert stopped.exit_code == EXIT_FAILED
    assert "is behind the platform" in (stopped.error or "")
    assert "person fay (extension_id E6)" in (stopped.error or "")
    assert world.writes() == before
    assert cli(world, "state", "rebuild") == EXIT_OK
    result = world.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert [(c.action.value, c.key) for c in plan_of(result).changes] == [("lock", "E6")]


def test_a_state_directory_rolled_back_with_its_last_run_is_found_behind(
    world: World, tmp_path: Path
) -> None:
    fay_joins_after_a_copy(world, tmp_path / "snapshot")
    put_back(world, tmp_path / "snapshot")  # a VM snapshot rolled back: last-run inside
    world.company.employees.pop()  # fay leaves

    stopped = world.sync()  # before: exit 0, fay active for ever
    assert stopped.exit_code == EXIT_FAILED
    assert "person fay (extension_id E6)" in (stopped.error or "")
    assert world.platform().people["fay"][4] is False  # nothing done until rebuilt


@pytest.mark.parametrize("fate", ["stays", "leaves"])
@pytest.mark.parametrize("policy", ["conflict", "remove_and_create"])
@pytest.mark.parametrize("copy", ["database", "directory"])
def test_an_account_from_before_a_rename_the_restored_state_never_knew_stops_the_run(
    world: World, tmp_path: Path, copy: str, policy: str, fate: str
) -> None:
    """Found by the --long convergence suite (seeds 281, 309, 318): the state is put back
    to before fay joined and was synced; HR then renames her. Her account carries her
    source id under the old username, which the source no longer gives. The source "knew"
    the id, so the check let it pass: a second account was made for fay.w beside it, and
    the old one stayed active for good, also after she left. Now it is a record the state
    lost: the run stops and sends nothing; after `syncd state rebuild`, the account is
    hers, her rename weighed as any (a conflict, or the old account replaced), and locked
    when she leaves. Never two active accounts for her."""
    world.sync_settings.update(username_change=policy)
    assert world.sync().exit_code == EXIT_OK
    backup = copy_state(world, tmp_path)
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    put_copy_back(world, tmp_path, copy, backup)
    fay = world.company.person("fay")
    fay["username"] = "fay.w"
    if fate == "leaves":
        fay["status"] = "departed"
    before = world.writes()

    stopped = world.sync()

    assert stopped.exit_code == EXIT_FAILED, stopped.error
    assert "person fay (extension_id E6)" in (stopped.error or "")
    assert world.writes() == before
    assert cli(world, "state", "rebuild") == EXIT_OK
    assert world.sync().exit_code in (EXIT_OK, EXIT_PARTIAL)
    carrying = {u: p[4] for u, p in world.platform().people.items() if p[1] == "E6"}
    active = [u for u, locked in carrying.items() if not locked]
    if fate == "leaves":
        assert active == []
    else:
        assert active == (["fay.w"] if policy == "remove_and_create" else ["fay"])
    assert plan_of(world.sync()).changes == ()


@pytest.mark.parametrize("policy", ["conflict", "remove_and_create"])
def test_a_rename_removes_no_account_the_platform_shows_is_another_records(
    world: World, policy: str
) -> None:
    """Found by the --long identity campaign (seed 7100, a state rolled back to before
    the account went to a returning person): syncd remembers ann's account as E1's, but
    on the platform it carries E9 now, another person's, whom the source lists under that
    username; and E1 is renamed in the source. Under remove_and_create the rename removed
    the account: E9's, active. Memory is not evidence: nothing is sent through an account
    that carries another record's source id, and a conflict says why."""
    world.sync_settings.update(username_change=policy)
    assert world.sync().exit_code == EXIT_OK
    admin = AnotherAdmin(world.emulator)
    admin.edit("ann", extension_id="E9", name="Gil Other")  # another program's doing
    (account,) = [e for e in world.emulator.state()["employees"] if e["username"] == "ann"]
    world.company.person("ann")["username"] = "ann.b"
    world.company.employees.append(employee("E9", "ann", "D2", name="Gil Other"))
    before = world.writes()

    result = world.sync()  # before: under remove_and_create, the account removed

    people = {e["username"]: e for e in world.emulator.state()["employees"]}
    assert (people["ann"]["id"], people["ann"]["locked"]) == (account["id"], False)
    assert "ann.b" not in people
    assert world.writes() == before
    notes = [n for n in plan_of(result).notes if n.key == "E1"]
    if policy == "remove_and_create":
        assert any("carries source id E9" in n.message for n in notes), notes


def test_a_rolled_back_state_directory_takes_back_the_account_its_record_carries(
    world: World, tmp_path: Path
) -> None:
    """Found by the --long convergence suite (seed 49): the state directory is put back to
    before fay's account was made; meanwhile HR gave fay a new mobile and her old one to
    ann. The account carries fay's source id and name: it is hers, and both are written
    in one run."""
    fay_joins_after_a_copy(world, tmp_path / "snapshot")
    (made,) = [e for e in world.emulator.state()["employees"] if e["username"] == "fay"]
    put_back(world, tmp_path / "snapshot")
    fay, ann = world.company.person("fay"), world.company.person("ann")
    fay["mobile"], ann["mobile"] = "13912345678", fay["mobile"]

    result = world.sync()  # before: a conflict for ever; fay and ann kept their numbers

    assert result.exit_code == EXIT_OK, result.error
    assert [n.message for n in plan_of(result).notes if n.kind == "conflict"] == []
    people = {e["username"]: e for e in world.emulator.state()["employees"]}
    assert (people["fay"]["id"], people["fay"]["mobile"]) == (made["id"], "13912345678")
    assert people["ann"]["mobile"] == ann["mobile"]
    assert world.query("SELECT employee_id FROM employees WHERE source_id = 'E6'") == [
        (made["id"],)
    ]


def test_a_rolled_back_state_directory_locks_a_leaver_under_the_username_they_had_since(
    world: World, tmp_path: Path
) -> None:
    """Found by the --long convergence suite (seed 83): the state directory is copied;
    fay's username changes and syncd replaces her account (remove_and_create); the copy is
    put back, so the database holds her under the old username, whose account is gone.
    Then fay leaves. Her account under the new username carries her source id: it is
    locked in one run, not a lock of the old one failing at every run."""
    world.sync_settings.update(username_change="remove_and_create")
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    shutil.copytree(world.folder / "state", tmp_path / "snapshot")
    fay = world.company.person("fay")
    fay["username"] = "fay.w"
    assert world.sync().exit_code == EXIT_OK  # "fay" removed, "fay.w" made
    put_back(world, tmp_path / "snapshot")
    fay["status"] = "departed"

    result = world.sync()  # before: lock fay, failing "no matching employee" every run

    assert result.exit_code == EXIT_OK, result.error
    assert world.platform().people["fay.w"][1:] == ("E6", "D2", (), True)
    assert plan_of(world.sync()).changes == ()


# How fay's account came to be made again under her new username while the copy was
# away: syncd replaced it (remove_and_create), or another administrator deleted it (as a
# wipe does) and syncd made her one under the name the source gives her now.
MADE_AGAIN = [("replaced", "fay.w"), ("deleted", "fay.w"), ("deleted", "Fay")]


@pytest.mark.parametrize("fate", ["active", "departed", "gone"])
@pytest.mark.parametrize("copy", ["database", "directory"])
@pytest.mark.parametrize(("how", "renamed"), MADE_AGAIN)
def test_a_restored_state_follows_an_account_made_again_under_a_new_username(
    world: World, tmp_path: Path, how: str, renamed: str, copy: str, fate: str
) -> None:
    """Found by the --long convergence suite (seeds 202 and 239): the state database is
    put back to before fay's account was made again under a new username, so it holds
    her under the old one, whose account is gone. Then fay leaves. The continuity check
    followed an account made again only under the same username: the old record was
    forgotten ("deleted on the platform") and her account, carrying her source id, stayed
    active for good. It is followed now, whatever its username: locked when she leaves,
    hers when she stays, and never a second account."""
    world.sync_settings.update(leaver_policy="lock", username_change="remove_and_create")
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    backup = copy_state(world, tmp_path)
    fay = world.company.person("fay")
    fay["username"] = renamed
    if how == "deleted":
        AnotherAdmin(world.emulator).delete_person("fay")
    assert world.sync().exit_code == EXIT_OK
    assert world.platform().people[renamed][1] == "E6"
    put_copy_back(world, tmp_path, copy, backup)
    if fate == "departed":
        fay["status"] = "departed"
    elif fate == "gone":
        world.company.employees.remove(fay)

    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    carrying = {u: p for u, p in world.platform().people.items() if p[1] == "E6"}
    assert list(carrying) == [renamed]
    assert carrying[renamed][1:] == ("E6", "D2", (), fate != "active")
    assert plan_of(world.sync()).changes == ()


@pytest.mark.parametrize("leaver_policy", ["lock", "remove"])
def test_a_rolled_back_state_directory_and_a_shifted_status_column_give_nobody_access(
    world: World, tmp_path: Path, leaver_policy: str
) -> None:
    """The state directory is copied (a VM snapshot); dan leaves, and syncd locks him (or
    removes his account, then forgets him); the copy is put back: the database, its
    departures and last-run from before. An export whose status column slipped a row then
    calls dan active and eve, the next row, departed: nothing is sent."""
    world.sync_settings.update(leaver_policy=leaver_policy)
    assert world.sync().exit_code == EXIT_OK
    shutil.copytree(world.folder / "state", tmp_path / "snapshot")
    world.company.person("dan")["status"] = "departed"
    assert world.sync().exit_code == EXIT_OK
    if leaver_policy == "remove":
        world.company.employees.remove(world.company.person("dan"))
        assert world.sync().exit_code == EXIT_OK
        world.company.employees.insert(3, employee("E4", "dan", "D4", status="departed"))
    there = world.platform().people
    put_back(world, tmp_path / "snapshot")
    world.company.person("dan")["status"] = "active"
    world.company.person("eve")["status"] = "departed"
    before = world.writes()

    result = world.sync()  # before: exit 0, dan's account back, eve locked

    assert result.exit_code == EXIT_BLOCKED, result.error
    assert "a status column shifted by a row?" in (result.error or "")
    assert world.writes() == before
    assert world.platform().people == there


# ---------------------------------------------------------------- a rebuilt database's guards


def test_a_rebuilt_database_counts_its_guards_against_the_platforms_records(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """Twenty people synced with the default guards; the state database lost and fay
    gone meanwhile: the rebuilt database holds fay alone, and her lock is one removal
    among the 26 records syncd holds once the rest are adopted, not one of one."""
    company = small_company()
    company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(10, 25)]
    world = World(tmp_path, emulator, company)
    assert world.sync().exit_code == EXIT_OK
    world.company.employees.append(employee("E6", "fay", "D2"))
    assert world.sync().exit_code == EXIT_OK
    for leftover in database(world).parent.glob("syncd.db*"):
        leftover.unlink()
    world.company.employees.pop()  # fay leaves while the state database is lost
    assert world.sync().exit_code == EXIT_FAILED
    assert cli(world, "state", "rebuild") == EXIT_OK

    result = world.sync()  # before: blocked by max_removals (1 of 1 synced), every run
    assert result.exit_code == EXIT_OK, result.error
    assert ("lock", "E6") in [(c.action.value, c.key) for c in plan_of(result).changes]
    assert world.platform().people["fay"][4] is True
    assert world.sync().exit_code == EXIT_OK


def test_another_programs_person_in_a_synced_department_is_asked_about_once(
    either: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world = either
    assert world.sync().exit_code == EXIT_OK
    r_and_d = "Acme/Head Office/R&D"
    import_account(world.emulator, "zed", path=r_and_d, extension_id="HR-99")
    stopped = world.sync()  # a source id syncd never wrote, in its department: evidence
    assert stopped.exit_code == EXIT_FAILED
    assert "person zed (extension_id HR-99)" in (stopped.error or "")
    capsys.readouterr()
    assert cli(world, "state", "accept") == EXIT_OK
    assert "1 people the check found are another's" in capsys.readouterr().out
    assert world.sync().exit_code == EXIT_OK

    import_account(world.emulator, "zed", path=r_and_d, extension_id="HR-99", name="Zed Again")
    for leftover in database(world).parent.glob("last-run"):
        leftover.unlink()
    result = world.sync()  # changed again by its program: accepted, never asked about again
    assert result.exit_code == EXIT_OK, result.error
    name, extension_id, *_, locked = world.platform().people["zed"]
    assert (name, extension_id, locked) == ("Zed Again", "HR-99", False)
