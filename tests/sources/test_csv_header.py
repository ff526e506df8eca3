"""The CSV source against real files: the header, its names matched to the settings'
columns, and a header that is missing a column, cannot be read, or comes again."""

from __future__ import annotations

from pathlib import Path

from syncd.model import Position, State
from tests.sources.csv_support import DEPARTMENTS, HEADER, fails, read, rejected_at, settings_for

# ---------------------------------------------------------------- headers and columns


def test_header_names_are_trimmed_and_matched_without_case(tmp_path: Path) -> None:
    text = " ID , UserName ,Name\t,Department\nE1,alice,Alice,D1\n"
    assert read(tmp_path, text).employees["E1"].username == "alice"


def test_optional_columns_at_their_default_names_may_be_absent(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER + "E1,alice,Alice,D1\n")
    alice = directory.employees["E1"]
    assert (alice.email, alice.state, alice.senior, alice.positions) == (
        None, State.ACTIVE, False, (Position("D1", None, primary=True),)
    )  # fmt: skip


def test_a_required_column_absent_names_it_its_setting_and_the_header(tmp_path: Path) -> None:
    text = "工号,姓名,部门\nE1,张三,D1\n"
    settings = settings_for(
        tmp_path,
        text,
        columns={"id": "工号", "username": "账号", "name": "姓名", "department": "部门"},
    )
    assert fails(settings) == (
        f"{settings.employees}: column '账号' (source.csv.columns.username) is not in the header; "
        "the header has: '工号', '姓名', '部门'"
    )


def test_an_optional_column_named_in_the_settings_must_be_present(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, HEADER + "E1,alice,Alice,D1\n", columns={"email": "邮箱"})
    assert "column '邮箱' (source.csv.columns.email) is not in the header" in fails(settings)


def test_an_extra_column_must_be_present(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, HEADER, extra_columns={"工位": "desk"})
    assert "column '工位' (source.csv.extra_columns) is not in the header" in fails(settings)


def test_a_departments_column_absent_names_its_setting(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, HEADER, "id,name\nD1,Head Office\n")
    message = fails(settings)
    assert message.startswith(f"{settings.departments}: column 'parent_id'")
    assert "(source.csv.department_columns.parent_id)" in message


def test_a_duplicated_header_name_in_use_fails(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, "id,username,name,department,Name\nE1,a,A,D1,B\n")
    assert (
        "column 'name' (source.csv.columns.name) appears more than once in the header "
        "(columns 3 and 5)" in fails(settings)
    )


def test_a_duplicated_header_name_not_in_use_is_ignored(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER.rstrip() + ",note,note\nE1,alice,Alice,D1,x,y\n")
    assert "E1" in directory.employees


def test_a_long_header_is_listed_in_part(tmp_path: Path) -> None:
    header = ",".join(f"c{i}" for i in range(60))
    message = fails(settings_for(tmp_path, header + "\n"))
    assert "'c39', ... and 20 more" in message


# ---------------------------------------------------------------- unreadable or repeated headers


def test_a_repeated_header_is_not_a_person(tmp_path: Path) -> None:
    # Two exports joined into one file: in layout paths the header would become a department.
    text = HEADER + "E1,alice,Alice,A\n" + HEADER + "E2,bob,Bob,A\n"
    directory = read(tmp_path, text, layout="paths")
    assert set(directory.employees) == {"E1", "E2"}
    assert set(directory.departments) == {"A"}
    assert "repeats the header" in rejected_at(directory, "employees.csv:3").reason


def test_a_repeated_header_in_the_departments_file(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER, DEPARTMENTS + "id,name,parent_id\n")
    assert "repeats the header" in rejected_at(directory, "departments.csv:4").reason


def test_a_nul_in_the_header_fails(tmp_path: Path) -> None:
    message = fails(settings_for(tmp_path, "i\x00d,username,name,department\n"))
    assert "line 1: the header cannot be read: the row contains NUL characters" in message


def test_an_unclosed_quote_in_the_header_fails(tmp_path: Path) -> None:
    message = fails(settings_for(tmp_path, 'id,"username,name,department\n'))
    assert "line 1: the header cannot be read: the file ends inside a quoted field" in message
