"""A directory row rejected in a join of two real CSV exports (campaign seed 887's class),
synced into the emulator over HTTP, whatever field the join is keyed on.

HR's export and a directory's export of accounts are joined on the work number, the
mobile, the e-mail or an extra attribute. A leaver drops out of both; the directory's row
for a new hire gives the leaver's username with a mark that cannot be seen, so the
directory rejects it. The row keeps its join key (as spelled in the directory, not as HR
spells it), which names the new hire: the leaver is locked. When the row is the leaver's own
(their key), they keep their account until it is fixed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import pytest

from syncd.config import load_settings
from syncd.emulator import RunningEmulator
from syncd.run.runner import RunRequest, RunResult, run_sync
from tests.support.settings import joined_settings

DEPARTMENTS = "id,name,parent_id\nD1,Head Office,\n"
PEOPLE = {"1": "Ann Lee", "2": "Bob Stone", "3": "Cat Wu", "9": "Dan New"}  # number -> name
# Each join key as HR spells it and as the directory does (one value each way): the join
# compares them as the key's kind is compared (mobile by digits, e-mail in any case).
KEYS = {
    "sn": ("sn", "E00{}", " E00{}"),
    "mobile": ("mobile", "+86 138 0000 000{}", "+86-13800000-00{}"),
    "email": ("email", "p{}@corp.example", "P{}@Corp.Example"),
    "extra.ad": ("ad", "AD{}", "AD{} "),
}
MARK = "\u200b"  # a zero-width space: the directory rejects the username it is in

Field = Literal["sn", "mobile", "email", "extra.ad"]


def write(
    folder: Path, emulator: RunningEmulator, key: Field, hr: list[str], ad: list[str]
) -> Path:
    """HR's export (number, name) and the directory's (login), joined on ``key``."""
    column, hr_key, _ = KEYS[key]
    (folder / "departments.csv").write_text(DEPARTMENTS, encoding="utf-8")
    hr_rows = [f"{n},{PEOPLE[n]},D1,active,{hr_key.format(n)}" for n in hr]
    (folder / "hr.csv").write_text(
        "\n".join(["emp_no,name,department,status,key", *hr_rows]) + "\n", encoding="utf-8"
    )
    (folder / "ad.csv").write_text("\n".join(["guid,login,ou,key", *ad]) + "\n", encoding="utf-8")
    own = ["[sources.csv.extra_columns]", 'key = "ad"'] if key == "extra.ad" else []
    keyed = {} if own else {column: "key"}
    hr_columns = {"id": "emp_no", "username": "emp_no", **keyed}
    ad_columns = {"id": "guid", "username": "login", "name": "login", "department": "ou", **keyed}
    return joined_settings(folder, emulator, key, (hr_columns, ad_columns), own)


def sync(path: Path, allowed: int | None = None) -> RunResult:
    return run_sync(load_settings(path), RunRequest(allow_removals=allowed))


def locked(emulator: RunningEmulator) -> dict[str, bool]:
    return {e["username"]: bool(e["locked"]) for e in emulator.state()["employees"]}


def ad_row(n: str, login: str, key: Field) -> str:
    return f"G{n},{login},Head Office,{KEYS[key][2].format(n)}"


@pytest.mark.parametrize("key", list(KEYS))
@pytest.mark.parametrize("whose", ["a new hire", "the leaver"])
def test_a_rejected_directory_row_names_the_person_its_join_key_gives(
    tmp_path: Path, emulator: RunningEmulator, key: Field, whose: str
) -> None:
    everyone = ["1", "2", "3"]
    path = write(tmp_path, emulator, key, everyone, [ad_row(n, f"user{n}", key) for n in everyone])
    first = sync(path)
    assert first.outcome == "ok", first.error
    assert locked(emulator) == {"user1": False, "user2": False, "user3": False}

    # user2 leaves: dropped by both. The directory's row with a marked "user2" is the new
    # hire's (number 9, in HR too) or the leaver's own (number 2, which HR no longer has).
    n = "9" if whose == "a new hire" else "2"
    hr = ["1", "3", "9"] if whose == "a new hire" else ["1", "3"]
    ad = [ad_row("1", "user1", key), ad_row("3", "user3", key), ad_row(n, f"u{MARK}ser2", key)]
    write(tmp_path, emulator, key, hr, ad)
    second = sync(path, allowed=1)  # one leaver in four: a guard's stop, reviewed

    assert second.directory is not None
    (row,) = [r for r in second.directory.rejected if r.username == f"u{MARK}ser2"]
    assert row.where.startswith("ad: "), row
    now = locked(emulator)
    assert (now["user1"], now["user3"]) == (False, False)
    # Someone else's row: the leaver is locked. Their own: kept until it is read.
    assert now["user2"] is (whose == "a new hire"), second.error
