"""A join key given to a new hire before syncd saw its holder leave, synced into the
emulator over HTTP from two real CSV exports (syncd.plan.holds).

HR's export and a directory's are joined on the e-mail or the username. syncd syncs Bob;
then, while it is not running, Bob leaves and HR hires Dan under Bob's e-mail and login
(the directory recycles both). The joined record under Bob's key now shows another person
(name and work number differ): Bob's account is neither renamed for Dan nor handed over,
and Bob is a leaver (locked). Then the admin resolves it either way: deletes Bob's account
(Dan gets a new one), or says it is the same person (``sync.same_person``: the account is
updated and unlocked).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import pytest

from syncd.config import load_settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunRequest, RunResult, run_sync
from tests.support.admin import AnotherAdmin
from tests.support.settings import csv_source_lines, emulator_platform

# number -> (name, mobile, login, e-mail); Dan (9) is given Bob's login and e-mail.
PEOPLE = {
    "1": ("Ann Lee", "13800000001", "ann", "ann@corp.example"),
    "2": ("Bob Stone", "13800000002", "bob", "bob@corp.example"),
    "9": ("Dan New", "13900000009", "bob", "bob@corp.example"),
}
Key = Literal["email", "username"]
HR = {"id": "emp_no", "sn": "emp_no", "username": "login", "email": "mail"}
AD = {"id": "guid", "username": "login", "name": "login", "email": "mail", "department": "ou"}


def write(folder: Path, emulator: RunningEmulator, key: Key, hr: list[str], same: str = "") -> Path:
    (folder / "departments.csv").write_text("id,name,parent_id\nD1,Head Office,\n", "utf-8")
    rows = [f"{n},{','.join(PEOPLE[n])},D1,active" for n in hr]
    header = "emp_no,name,mobile,login,mail,department,status"
    (folder / "hr.csv").write_text("\n".join([header, *rows]) + "\n", encoding="utf-8")
    # The directory: the login and the mail as it spells them, under its own object ids.
    ad = [f"G{n},{PEOPLE[n][2]},{PEOPLE[n][3].upper()},Head Office" for n in hr]
    (folder / "ad.csv").write_text("\n".join(["guid,login,mail,ou", *ad]) + "\n", "utf-8")
    lines = [
        f'state_dir = "{folder / "state"}"',
        *csv_source_lines("hr", folder / "hr.csv", HR, folder / "departments.csv"),
        *csv_source_lines("ad", folder / "ad.csv", AD),
        "[join]",
        f'key = "{key}"',
        'normalize.ad = ["strip", "casefold"]',
        'normalize.hr = ["strip", "casefold"]',
        "[join.precedence]",
        'name = ["hr"]',
        'department = ["hr"]',
        'status = ["hr"]',
        "[sync]",
        f"same_person = {json.dumps([same] if same else [])}",
        *emulator_platform(emulator),
    ]
    path = folder / "syncd.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    path.chmod(0o600)
    return path


def sync(path: Path, allowed: int | None = None) -> RunResult:
    result = run_sync(load_settings(path), RunRequest(allow_removals=allowed))
    assert result.outcome == "ok", result.error
    return result


def account(emulator: RunningEmulator, username: str) -> tuple[str, str, bool]:
    (e,) = [e for e in emulator.state()["employees"] if e["username"] == username]
    return e["name"], e["mobile"], bool(e["locked"])


@pytest.mark.parametrize("key", ["email", "username"])
@pytest.mark.parametrize("resolved", ["deleted on the platform", "the same person"])
def test_a_recycled_join_key_hands_the_holders_account_to_nobody(
    tmp_path: Path, emulator: RunningEmulator, key: Key, resolved: str
) -> None:
    path = write(tmp_path, emulator, key, ["1", "2"])
    sync(path)
    assert account(emulator, "bob") == ("Bob Stone", "13800000002", False)

    write(tmp_path, emulator, key, ["1", "9"])  # Bob left unseen; Dan has his key
    held = sync(path, allowed=1)  # one lock in two people: past the removal guard
    assert held.plan is not None
    joined = PEOPLE["2"][3] if key == "email" else "bob"
    assert [(c.action.value, c.key) for c in held.plan.changes] == [("lock", joined)]
    (note,) = [n for n in held.plan.notes if n.kind == "conflict"]
    assert f"under {joined} shows another person" in note.message, note
    assert "the name, the mobile and the work number differ" in note.message, note
    # Bob is a leaver: his account locked, never renamed for Dan.
    assert account(emulator, "bob") == ("Bob Stone", "13800000002", True)
    again = sync(path).plan  # nor later: it stays Bob's, locked
    assert again is not None and again.changes == ()
    assert account(emulator, "bob") == ("Bob Stone", "13800000002", True)

    if resolved == "the same person":
        write(tmp_path, emulator, key, ["1", "9"], same=joined)
    else:
        AnotherAdmin(emulator).delete_person("bob")
    sync(path)
    assert account(emulator, "bob") == ("Dan New", "13900000009", False)
    assert account(emulator, "ann") == ("Ann Lee", "13800000001", False)
    told = sync(path).plan  # the entry spared its update: it is to be taken out now
    assert told is not None and told.changes == ()
    needless = [n for n in told.notes if "sync.same_person lists" in n.message]
    assert len(needless) == (resolved == "the same person"), told.notes
