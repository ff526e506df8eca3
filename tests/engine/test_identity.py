"""Recycled usernames, re-keys and the re-activation and update guards, end to end: real
HTTP to the emulator, a real state database (issue 24, cases 3 and 6; issue 25, case 8)."""

from __future__ import annotations

from typing import Any

import pytest

from syncd.cli import run_cli
from syncd.errors import EXIT_BLOCKED, EXIT_OK
from syncd.run import saved_plan
from tests.engine.company import World, employee
from tests.support.runs import plan_of


def account(world: World, username: str) -> dict[str, Any]:
    """The emulator's record of one account."""
    return next(e for e in world.emulator.state()["employees"] if e["username"] == username)


def actions(result: Any) -> list[tuple[str, str]]:
    assert result.exit_code == EXIT_OK, result.error
    return [(c.action.value, c.key) for c in result.plan.changes]


def conflicts(result: Any) -> list[str]:
    return [n.message for n in result.plan.notes if n.kind == "conflict"]


# ---------------------------------------------------------------- 24.3 recycled usernames


def test_a_locked_leavers_username_given_to_a_new_hire_is_not_handed_over(world: World) -> None:
    world.sync_settings.update(max_removal_ratio=1.0, leaver_policy="lock")
    world.sync()
    world.company.employees.remove(world.company.person("dan"))
    world.sync()  # dan left: locked
    old = account(world, "dan")
    assert old["locked"] and old["extension_id"] == "E4"
    # HR gives "dan" to a new hire: another id, name, mobile and e-mail.
    world.company.employees.append(
        employee("E9", "dan", "D2", name="Daniel New", email="daniel.new@acme.example")
    )

    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    now = account(world, "dan")
    assert now["locked"] and now["extension_id"] == "E4" and now["name"] == "Dan"
    assert now["id"] == old["id"]
    (message,) = conflicts(result)
    assert "source id E4" in message and "source id E9" in message
    assert actions(world.sync()) == []  # it waits


def test_the_new_hire_gets_a_new_account_once_the_old_one_is_removed(world: World) -> None:
    world.sync_settings.update(max_removal_ratio=1.0, remove_after_days=0)
    world.sync()
    world.company.employees.remove(world.company.person("dan"))
    world.sync()  # locked; removed from the next run on (no grace)
    old = account(world, "dan")
    world.company.employees.append(employee("E9", "dan", "D2", name="Daniel New"))

    removed = world.sync()
    assert actions(removed) == [("remove", "E4")]
    assert "dan" not in world.platform().usernames

    created = world.sync()
    assert actions(created) == [("create", "E9")]
    new = account(world, "dan")
    assert new["id"] != old["id"] and new["extension_id"] == "E9" and not new["locked"]
    assert new["name"] == "Daniel New"


def test_an_active_leavers_username_given_to_another_person_is_locked_not_handed_over(
    world: World,
) -> None:
    world.sync_settings.update(max_removal_ratio=1.0)
    world.sync()
    old = account(world, "dan")
    dan = world.company.person("dan")
    dan.update(id="E9", name="Daniel New", mobile="13912345678")  # the row now a new hire

    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    assert actions(result) == [("lock", "E4")]
    now = account(world, "dan")
    assert now["locked"] and now["extension_id"] == "E4" and now["id"] == old["id"]
    assert "not the same person" in conflicts(result)[0]


def test_after_a_lost_state_a_locked_account_is_not_adopted_for_a_new_hire(world: World) -> None:
    world.sync_settings.update(max_removal_ratio=1.0)
    world.sync()
    world.company.person("dan")["status"] = "departed"
    world.sync()  # dan departed: locked
    for suffix in ("", "-wal", "-shm"):  # a new host, or a lost state database
        (world.folder / "state" / f"syncd.db{suffix}").unlink(missing_ok=True)
    world.company.employees.remove(world.company.person("dan"))
    world.company.employees.append(employee("E9", "dan", "D2", name="Daniel New"))

    stopped = world.sync()  # the account's extension_id names E4, a record nobody knows
    assert "person dan (extension_id E4) (locked)" in (stopped.error or "")
    assert account(world, "dan")["extension_id"] == "E4"
    config = str(world.folder / "syncd.toml")
    assert run_cli(["state", "rebuild", "--config", config]) == EXIT_OK
    result = world.sync()

    assert ("update", "E9") not in actions(result) and ("unlock", "E9") not in actions(result)
    dan = account(world, "dan")
    assert dan["locked"] and dan["extension_id"] == "E4"
    (message,) = conflicts(result)
    assert "which is locked (departed or gone from the source)" in message


# ---------------------------------------------------------------- 25.8 re-key and a cleared field


@pytest.mark.parametrize("drift_check", [True, False])
def test_a_rekey_that_clears_a_field_clears_it_on_the_platform(
    world: World, drift_check: bool
) -> None:
    world.sync_settings.update(max_removal_ratio=1.0, drift_check=drift_check)
    world.sync()
    assert account(world, "dan")["email"] == "dan@acme.example"
    world.company.person("dan").update(id="E40", email="")  # re-keyed, the e-mail emptied

    result = world.sync()

    assert result.exit_code == EXIT_OK, result.error
    (change,) = plan_of(result).changes
    assert (change.action.value, change.key, change.previous_key) == ("update", "E40", "E4")
    dan = account(world, "dan")
    assert not dan.get("email") and dan["extension_id"] == "E40"
    assert actions(world.sync()) == []


def test_an_account_follows_its_person_off_an_id_given_to_someone_else(world: World) -> None:
    # Dan's account went on under E40 (a re-key); now his row is under E4 again and E40
    # is another person's (another username, name and mobile). The account follows the
    # evidence back to E4, and E40 gets an account of its own at the next run.
    world.sync_settings.update(max_removal_ratio=1.0)
    world.sync()
    world.company.person("dan").update(id="E40")
    assert actions(world.sync()) == [("update", "E40")]
    world.company.person("dan").update(id="E4")
    world.company.employees.append(employee("E40", "zoe", "D2", name="Zoe New"))

    result = world.sync()

    assert actions(result) == [("update", "E4")]
    (said,) = [n.message for n in plan_of(result).notes if n.key == "E40"]
    assert "the account dan is re-keyed to E4" in said, said
    assert account(world, "dan")["extension_id"] == "E4"
    assert actions(world.sync()) == [("create", "E40")]
    assert account(world, "zoe")["extension_id"] == "E40"
    assert actions(world.sync()) == []


# ---------------------------------------------------------------- 24.6 guards


def twelve_back(world: World) -> dict[str, int]:
    """12 people departed and locked, now active again in the source; the writes so far."""
    world.sync_settings.update(max_removal_ratio=1.0)
    world.company.employees += [employee(f"E{n}", f"user{n}", "D2") for n in range(10, 22)]
    world.sync()
    for n in range(10, 22):
        world.company.person(f"user{n}")["status"] = "departed"
    assert world.sync().exit_code == EXIT_OK
    for n in range(10, 22):
        world.company.person(f"user{n}")["status"] = "active"
    return world.writes()


def test_mass_reactivation_is_blocked_and_nothing_is_sent(world: World) -> None:
    writes = twelve_back(world)

    result = world.sync()

    assert (result.outcome, result.exit_code) == ("blocked", EXIT_BLOCKED)
    assert result.error is not None
    assert "12 re-activations planned (12 unlocks of people back in the source)" in result.error
    assert "--allow-reactivations 12" in result.error
    assert world.writes() == writes
    assert all(account(world, f"user{n}")["locked"] for n in range(10, 22))

    overridden = world.sync(allow_reactivations=12)
    assert overridden.exit_code == EXIT_OK, overridden.error
    assert not any(account(world, f"user{n}")["locked"] for n in range(10, 22))


def test_mass_updates_are_blocked_and_a_reviewed_saved_plan_lets_them_through(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    world.sync_settings.update(max_updates=2)
    world.sync()
    for username in ("ann", "bob", "cat", "dan"):
        world.company.person(username)["job_title"] = "Engineer"
    writes = world.writes()

    blocked = world.sync()
    assert (blocked.outcome, blocked.exit_code) == ("blocked", EXIT_BLOCKED)
    assert blocked.error is not None and "--allow-updates 4 if this is intended" in blocked.error
    assert "4 updates of synced people planned" in blocked.error
    assert world.writes() == writes

    path = world.folder / "plan.json"
    code = run_cli(["sync", "--save-plan", str(path), "-c", str(world.folder / "syncd.toml")])
    assert code == EXIT_BLOCKED, capsys.readouterr()
    applied = world.sync(saved=saved_plan.read(path))
    assert applied.exit_code == EXIT_OK, applied.error
    assert account(world, "cat")["positions"][0].get("job_title") == "Engineer"


def test_the_override_flags_are_on_the_command_line(
    world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    twelve_back(world)
    config = str(world.folder / "syncd.toml")
    world.company.write(world.folder)
    assert run_cli(["sync", "--yes", "-c", config]) == EXIT_BLOCKED
    printed = capsys.readouterr()
    assert "rerun with --allow-reactivations 12" in printed.out + printed.err
    allowed = ["sync", "--yes", "--allow-reactivations", "12", "--allow-updates", "0", "-c", config]
    assert run_cli(allowed) == EXIT_OK
