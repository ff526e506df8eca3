"""The CSV source against real files: cell values, dates, numbers, yes/no flags, genders,
read in their accepted forms or rejecting their row with the column."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.model import Position, State
from tests.sources.csv_support import HEADER, read, rejected_at
from tests.support.examples import examples


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        (
            "birthday",
            "1990-02-30",
            "column 'birthday': '1990-02-30' is not a date (YYYY-MM-DD, YYYY/MM/DD or YYYYMMDD)",
        ),
        ("birthday", "05/01/1990", "column 'birthday': '05/01/1990' is not a date"),
        ("sort_order", "1.5", "column 'sort_order': '1.5' is not a whole number"),
        ("sort_order", "2147483648", "column 'sort_order': '2147483648' is not a whole number"),
        ("senior", "maybe", "column 'senior': 'maybe' is neither yes (1, true, yes, y, 是) nor no"),
    ],
)
def test_bad_values_reject_the_row_naming_the_column(
    tmp_path: Path, column: str, value: str, reason: str
) -> None:
    text = HEADER.rstrip() + f",{column}\nE1,alice,Alice,D1,{value}\nE2,bob,Bob,D1,\n"
    directory = read(tmp_path, text)
    row = rejected_at(directory, "employees.csv:2")
    assert reason in row.reason
    assert (row.key, row.username) == ("E1", "alice")
    assert set(directory.employees) == {"E2"}


def test_a_long_bad_value_is_shown_cut_short(tmp_path: Path) -> None:
    text = HEADER.rstrip() + ",birthday\nE1,alice,Alice,D1," + "9" * 5000 + "\n"
    reason = rejected_at(read(tmp_path, text), "employees.csv:2").reason
    assert "... (5000 characters)" in reason
    assert len(reason) < 200


@pytest.mark.parametrize(
    ("text", "iso"),
    [("1990-01-05", "1990-01-05"), ("1990/1/5", "1990-01-05"), ("19900105", "1990-01-05"),
     ("1990.01.05", "1990-01-05"), ("1990-01-05 00:00:00", "1990-01-05"),
     (" 2000/02/29 ", "2000-02-29")],
)  # fmt: skip
def test_birthday_forms(tmp_path: Path, text: str, iso: str) -> None:
    directory = read(tmp_path, HEADER.rstrip() + f",birthday\nE1,alice,Alice,D1,{text}\n")
    assert directory.employees["E1"].birthday == iso


@pytest.mark.parametrize(
    ("text", "senior"),
    [("1", True), ("TRUE", True), (" Yes ", True), ("y", True), ("是", True),
     ("0", False), ("false", False), ("N", False), ("否", False), ("", False)],
)  # fmt: skip
def test_senior_values(tmp_path: Path, text: str, senior: bool) -> None:
    directory = read(tmp_path, HEADER.rstrip() + f",senior\nE1,alice,Alice,D1,{text}\n")
    assert directory.employees["E1"].senior is senior


@pytest.mark.parametrize(
    ("text", "gender"),
    [("男", "MALE"), ("F", "FEMALE"), ("female", "FEMALE"), ("其他", None), ("", None)],
)
def test_gender_values(tmp_path: Path, text: str, gender: str | None) -> None:
    directory = read(tmp_path, HEADER.rstrip() + f",gender\nE1,alice,Alice,D1,{text}\n")
    assert directory.employees["E1"].gender == gender


def test_formula_looking_cells_are_kept_verbatim(tmp_path: Path) -> None:
    text = (
        HEADER.rstrip()
        + ',job_title\nE1,alice,=cmd|\' /C calc\'!A0,D1,"=HYPERLINK(""http://x"")"\nE2,bob,@SUM(1+1),D1,+1\n'
    )
    directory = read(tmp_path, text)
    assert directory.employees["E1"].name == "=cmd|' /C calc'!A0"
    assert directory.employees["E1"].job_title == '=HYPERLINK("http://x")'
    assert (directory.employees["E2"].name, directory.employees["E2"].job_title) == (
        "@SUM(1+1)",
        "+1",
    )


# Every column the reader knows, each with a value of its own.
_EVERY_COLUMN = {
    "id": "E1",
    "username": "alice",
    "name": "Alice",
    "department": "D1",
    "positions": "D2",
    "en_name": "Alice EN",
    "email": "alice@example.com",
    "mobile": "13800000001",
    "tel": "010-1234",
    "sn": "W0001",
    "gender": "female",
    "birthday": "1990-01-05",
    "job_title": "Engineer",
    "sort_order": "7",
    "senior": "yes",
    "status": "active",
    "start_date": "2020-01-01",
    "end_date": "2099-12-31",
    "floor": "3F",
}
_FIELDS_READ = {
    "id": "E1", "username": "alice", "name": "Alice", "en_name": "Alice EN",
    "email": "alice@example.com", "mobile": "13800000001", "tel": "010-1234", "sn": "W0001",
    "gender": "FEMALE", "birthday": "1990-01-05", "job_title": "Engineer", "sort_order": 7,
    "senior": True, "state": State.ACTIVE, "start_date": "2020-01-01",
    "end_date": "2099-12-31", "extra": (("floor", "3F"),), "properties": (), "photo": None,
    "tags": (),
}  # fmt: skip


@settings(max_examples=examples(40), deadline=None)
@given(order=st.permutations(list(_EVERY_COLUMN)))
def test_each_column_fills_its_own_field_in_any_order(order: list[str]) -> None:
    # The reader makes a person by position (a tenth of a read's cost): a column that
    # filled its neighbour's field would show here, whatever the file's column order.
    with tempfile.TemporaryDirectory() as folder:
        header, row = ",".join(order), ",".join(_EVERY_COLUMN[c] for c in order)
        directory = read(
            Path(folder),
            f"{header}\n{row}\n",
            extra_columns={"floor": "floor"},
            columns={"start_date": "start_date", "end_date": "end_date"},
        )
    person = directory.employees["E1"]
    assert person._asdict() == {
        **_FIELDS_READ,
        "positions": (Position("D1", "Engineer", primary=True), Position("D2")),
    }
