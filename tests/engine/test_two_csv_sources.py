"""Two CSV sources (an HR export and a directory export) synced into the emulator: the
unchanged-source memo covers both files and the join's settings."""

from __future__ import annotations

from pathlib import Path

from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunRequest, run_sync

HR = "emp_no,name,department,status\n100,Ann Lee,D1,active\n200,Bob Stone,D1,active\n"
DIRECTORY = (
    "guid,login,mail,employeeID,ou\ng1,ann,ann@corp.example,100,\ng2,bob,bob@corp.example,200,\n"
)


def settings(
    folder: Path,
    emulator: RunningEmulator,
    *,
    join: str = "",
    precedence: str = "",
    directory: str = "",
    departments: str = "id,name,parent_id\nD1,Head Office,\n",
) -> Settings:
    """HR decides names and places, the directory usernames and e-mail; ``join``,
    ``precedence`` and ``directory``: more lines for [join], [join.precedence] and the
    directory's [sources.csv.columns]."""
    (folder / "departments.csv").write_text(departments)
    heads = '[sources.csv.department_columns]\nhead = "head"' if "head" in departments else ""
    text = f"""
state_dir = "{folder / "state"}"
[[sources]]
name = "hr"
kind = "csv"
[sources.csv]
employees = "{folder / "hr.csv"}"
departments = "{folder / "departments.csv"}"
[sources.csv.columns]
id = "emp_no"
username = "emp_no"
sn = "emp_no"
{heads}
[[sources]]
name = "directory"
kind = "csv"
[sources.csv]
layout = "paths"
employees = "{folder / "directory.csv"}"
[sources.csv.columns]
id = "guid"
username = "login"
name = "login"
email = "mail"
sn = "employeeID"
department = "ou"
{directory}
[join]
key = "sn"
{join}
[join.precedence]
name = ["hr"]
department = ["hr"]
username = ["directory"]
email = ["directory"]
{precedence}
[platform]
base_url = "{emulator.base_url}"
domain_id = "acme"
org_code = "acme"
client_id = "syncd"
client_secret = "demo-secret"
org_id = "acme"
retry_backoff = 0.01
"""
    path = folder / "syncd.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return load_settings(path)


def test_an_unchanged_pair_of_files_is_not_read_again_and_a_changed_one_is(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    (tmp_path / "hr.csv").write_text(HR, encoding="utf-8")
    (tmp_path / "directory.csv").write_text(DIRECTORY, encoding="utf-8")
    first = run_sync(settings(tmp_path, emulator), RunRequest())
    assert first.outcome == "ok", first.error
    people = {e["username"]: e for e in emulator.state()["employees"]}
    assert people["ann"]["name"] == "Ann Lee" and people["ann"]["email"] == "ann@corp.example"

    run_sync(settings(tmp_path, emulator), RunRequest())  # plans nothing: remembered
    third = run_sync(settings(tmp_path, emulator), RunRequest())
    assert third.source is not None and "unchanged_since" in third.source

    # The directory file changes (HR's does not): read, and Bob's e-mail follows it.
    (tmp_path / "directory.csv").write_text(
        DIRECTORY.replace("bob@corp.example", "robert@corp.example"), encoding="utf-8"
    )
    fourth = run_sync(settings(tmp_path, emulator), RunRequest())
    assert fourth.outcome == "ok" and fourth.source is not None
    assert "unchanged_since" not in fourth.source
    people = {e["username"]: e for e in emulator.state()["employees"]}
    assert people["bob"]["email"] == "robert@corp.example"


def people(emulator: RunningEmulator) -> dict[str, dict[str, object]]:
    return {e["username"]: e for e in emulator.state()["employees"]}


def write(folder: Path, hr: str, directory: str) -> None:
    (folder / "hr.csv").write_text(hr, encoding="utf-8")
    (folder / "directory.csv").write_text(directory, encoding="utf-8")


def test_a_head_outside_their_department_is_told_and_a_leaver_is_still_locked(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """HR names Bob head of R&D, where he has no position: a problem told, never a partial
    read (failed before: a "part of source 'hr' was not read" row, and Bob's leaving
    kept him active)."""
    departments = "id,name,parent_id,head\nD1,Head Office,,\nD2,R&D,D1,200\n"
    write(tmp_path, HR, DIRECTORY)
    first = run_sync(settings(tmp_path, emulator, departments=departments), RunRequest())
    assert first.outcome == "ok", first.error
    assert first.directory is not None and first.directory.rejected == ()
    assert any("has no position there" in w for w in first.directory.warnings)

    write(tmp_path, HR.replace("200,Bob Stone,D1,active", "200,Bob Stone,D1,departed"), DIRECTORY)
    second = run_sync(
        settings(tmp_path, emulator, departments=departments), RunRequest(allow_removals=1)
    )
    assert second.outcome == "ok", second.error
    assert people(emulator)["bob"]["locked"] is True
    assert people(emulator)["ann"].get("locked") is not True


def test_an_hr_row_removed_and_a_disabled_account_is_locked(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """The README's "departed where present": HR lacks Bob, the directory says disabled
    (failed before: Bob stayed active, "waiting for source 'hr'")."""
    status = 'status = "state"'
    directory = DIRECTORY.replace("ou\n", "ou,state\n").replace(",\n", ",,enabled\n")
    write(tmp_path, HR, directory)
    assert run_sync(settings(tmp_path, emulator, directory=status), RunRequest()).outcome == "ok"

    hr, disabled = (
        HR.replace("200,Bob Stone,D1,active\n", ""),
        directory.replace("200,,en", "200,,dis"),
    )
    write(tmp_path, hr, disabled)
    result = run_sync(settings(tmp_path, emulator, directory=status), RunRequest(allow_removals=1))
    assert result.outcome == "ok", result.error
    assert people(emulator)["bob"]["locked"] is True
    assert people(emulator)["bob"]["name"] == "Bob Stone"  # a leaver: nothing rewritten
    # HR lacks Carl and the directory says he is enabled: he waits, kept as he is.
    write(tmp_path, hr, disabled + "g3,carl,carl@corp.example,300,,enabled\n")
    result = run_sync(settings(tmp_path, emulator, directory=status), RunRequest())
    assert "carl" not in people(emulator)
    assert result.directory is not None
    assert any("waiting for source 'hr'" in r.reason for r in result.directory.rejected)


def test_a_source_without_a_status_column_never_decides_status(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """The directory export has no status column and comes first for status: HR's departed
    still locks Bob (failed before: the directory's made-up active kept him)."""
    first_say = 'status = ["directory", "hr"]'
    write(tmp_path, HR, DIRECTORY)
    assert (
        run_sync(settings(tmp_path, emulator, precedence=first_say), RunRequest()).outcome == "ok"
    )
    write(tmp_path, HR.replace("200,Bob Stone,D1,active", "200,Bob Stone,D1,departed"), DIRECTORY)
    result = run_sync(
        settings(tmp_path, emulator, precedence=first_say), RunRequest(allow_removals=1)
    )
    assert result.outcome == "ok", result.error
    assert people(emulator)["bob"]["locked"] is True


def test_a_key_no_record_of_a_source_holds_stops_the_run_naming_the_setting(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """The directory's employeeID column is empty for everyone (failed before: exit 0,
    everyone set aside, the department created)."""
    write(tmp_path, HR, DIRECTORY.replace(",100,", ",,").replace(",200,", ",,"))
    result = run_sync(settings(tmp_path, emulator), RunRequest())
    assert (result.outcome, result.exit_code) == ("failed", 3)
    assert result.error is not None
    assert "join.key = 'sn': no record of source 'directory' holds it" in result.error
    assert emulator.state()["employees"] == []


def test_keys_with_leading_zeros_meet_when_the_settings_say_so(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    write(tmp_path, HR.replace("100,", "00100,").replace("200,", "000200,"), DIRECTORY)
    zeros = 'normalize.hr = ["strip", "leading_zeros"]'
    result = run_sync(settings(tmp_path, emulator, join=zeros), RunRequest())
    assert result.outcome == "ok", result.error
    assert {u: e["name"] for u, e in people(emulator).items()} == {
        "ann": "Ann Lee",
        "bob": "Bob Stone",
    }
    assert {e["extension_id"] for e in people(emulator).values()} == {"100", "200"}


def test_a_higher_source_clears_a_field_named_in_join_clear(
    tmp_path: Path, emulator: RunningEmulator
) -> None:
    """The directory decides mobiles before HR; join.clear makes its empty one clear Ann's
    (HR's would fill it otherwise)."""
    hr = HR.replace("status\n", "status,mobile\n").replace("active\n", "active,13800000001\n")
    directory = (
        "guid,login,mail,employeeID,ou,phone\n"
        "g1,ann,ann@corp.example,100,,\n"
        "g2,bob,bob@corp.example,200,,13900000002\n"
    )
    write(tmp_path, hr, directory)
    phone, mobile = 'mobile = "phone"', 'mobile = ["directory", "hr"]'
    kept = run_sync(settings(tmp_path, emulator, directory=phone, precedence=mobile), RunRequest())
    assert kept.outcome == "ok", kept.error
    assert people(emulator)["ann"]["mobile"] == "13800000001"  # falls to HR
    cleared = run_sync(
        settings(tmp_path, emulator, join='clear = ["mobile"]', directory=phone, precedence=mobile),
        RunRequest(),
    )
    assert cleared.outcome == "ok", cleared.error
    assert not people(emulator)["ann"].get("mobile")  # the directory has Ann, with none
    assert people(emulator)["bob"]["mobile"] == "13900000002"
