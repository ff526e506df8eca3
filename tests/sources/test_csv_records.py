"""The CSV source against real files: records and their physical line numbers, line ends,
quoting, NUL characters and the field size limit; a damaged record rejects its row."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.config import CsvSource
from syncd.sources.csv import FIELD_LIMIT, read_csv
from tests.sources.csv_support import DATA, HEADER, read, rejected_at

# ---------------------------------------------------------------- records and line numbers


def test_quoted_newlines_and_line_numbers_are_physical() -> None:
    directory = read_csv(
        CsvSource(
            employees=DATA / "quoted-newlines.csv",
            departments=DATA / "two_files" / "departments.csv",
        )
    )
    assert directory.employees["E1"].job_title == "Engineer,\r\nsecond line\r\nthird line"
    assert directory.employees["E3"].job_title == 'Lead "QA"'
    assert set(directory.employees) == {"E1", "E2", "E3", "E5"}
    row = rejected_at(directory, "quoted-newlines.csv:8")  # after a 3-line record and a blank line
    assert (row.key, row.reason) == ("E4", "the row has 6 fields where the header has 5")


def test_blank_lines_and_rows_of_empty_cells_are_skipped(tmp_path: Path) -> None:
    rows = "E1,alice,Alice,D1\nE2,bob,Bob,D1\nE3,carol\n\n,,\nE4,dan,Dan,D1\nE5,eve,Eve,D1\n"
    directory = read(tmp_path, "\n\n" + HEADER + "\n  \n,,,\n,, ,,,\n" + rows)
    assert set(directory.employees) == {"E1", "E5"}
    # E3's short row, and the rows next to it, blank lines between them skipped.
    where = [row.where for row in directory.rejected]
    assert where == ["employees.csv:9", "employees.csv:10", "employees.csv:13"]


def test_trailing_empty_cells_fit_the_header(tmp_path: Path) -> None:
    # Spreadsheets add empty columns after the last one, in the header, the rows, or both.
    text = (
        "id,username,name,department,,\nE1,alice,Alice,D1\nE2,bob,Bob,D1,,\nE3,carol,Carol,D1,,,,\n"
    )
    assert set(read(tmp_path, text).employees) == {"E1", "E2", "E3"}


def test_a_last_line_without_its_line_end_may_be_cut_inside_a_field(tmp_path: Path) -> None:
    # "...,D1" might have been "...,D10" or "...,D1,离职": the row cannot be trusted, and
    # rows after it may be lost, so nobody missing is taken for a leaver.
    directory = read(tmp_path, HEADER + "E1,alice,Alice,D1\nE2,bob,Bob,D1")
    assert set(directory.employees) == {"E1"}
    row = rejected_at(directory, "employees.csv:3")
    assert row.key is None
    assert "ends without a line end" in row.reason
    assert not directory.leavers_known


def test_a_crlf_file_whose_last_line_ends_in_a_bare_cr_was_cut_before_its_lf(
    tmp_path: Path,
) -> None:
    text = HEADER.replace("\n", "\r\n") + "E1,alice,Alice,D1\r\nE2,bob,Bob,D1\r"
    directory = read(tmp_path, text)
    assert set(directory.employees) == {"E1"}
    assert "ends without a line end" in rejected_at(directory, "employees.csv:3").reason
    assert not directory.leavers_known


def test_a_crlf_file_ending_in_crlf_is_whole(tmp_path: Path) -> None:
    text = HEADER.replace("\n", "\r\n") + "E1,alice,Alice,D1\r\nE2,bob,Bob,D1\r\n"
    directory = read(tmp_path, text)
    assert set(directory.employees) == {"E1", "E2"}
    assert directory.leavers_known


@pytest.mark.parametrize("last", ['"D1"', '"D1 ""North"""', '"D1 "'])
def test_a_last_line_closed_by_a_quote_may_be_cut_there_too(tmp_path: Path, last: str) -> None:
    # '"D1 "' may be what is left of '"D1 ""North"""': a quote that looks like the closing
    # one may be the first of two standing for one, and rows after it may be lost.
    directory = read(tmp_path, HEADER + f"E1,alice,Alice,D1\nE2,bob,Bob,{last}")
    assert set(directory.employees) == {"E1"}
    assert "ends without a line end" in rejected_at(directory, "employees.csv:3").reason
    assert not directory.leavers_known


def test_old_mac_line_ends(tmp_path: Path) -> None:
    rows = "E1,alice,Alice,D1\rE2,bob,Bob,D1\rE3,carol,Carol\r"
    directory = read(tmp_path, HEADER.replace("\n", "\r") + rows)
    assert set(directory.employees) == {"E1"}
    assert rejected_at(directory, "employees.csv:4").key == "E3"
    # The row before a short row nothing completes is set aside with it (see the damage tests).
    assert "short row on line 4" in rejected_at(directory, "employees.csv:3").reason


# ---------------------------------------------------------------- quoting


def test_malformed_quoting_on_one_line_rejects_that_row(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER + 'E1,alice,"Ali"ce,D1\nE2,bob,Bob,D1\n')
    row = rejected_at(directory, "employees.csv:2")
    assert row.reason.startswith("the quoting is malformed")
    assert row.key == "E1"
    assert set(directory.employees) == {"E2"}


def test_malformed_quoting_across_lines_names_nobody(tmp_path: Path) -> None:
    # Where a broken quote ends is a guess: the rows it took may be anyone's.
    directory = read(
        tmp_path, HEADER + 'E1,alice,"Ali"ce,"D1\nE2,bob,Bob,D1\nE3",carol,Carol\nE4,dave,Dave,D1\n'
    )
    row = rejected_at(directory, "employees.csv:2")
    assert "may belong to other rows" in row.reason
    assert (row.key, row.username) == (None, None)
    assert set(directory.employees) == {"E4"}
    assert not directory.leavers_known


def test_a_file_cut_inside_a_quoted_field_rejects_its_last_row(tmp_path: Path) -> None:
    text = HEADER.rstrip() + ',job_title\nE1,alice,Alice,D1,"Engineer"\nE2,bob,Bob,D1,"Man'
    directory = read(tmp_path, text)
    row = rejected_at(directory, "employees.csv:3")
    assert "the file ends inside a quoted field" in row.reason
    # Rows after the cut are lost: nobody may be treated as a leaver on this read.
    assert (row.key, row.username) == (None, None)
    assert not directory.leavers_known
    assert set(directory.employees) == {"E1"}


# ---------------------------------------------------------------- NUL characters and field size


def test_nul_characters_reject_the_row(tmp_path: Path) -> None:
    directory = read(
        tmp_path, HEADER + "E1,alice,Al\x00ice,D1\nE2\x00,bob,Bob,D1\nE3,carol,Carol,D1\n"
    )
    first, second = (
        rejected_at(directory, "employees.csv:2"),
        rejected_at(directory, "employees.csv:3"),
    )
    assert first.reason.startswith("column 'name' contains NUL characters")
    assert (first.key, first.username) == ("E1", "alice")
    assert second.key == "E2"  # a NUL is never part of an id
    assert set(directory.employees) == {"E3"}


def test_a_10_mb_field_rejects_its_row_only(tmp_path: Path) -> None:
    huge = "x" * (10 * 1024 * 1024)
    text = HEADER.rstrip() + ",job_title\n" + f"E1,alice,Alice,D1,{huge}\nE2,bob,Bob,D1,Tester\n"
    directory = read(tmp_path, text)
    row = rejected_at(directory, "employees.csv:2")
    assert row.reason == f"a field is longer than {FIELD_LIMIT:,} characters (the limit)"
    assert row.key == "E1"
    assert set(directory.employees) == {"E2"}


def test_a_10_mb_quoted_field_over_many_lines_rejects_its_row_only(tmp_path: Path) -> None:
    huge = ("y" * 99 + "\n") * (100 * 1024)  # 10 MB, 102,400 lines, in quotes
    text = (
        HEADER.rstrip()
        + ",job_title\n"
        + f'E1,alice,Alice,D1,"{huge}"\nE2,bob,Bob,D1,",x\n"\nE3,carol,Carol,D1,\n'
    )
    directory = read(tmp_path, text)
    row = rejected_at(directory, "employees.csv:2")
    assert "longer than" in row.reason
    assert row.key == "E1"
    assert set(directory.employees) == {"E2", "E3"}
    assert directory.employees["E2"].job_title == ",x"  # trimmed, like every value
    assert len(directory.rejected) == 1
    # E2 starts on the line after the field's 102,400 lines and its closing quote.
    text = text.replace("E2,bob,Bob,D1", "E2,bob,Bob")
    assert rejected_at(read(tmp_path, text), f"employees.csv:{2 + 102400 + 1}").key == "E2"


def test_a_field_just_under_the_limit_is_read(tmp_path: Path) -> None:
    big = "z" * (FIELD_LIMIT - 1)
    directory = read(tmp_path, HEADER.rstrip() + f",job_title\nE1,alice,Alice,D1,{big}\n")
    assert directory.employees["E1"].job_title == big
