"""Whole incremental LDAP runs (a real slapd, the emulator over HTTP): a run that reads
only what changed, and looks up only the people it asks about, still adds hires and puts
back people another administrator changed on the platform."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from syncd.config import Settings
from syncd.run.runner import RunRequest, run_sync
from tests.support.admin import ORG, AnotherAdmin
from tests.support.runs import plan_of
from tests.support.settings import ldap_run_settings
from tests.support.slapd import Slapd


def ldap_sync_settings(slapd: Slapd, base: str, emulator: Any, tmp_path: Path) -> Settings:
    departed = 'departed_filter = "(employeeType=departed)"\n'
    return ldap_run_settings(slapd, base, emulator, tmp_path, ldap=departed)


def planned(result: Any) -> set[tuple[str, str]]:
    return {(c.action.value, c.display) for c in result.plan.changes}


def test_an_incremental_run_adds_hires_and_puts_back_platform_changes(
    slapd: Slapd, acme: str, emulator: Any, tmp_path: Path
) -> None:
    settings = ldap_sync_settings(slapd, acme, emulator, tmp_path)
    first = run_sync(settings, RunRequest())
    assert first.exit_code == 0, first.error
    admin = AnotherAdmin(emulator)
    alice = admin.employee("alice")
    admin.edit("alice", mobile="+86 139 9999 9999")
    admin.lock("carol")
    slapd.add_ldif(
        f"dn: uid=judy,ou=Sales,ou=Head Office,{acme}\nobjectClass: inetOrgPerson\n"
        "uid: judy\ncn: Judy New\nsn: New\nmail: judy@acme.example\n"
    )

    result = run_sync(settings, RunRequest(read="incremental"))

    assert result.exit_code == 0, result.error
    assert {("create", "judy"), ("update", "alice"), ("unlock", "carol")} <= planned(result)
    assert admin.employee("alice")["mobile"] == alice["mobile"]
    assert admin.employee("carol").get("locked") is not True
    assert admin.employee("judy")["name"] == "Judy New"
    again = run_sync(settings, RunRequest(read="incremental"))
    assert again.exit_code == 0, again.error
    assert planned(again) == set()
    full = run_sync(settings, RunRequest(dry_run=True))
    assert full.exit_code == 0 and planned(full) == set()


def test_an_incremental_run_recreates_a_person_deleted_on_the_platform(
    slapd: Slapd, acme: str, emulator: Any, tmp_path: Path
) -> None:
    # The platform keeps a removed employee's user in the users list (D3), refreshed: an
    # incremental run finds alice there, asks for her employee record, gets none, and
    # makes her again, though the directory's delta did not name her.
    settings = ldap_sync_settings(slapd, acme, emulator, tmp_path)
    for _ in range(2):  # the second run reads everyone back: the people's cursor is set
        assert run_sync(settings, RunRequest()).exit_code == 0
    admin = AnotherAdmin(emulator)
    before = admin.employee("alice")
    admin.delete_person("alice")

    result = run_sync(settings, RunRequest(read="incremental"))

    assert result.exit_code == 0, result.error
    assert planned(result) == {("create", "alice")}
    notes = [n.message for n in plan_of(result).notes if n.kind == "drift"]
    assert notes == ["alice was deleted on the platform: recreating the account"]
    again = admin.employee("alice")
    assert again["id"] != before["id"] and again["user_id"] == before["user_id"]
    assert (again["name"], again["mobile"]) == (before["name"], before["mobile"])
    assert planned(run_sync(settings, RunRequest(read="incremental"))) == set()


def test_a_known_problem_does_not_hold_back_the_incremental_mark(
    slapd: Slapd, acme: str, emulator: Any, tmp_path: Path
) -> None:
    # Issue 25, case 2: a hire whose mobile an account syncd does not own holds is created
    # without it; the run tells it (exit 1) and still moves the source's mark and the
    # people's cursor, so the next incremental run reads only what changed since, sends
    # nothing and exits 0.
    from syncd import snapshot as store
    from syncd.run import cursors

    settings = ldap_sync_settings(slapd, acme, emulator, tmp_path)
    for _ in range(2):  # the second run reads everyone back: the people's cursor is set
        assert run_sync(settings, RunRequest()).exit_code == 0
    admin = AnotherAdmin(emulator)
    admin.add_person("outsider")
    admin.edit("outsider", mobile="13987654321")
    slapd.add_ldif(
        f"dn: uid=judy,ou=Sales,ou=Head Office,{acme}\nobjectClass: inetOrgPerson\n"
        "uid: judy\ncn: Judy New\nsn: New\nmail: judy@acme.example\nmobile: 13987654321\n"
    )
    state = store.StateStore.open(settings.database)
    try:
        mark = cursors.source_mark(state)
        people = cursors.platform_cursors(state)["people"]

        told = run_sync(settings, RunRequest(read="incremental"))

        assert (told.outcome, told.exit_code) == ("partial", 1), told.error
        assert admin.employee("judy").get("mobile") in (None, "")
        assert cursors.source_mark(state) != mark
        with state.read() as conn:
            (problem,) = store.problem_rows(conn)
        assert (problem["username"], problem["value"], problem["holder"]) == (
            "judy",
            "13987654321",
            "outsider",
        )
        calls = []
        for _ in range(2):
            again = run_sync(settings, RunRequest(read="incremental"))
            assert (again.outcome, again.exit_code) == ("ok", 0), again.error
            assert planned(again) == set()
            calls.append(state.run_summary(again.run_id)["calls"])
        # The first reads judy back once (written by the run before, as anyone written);
        # the second reads one employee record, the holder's (is the value still held?),
        # and nobody back: the cursor moved past.
        assert cursors.platform_cursors(state)["people"] != people
        employees = "GET /v1/admin/organizations/{org_code}/employees"
        assert calls[1].get(employees) == 1 and calls[1].get("GET /v1/users") == 1
    finally:
        state.close()


def test_a_departed_filter_that_matches_nobody_gives_nobody_access_unreviewed(
    slapd: Slapd, acme: str, emulator: Any, tmp_path: Path
) -> None:
    # Found by exploration, 2026-11-29: the departed_filter's attribute hidden from the bind
    # account by an ACL, missing from the schema, or its value renamed: the server answers
    # the filter's search with no entry and no error, everyone reads as active, and people
    # syncd had locked as departed were unlocked, exit 0, under the access guard's floor.
    settings = ldap_sync_settings(slapd, acme, emulator, tmp_path)
    carol = f"uid=carol,ou=Frontend,ou=R&D,ou=Head Office,{acme}"
    assert run_sync(settings, RunRequest()).exit_code == 0  # bob departed: never made
    slapd.modify(f"dn: {carol}\nchangetype: modify\nadd: employeeType\nemployeeType: departed\n")
    assert ("lock", "carol") in planned(run_sync(settings, RunRequest()))
    admin = AnotherAdmin(emulator)
    both = (carol, f"uid=bob,ou=Backend,ou=R&D,ou=Head Office,{acme}")

    def employee_type(value: str) -> None:
        for dn in both:
            slapd.modify(
                f"dn: {dn}\nchangetype: modify\nreplace: employeeType\nemployeeType: {value}\n"
            )

    employee_type("left")

    for _ in range(2):  # blocked runs change nothing: the next one is stopped the same way
        result = run_sync(settings, RunRequest())
        assert result.outcome == "blocked", result.error
        assert "the source called them departed before (2 here) but this read calls nobody" in (
            str(result.error)
        )
        assert admin.employee("carol").get("locked") is True
        assert not admin.call(
            "GET", f"{ORG}/employees", matching="true", type="username", query="bob"
        )

    # The filter matching again tells them apart: carol and bob are still departed.
    employee_type("departed")
    result = run_sync(settings, RunRequest())
    assert result.exit_code == 0, result.error
    assert planned(result) == set()
