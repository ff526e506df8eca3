"""The CSV source against real files: rejected rows, by the reader or by the model, carry
their file and line and name only the person their cells can be trusted to name."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.model import Kind
from tests.sources.csv_support import HEADER, read, rejected_at

# ---------------------------------------------------------------- rejected rows


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        ("E1,alice,Alice,D1,extra", "the row has 5 fields where the header has 4"),
        ("E1,alice,Alice", "the row has 3 fields where the header has 4"),
        ("E1,,Alice,D1", "column 'username' is empty, and it is required"),
        ("E1,alice, ,D1", "column 'name' is empty, and it is required"),
    ],
)
def test_rows_with_missing_or_surplus_cells(tmp_path: Path, row: str, reason: str) -> None:
    directory = read(tmp_path, HEADER + row + "\nE2,bob,Bob,D1\n")
    rejected = rejected_at(directory, "employees.csv:2")
    assert (rejected.reason, rejected.key, rejected.kind) == (reason, "E1", Kind.EMPLOYEE)
    # A row with the wrong number of fields may be two rows joined, or half of one: it
    # names its first cell's person, kept as they are, and nobody absent is a leaver. A
    # short one's next row may be its end (a quote lost there too): nobody's alone.
    short = "3 fields" in reason
    assert set(directory.employees) == (set() if short else {"E2"})
    if short:
        assert "follows the short row on line 2" in rejected_at(directory, "employees.csv:3").reason
    wrong_width = "fields where the header has" in reason
    assert rejected.may_hide_rows is wrong_width
    assert directory.leavers_known is not wrong_width


def test_a_row_without_an_id_cannot_name_its_person(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER + ",alice,Alice,D1\n")
    row = rejected_at(directory, "employees.csv:2")
    assert (row.reason, row.key, row.username) == (
        "column 'id' is empty, and it is required",
        None,
        "alice",
    )


def test_a_shifted_row_trusts_only_its_first_cell(tmp_path: Path) -> None:
    # An unquoted comma in the name shifts the username: it must not name anybody.
    text = "id,name,username,department\nE1,Zhang, San,zhangsan,D1\n"
    row = rejected_at(read(tmp_path, text), "employees.csv:2")
    assert (row.key, row.username) == ("E1", None)
    text = "name,id,username,department\nZhang, San,E1,zhangsan,D1\n"
    row = rejected_at(read(tmp_path, text), "employees.csv:2")
    assert (row.key, row.username) == (None, None)


@pytest.mark.parametrize(
    "row",
    [
        # a status nobody named; a character that cannot be seen; a department nobody has
        "E9,carol,Carol Chen,D2,13900000009,已离职,,carol@example.com,0042\n",
        "E9,carol\u200e,Carol Chen,D2,13900000009,在职,,carol@example.com,0042\n",
        "E9,carol,Carol Chen,D404,13900000009,在职,,carol@example.com,0042\n",
    ],
)
def test_a_rejected_row_keeps_what_tells_its_person_from_another(tmp_path: Path, row: str) -> None:
    # Issue 32: a rejected row naming a leaver's username by another id protected the
    # leaver whoever it was. Its name and mobile, where readable, tell (plan.rekeys); its
    # e-mail and extra attributes name the person in a join on one of them (plan.join).
    text = "id,username,name,department,mobile,status,tel,email,employeeID\n" + row
    d = read(
        tmp_path,
        text,
        departed_values=["离职"],
        active_values=["在职"],
        extra_columns={"employeeID": "ad_number"},
    )
    found = rejected_at(d, "employees.csv:2")
    assert found.key == "E9"
    assert dict(found.identifiers) == {
        "name": "Carol Chen",
        "mobile": "13900000009",
        "email": "carol@example.com",
        "extra.ad_number": "0042",
    }


# ---------------------------------------------------------------- rejections by the model


def test_model_rejections_carry_the_file_and_line(tmp_path: Path) -> None:
    departments = (
        "id,name,parent_id\n"
        "D1,Head Office,\n"
        "D2,R&D,D1\n"
        "D3,Loop A,D4\n"
        "D4,Loop B,D3\n"
        "D5,Orphan,D404\n"
        "D6,Orphan child,D5\n"
        "D7,Twin,D1\n"
        "D8,Twin,D1\n"
        "D2,R&D again,D1\n"
    )
    employees = HEADER + (
        "E1,alice,Alice,D1\n"
        "E1,alice2,Alice Two,D1\n"
        "E3,bob,Bob,D1\n"
        "E4,BOB,Bobby,D1\n"
        "E5,carol,Carol,D404\n"
        "E6,dave,Dave,D6\n"
        "E7,erin,Erin,D1\n"
    )
    directory = read(tmp_path, employees, departments)
    reasons = {row.where: row.reason for row in directory.rejected}
    assert set(directory.departments) == {"D1"}
    assert set(directory.employees) == {"E7"}
    assert (
        reasons["departments.csv:3"]
        == reasons["departments.csv:10"]
        == "department id 'D2' appears 2 times"
    )
    assert "cycle" in reasons["departments.csv:4"] and "cycle" in reasons["departments.csv:5"]
    assert "'D404' is unknown" in reasons["departments.csv:6"]
    assert "unknown parent 'D404'" in reasons["departments.csv:7"]
    assert (
        "named 'Twin'" in reasons["departments.csv:8"]
        and "named 'Twin'" in reasons["departments.csv:9"]
    )
    assert (
        reasons["employees.csv:2"]
        == reasons["employees.csv:3"]
        == "employee id 'E1' appears 2 times"
    )
    assert (
        "is used by 2 people" in reasons["employees.csv:4"]
        and "is used by 2 people" in reasons["employees.csv:5"]
    )
    assert "department 'D404', which is unknown" in reasons["employees.csv:6"]
    assert "department 'D6', which is unknown or was rejected" in reasons["employees.csv:7"]
