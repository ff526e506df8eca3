"""The CSV source against real files: status values, departed or active, by default or
from the settings; a value in neither list rejects its row."""

from __future__ import annotations

from pathlib import Path

from syncd.model import State
from tests.sources.csv_support import HEADER, read, rejected_at


def test_departed_values_are_trimmed_and_case_insensitive(tmp_path: Path) -> None:
    rows = ["E1,a,A,D1,离职", "E2,b,B,D1, INACTIVE ", "E3,c,C,D1,Departed", "E4,d,D,D1,disabled",
            "E5,e,E,D1,在职", "E6,f,F,D1,active", "E7,g,G,D1,"]  # fmt: skip
    directory = read(tmp_path, HEADER.rstrip() + ",status\n" + "\n".join(rows) + "\n")
    departed = {key for key, e in directory.employees.items() if e.state is State.DEPARTED}
    assert departed == {"E1", "E2", "E3", "E4"}


def test_departed_values_from_the_settings(tmp_path: Path) -> None:
    text = "id,username,name,department,状态\nE1,a,A,D1,已离职\nE2,b,B,D1,离职\nE3,c,C,D1,在职\n"
    directory = read(tmp_path, text, columns={"status": "状态"}, departed_values=["已离职"])
    assert directory.employees["E1"].state is State.DEPARTED
    assert directory.employees["E3"].state is State.ACTIVE
    # 离职 is no longer a departed value, and it was never an active one.
    row = rejected_at(directory, "employees.csv:3")
    assert (row.key, row.reason) == (
        "E2",
        "column '状态': '离职' is neither in source.csv.active_values nor in "
        "source.csv.departed_values",
    )
    assert directory.leavers_known  # the row names its person, who is kept as they are
