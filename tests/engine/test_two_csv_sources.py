"""Two CSV sources (an HR export and a directory export) synced into the emulator: the
unchanged-source memo covers both files and the join's settings."""

from __future__ import annotations

from pathlib import Path

from syncd.config import Settings, load_settings
from syncd.emulator import RunningEmulator
from syncd.runner import RunRequest, run_sync

HR = "emp_no,name,department,status\n100,Ann Lee,D1,active\n200,Bob Stone,D1,active\n"
DIRECTORY = (
    "guid,login,mail,employeeID,ou\ng1,ann,ann@corp.example,100,\ng2,bob,bob@corp.example,200,\n"
)


def settings(folder: Path, emulator: RunningEmulator) -> Settings:
    (folder / "departments.csv").write_text("id,name,parent_id\nD1,Head Office,\n")
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
[join]
key = "sn"
[join.precedence]
name = ["hr"]
department = ["hr"]
username = ["directory"]
email = ["directory"]
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
