"""The CSV source against real files: layouts, encodings, headers, rejections, whole-file errors."""

from __future__ import annotations

import codecs
import os
from pathlib import Path
from typing import Any

import pytest

from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.model import Department, Directory, Employee, Kind, Position, RejectedRow, State
from syncd.sources.csv import FIELD_LIMIT, read_csv
from syncd.sources.csv import files as csv_files

DATA = Path(__file__).parent.parent / "data" / "csv"
SAMPLE = Path(__file__).parent.parent.parent / "config" / "sample"

DEPARTMENTS = "id,name,parent_id\nD1,Head Office,\nD2,R&D,D1\n"
HEADER = "id,username,name,department\n"


def write(path: Path, text: str, encoding: str = "utf-8") -> Path:
    path.write_bytes(text.encode(encoding))
    return path


def settings_for(
    tmp_path: Path, employees: str, departments: str = DEPARTMENTS, **more: Any
) -> CsvSource:
    """Settings for employees (and departments) text written to files under tmp_path."""
    files = {"employees": write(tmp_path / "employees.csv", employees)}
    if more.get("layout", "two_files") == "two_files":
        files["departments"] = write(tmp_path / "departments.csv", departments)
    return CsvSource(**files, **more)


def read(tmp_path: Path, employees: str, departments: str = DEPARTMENTS, **more: Any) -> Directory:
    return read_csv(settings_for(tmp_path, employees, departments, **more))


def rejected_at(directory: Directory, where: str, kind: Kind | None = None) -> RejectedRow:
    found = [r for r in directory.rejected if r.where == where and kind in (None, r.kind)]
    assert len(found) == 1, f"expected one rejection at {where}, got {directory.rejected}"
    return found[0]


def fails(settings: CsvSource) -> str:
    with pytest.raises(SourceError) as caught:
        read_csv(settings)
    return str(caught.value)


# ---------------------------------------------------------------- layout two_files


def test_two_files_reads_departments_and_every_employee_field() -> None:
    settings = CsvSource(
        employees=DATA / "two_files" / "employees.csv",
        departments=DATA / "two_files" / "departments.csv",
        columns={"positions": "positions"},
        extra_columns={"工位": "desk"},
    )
    directory = read_csv(settings)

    assert directory.rejected == ()
    assert directory.complete
    assert directory.source == f"csv:{settings.employees},{settings.departments}"
    assert directory.departments["D1"] == Department(
        "D1", "Head Office", None, 1, "100", "Head Office"
    )
    assert directory.departments["D2"] == Department("D2", "研发中心", "D1", 2, "200", "R&D Center")
    assert directory.departments["D3"] == Department("D3", "Backend", "D2", 1)
    assert directory.path("D3") == ("Head Office", "研发中心", "Backend")
    assert directory.employees["E1"] == Employee(
        id="E1",
        username="alice",
        name="张丽",
        positions=(
            Position("D3", "Engineer", primary=True),
            Position("D4"),
            Position("D2"),
        ),
        en_name="Alice Zhang",
        email="alice@example.com",
        mobile="13800000001",
        tel="021-1234",
        sn="1001",
        gender="FEMALE",
        birthday="1990-01-05",
        job_title="Engineer",
        sort_order=10,
        senior=False,
        state=State.ACTIVE,
        extra=(("desk", "A-101"),),
    )


def test_two_files_empty_cells_are_none_and_flags_dates_and_states_are_parsed() -> None:
    directory = read_csv(
        CsvSource(
            employees=DATA / "two_files" / "employees.csv",
            departments=DATA / "two_files" / "departments.csv",
        )
    )
    bob, carol, dave = (directory.employees[key] for key in ("E2", "E3", "E4"))
    assert (bob.en_name, bob.tel, bob.gender, bob.birthday, bob.senior) == (
        None, None, "MALE", "1985-02-03", True
    )  # fmt: skip
    assert bob.extra == ()
    assert (carol.birthday, carol.state, carol.sort_order, carol.job_title) == (
        "1992-12-31", State.DEPARTED, None, None
    )  # fmt: skip
    assert carol.positions == (Position("D1", None, primary=True),)
    assert dave.positions == ()  # an empty department cell: the root organization


def test_department_rows_with_bad_cells_are_rejected_with_the_column(tmp_path: Path) -> None:
    departments = (
        "id,name,parent_id,sort_order\n"
        "D1,Head Office,,1\n"
        "D2,R&D,D1,first\n"
        ",Nameless,D1,3\n"
        "D4,,D1,4\n"
        "D5,Sales,D1\n"
        "D6,Support,D1,99999999999\n"
    )
    directory = read(tmp_path, HEADER + "E1,alice,Alice,D1\n", departments)
    assert set(directory.departments) == {"D1"}
    expected = {
        "departments.csv:3": ("D2", "column 'sort_order': 'first' is not a whole number"),
        "departments.csv:4": (None, "column 'id' is empty, and it is required"),
        "departments.csv:5": ("D4", "column 'name' is empty, and it is required"),
        "departments.csv:6": ("D5", "the row has 3 fields where the header has 4"),
        "departments.csv:7": ("D6", "'99999999999' is not a whole number (from -2147483648"),
    }
    for where, (key, reason) in expected.items():
        row = rejected_at(directory, where)
        assert row.kind is Kind.DEPARTMENT
        assert row.key == key
        assert reason in row.reason


# ---------------------------------------------------------------- layout paths


def test_paths_layout_derives_the_tree_with_the_path_as_id() -> None:
    directory = read_csv(
        CsvSource(
            layout="paths",
            employees=DATA / "paths" / "employees.csv",
            columns={"positions": "positions"},
        )
    )
    assert directory.rejected == ()
    assert directory.source == f"csv:{DATA / 'paths' / 'employees.csv'}"
    assert directory.departments == {
        "Head Office": Department("Head Office", "Head Office", None),
        "Head Office/R&D": Department("Head Office/R&D", "R&D", "Head Office"),
        "Head Office/R&D/Backend": Department(
            "Head Office/R&D/Backend", "Backend", "Head Office/R&D"
        ),
        "Head Office/Sales": Department("Head Office/Sales", "Sales", "Head Office"),
    }
    alice, bob, carol, dave = (directory.employees[key] for key in ("E1", "E2", "E3", "E4"))
    assert alice.positions == (
        Position("Head Office/R&D/Backend", "Engineer", primary=True),
        Position("Head Office/Sales"),
    )
    # Spaces around names and doubled or trailing separators do not make new departments.
    assert bob.positions == (Position("Head Office/R&D", "Manager", primary=True),)
    assert carol.positions[0].department_id == "Head Office/R&D/Backend"
    assert carol.state is State.DEPARTED
    assert dave.positions == ()


def test_paths_layout_with_another_separator_keeps_it_in_ids(tmp_path: Path) -> None:
    text = HEADER + "E1,alice,Alice,Group > Sales > East\nE2,bob,Bob,Group > A/B\n"
    directory = read(tmp_path, text, layout="paths", path_separator=">")
    assert directory.departments["Group>Sales>East"] == Department(
        "Group>Sales>East", "East", "Group>Sales"
    )
    assert directory.employees["E1"].positions[0].department_id == "Group>Sales>East"
    # The platform joins names with "/": a name holding one is rejected, with its people.
    assert "contains '/'" in rejected_at(directory, "employees.csv:3", Kind.DEPARTMENT).reason
    assert (
        "'Group>A/B', which is unknown"
        in rejected_at(directory, "employees.csv:3", Kind.EMPLOYEE).reason
    )


def test_paths_layout_keeps_the_departments_of_rejected_rows(tmp_path: Path) -> None:
    text = HEADER.rstrip() + ",birthday\nE1,alice,Alice,Group/Sales,not a date\n"
    directory = read(tmp_path, text, layout="paths")
    assert "E1" not in directory.employees
    assert set(directory.departments) == {"Group", "Group/Sales"}


def test_paths_layout_department_ids_are_stable_across_files(tmp_path: Path) -> None:
    first = read(tmp_path, HEADER + "E1,alice,Alice,A/B/C\nE2,bob,Bob,A/D\n", layout="paths")
    (tmp_path / "again").mkdir()
    second = read(
        tmp_path / "again", HEADER + "E2,bob,Bob, A / D \nE1,alice,Alice,A/B/C/\n", layout="paths"
    )
    assert first.departments == second.departments


# ---------------------------------------------------------------- encodings


CHINESE_HEADER_COLUMNS = {
    "id": "工号",
    "username": "账号",
    "name": "姓名",
    "department": "部门",
    "status": "状态",
}


def test_gb18030_file_with_chinese_headers_and_semicolons(tmp_path: Path) -> None:
    text = (
        "工号;账号;姓名;部门;状态\r\n"
        "E1;zhangsan;张三;总部/研发中心;在职\r\n"
        "E2;lisi;李四;总部;离职\r\n"
    )
    path = write(tmp_path / "hr.csv", text, "gb18030")
    directory = read_csv(CsvSource(layout="paths", employees=path, columns=CHINESE_HEADER_COLUMNS))
    assert directory.rejected == ()
    assert directory.employees["E1"].name == "张三"
    assert directory.employees["E1"].positions[0].department_id == "总部/研发中心"
    assert directory.employees["E2"].state is State.DEPARTED


def test_gb18030_found_even_when_the_first_non_ascii_byte_comes_late(tmp_path: Path) -> None:
    rows = "".join(f"E{i},user{i},User {i},A\n" for i in range(3000))  # ~75 KB of ASCII first
    path = write(tmp_path / "late.csv", HEADER + rows + "E9999,wang,王五,A\n", "gb18030")
    directory = read_csv(CsvSource(layout="paths", employees=path))
    assert len(directory.employees) == 3001
    assert directory.employees["E9999"].name == "王五"


def test_gbk_explicit_encoding(tmp_path: Path) -> None:
    path = write(tmp_path / "gbk.csv", HEADER + "E1,zhangsan,张三,总部\n", "gbk")
    directory = read_csv(CsvSource(layout="paths", employees=path, encoding="GBK"))
    assert directory.employees["E1"].name == "张三"


def test_utf8_bom_does_not_hide_the_first_column(tmp_path: Path) -> None:
    path = write(tmp_path / "bom.csv", "\ufeff" + HEADER + "E1,alice,张丽,A\n")
    for encoding in ("auto", "utf-8"):
        directory = read_csv(CsvSource(layout="paths", employees=path, encoding=encoding))
        assert directory.employees["E1"].name == "张丽"


def test_utf16_with_bom_is_recognized(tmp_path: Path) -> None:
    # Excel's "Unicode text" export: UTF-16 with a BOM, tab-separated.
    path = write(
        tmp_path / "unicode.txt",
        "\ufeffid\tusername\tname\tdepartment\r\nE1\talice\t张丽\tA\r\n",
        "utf-16-le",
    )
    directory = read_csv(CsvSource(layout="paths", employees=path))
    assert directory.employees["E1"].name == "张丽"


def test_bytes_neither_utf8_nor_gb18030_fail_with_line_and_offset(tmp_path: Path) -> None:
    path = tmp_path / "binary.csv"
    path.write_bytes(HEADER.encode() + b"E1,alice,Alice,A\nE2,bob,B\xff\xfeb,A\n")
    message = fails(CsvSource(layout="paths", employees=path))
    assert message.startswith(f"{path}: the file cannot be decoded: ")
    assert "not UTF-8 at line 3 (byte offset 53)" in message
    assert "not GB18030 at line 3 (byte offset 53)" in message


def test_explicit_utf8_on_a_gb18030_file_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path / "gb.csv", HEADER + "E1,alice,Alice,A\nE2,zhang,张三,A\n", "gb18030")
    message = fails(CsvSource(layout="paths", employees=path, encoding="utf-8"))
    assert "not UTF-8 at line 3 (byte offset 54)" in message
    assert "check source.csv.encoding" in message


def test_damaged_utf8_is_not_read_as_gb18030(tmp_path: Path) -> None:
    # Read as GB18030, every Chinese name would turn into mojibake: refuse instead.
    good = "".join(f"E{i},user{i},张三{i},A\n" for i in range(20))
    path = tmp_path / "damaged.csv"
    path.write_bytes((HEADER + good).encode() + b"E99,bad,\xe5\xbc,A\n")
    message = fails(CsvSource(layout="paths", employees=path))
    assert "not valid UTF-8 at line 22" in message
    assert "looks damaged" in message


def test_the_position_of_a_bad_byte_after_megabytes_of_text(tmp_path: Path) -> None:
    # Past the first chunk read to find it, with characters cut by the chunks' edges.
    rows = "".join(f"E{i},user{i},张三李四王五{i},研发中心\n" for i in range(40000))
    good = (HEADER + rows).encode()
    assert len(good) > 2 * 1024 * 1024
    path = tmp_path / "big.csv"
    path.write_bytes(good + b"E99,bad,\xff,A\n")
    message = fails(CsvSource(layout="paths", employees=path))
    assert f"not valid UTF-8 at line 40002 (byte offset {len(good) + 8})" in message


@pytest.mark.parametrize("bom", ["\ufeff", ""])
def test_a_file_cut_inside_a_character_fails(tmp_path: Path, bom: str) -> None:
    path = tmp_path / "cut.csv"
    path.write_bytes((bom + HEADER + "E1,alice,张丽丽,A\n").encode()[:-5])
    message = fails(CsvSource(layout="paths", employees=path))
    assert message.startswith(f"{path}: ")
    assert "UTF-8 at line 2 (byte offset" in message


def test_unknown_encoding_name(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, HEADER, encoding="klingon")
    assert "source.csv.encoding: 'klingon' is not an encoding" in fails(settings)


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


# ---------------------------------------------------------------- delimiters


@pytest.mark.parametrize("delimiter", [",", ";", "\t", "|"])
def test_the_delimiter_is_sniffed_from_the_header(tmp_path: Path, delimiter: str) -> None:
    rows = ["id,username,name,department", 'E1,alice,"Zhang, Li; |",D1']
    text = "\n".join(
        row.replace(",", delimiter) if i == 0 else _delimited(delimiter)
        for i, row in enumerate(rows)
    )
    directory = read(tmp_path, text + "\n")
    assert directory.employees["E1"].name == "Zhang, Li; |"


def _delimited(delimiter: str) -> str:
    return delimiter.join(["E1", "alice", '"Zhang, Li; |"', "D1"])


def test_sniffing_ignores_delimiters_inside_quoted_header_names(tmp_path: Path) -> None:
    text = '"id";"username";"name, full";"department"\nE1;alice;Alice;D1\n'
    directory = read(tmp_path, text, columns={"name": "name, full"})
    assert directory.employees["E1"].name == "Alice"


@pytest.mark.parametrize(
    ("setting", "delimiter"), [("tab", "\t"), ("\\t", "\t"), (";", ";"), ("|", "|")]
)
def test_an_explicit_delimiter(tmp_path: Path, setting: str, delimiter: str) -> None:
    # The header alone would sniff as commas: the setting wins.
    text = delimiter.join(["id", "username", "name,x", "department"]) + "\n"
    text += delimiter.join(["E1", "alice", "Alice", "D1"]) + "\n"
    directory = read(tmp_path, text, layout="paths", delimiter=setting, columns={"name": "name,x"})
    assert directory.employees["E1"].name == "Alice"


def test_an_excel_sep_line_declares_the_delimiter(tmp_path: Path) -> None:
    text = "sep=;\n\nid;username;name,x;department\nE1;alice;Alice;D1\n"
    directory = read(tmp_path, text, layout="paths", columns={"name": "name,x"})
    assert directory.employees["E1"].name == "Alice"
    assert read(tmp_path, text + "E2;bob\n", layout="paths", columns={"name": "name,x"}).rejected[
        0
    ].where == ("employees.csv:5")


def test_a_bad_delimiter_setting(tmp_path: Path) -> None:
    assert "source.csv.delimiter: 'ab' is not a delimiter" in fails(
        settings_for(tmp_path, HEADER, delimiter="ab")
    )


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
    text = "\n\n" + HEADER + "\n  \n,,,\n,, ,,,\nE1,alice,Alice,D1\nE2,bob,Bob\n"
    directory = read(tmp_path, text)
    assert set(directory.employees) == {"E1"}
    assert [row.where for row in directory.rejected] == ["employees.csv:9"]


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


def test_a_last_line_closed_by_a_quote_needs_no_line_end(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER + 'E1,alice,Alice,D1\nE2,bob,Bob,"D1"')
    assert set(directory.employees) == {"E1", "E2"}
    assert directory.rejected == ()
    assert directory.leavers_known


def test_old_mac_line_ends(tmp_path: Path) -> None:
    directory = read(tmp_path, HEADER.replace("\n", "\r") + "E1,alice,Alice,D1\rE2,bob,Bob\r")
    assert set(directory.employees) == {"E1"}
    assert rejected_at(directory, "employees.csv:3").key == "E2"


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
    assert set(directory.employees) == {"E2"}
    # A row with the wrong number of fields may be two rows joined, or half of one: it
    # names its first cell's person, kept as they are, and nobody absent is a leaver.
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


def test_secondary_positions_are_split_trimmed_and_deduplicated(tmp_path: Path) -> None:
    departments = DEPARTMENTS + "D3,Sales,D1\n"
    text = HEADER.rstrip() + ',positions,job_title\nE1,alice,Alice,D1," D2 ; D3;;D2;D1",Lead\n'
    directory = read(tmp_path, text, departments, columns={"positions": "positions"})
    assert directory.employees["E1"].positions == (
        Position("D1", "Lead", primary=True),
        Position("D2"),
        Position("D3"),
    )


def test_secondary_positions_with_another_separator(tmp_path: Path) -> None:
    text = HEADER.rstrip() + ",兼职\nE1,alice,Alice,D1,D2|D1\n"
    directory = read(tmp_path, text, columns={"positions": "兼职"}, positions_separator="|")
    assert [p.department_id for p in directory.employees["E1"].positions] == ["D1", "D2"]


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


@pytest.mark.parametrize("key", ["path_separator", "positions_separator"])
def test_empty_separators_are_refused(tmp_path: Path, key: str) -> None:
    settings = settings_for(tmp_path, HEADER, **{key: ""})
    assert fails(settings) == f"source.csv.{key} is empty: set a character such as '/' or ';'"


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


def test_a_nul_in_the_header_fails(tmp_path: Path) -> None:
    message = fails(settings_for(tmp_path, "i\x00d,username,name,department\n"))
    assert "line 1: the header cannot be read: the row contains NUL characters" in message


def test_a_utf16_file_without_bom_is_refused_by_its_nul_characters(tmp_path: Path) -> None:
    path = write(tmp_path / "u16.csv", HEADER + "E1,alice,Alice,A\n", "utf-16-le")
    assert "NUL characters" in fails(CsvSource(layout="paths", employees=path))


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


def test_an_unclosed_quote_in_the_header_fails(tmp_path: Path) -> None:
    message = fails(settings_for(tmp_path, 'id,"username,name,department\n'))
    assert "line 1: the header cannot be read: the file ends inside a quoted field" in message


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


# ---------------------------------------------------------------- whole-file failures


def test_missing_employees_file(tmp_path: Path) -> None:
    settings = CsvSource(layout="paths", employees=tmp_path / "nope.csv")
    assert fails(settings) == f"{tmp_path / 'nope.csv'}: file not found (source.csv.employees)"


def test_missing_departments_file(tmp_path: Path) -> None:
    settings = CsvSource(
        employees=write(tmp_path / "e.csv", HEADER), departments=tmp_path / "d.csv"
    )
    assert fails(settings) == f"{tmp_path / 'd.csv'}: file not found (source.csv.departments)"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    assert fails(CsvSource(layout="paths", employees=tmp_path)) == (
        f"{tmp_path}: is a directory, not a CSV file (source.csv.employees)"
    )


def test_an_empty_file(tmp_path: Path) -> None:
    message = fails(CsvSource(layout="paths", employees=write(tmp_path / "e.csv", "")))
    assert (
        message == f"{tmp_path / 'e.csv'}: the file is empty (0 bytes); it needs at least a header"
    )


@pytest.mark.parametrize("text", ["\n\n  \r\n", "\ufeff", "\ufeff\n"])
def test_a_file_of_blank_lines_has_no_header(tmp_path: Path, text: str) -> None:
    message = fails(CsvSource(layout="paths", employees=write(tmp_path / "e.csv", text)))
    assert message == f"{tmp_path / 'e.csv'}: has no header: the file holds only blank lines"


def test_a_header_without_rows_reads_as_nobody(tmp_path: Path) -> None:
    # Not an error here: the guards decide whether an empty source may be applied.
    directory = read(tmp_path, HEADER)
    assert directory.employees == {} and directory.complete and directory.rejected == ()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path / "e.csv", HEADER)
    path.chmod(0)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: cannot be read (permission denied)"
    )


def test_permission_denied_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "e.csv", HEADER)

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(csv_files, "open", denied, raising=False)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: cannot be read (permission denied)"
    )


def test_a_read_error_midway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "e.csv", HEADER + "E1,alice,Alice,A\n")

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(csv_files, "open", failing, raising=False)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: reading failed: Input/output error"
    )


# ---------------------------------------------------------------- the bundled sample data


SAMPLE_POSITIONS = {"positions": "positions"}


def test_the_sample_company_in_two_files() -> None:
    directory = read_csv(
        CsvSource(
            employees=SAMPLE / "employees.csv",
            departments=SAMPLE / "departments.csv",
            columns=SAMPLE_POSITIONS,
        )
    )
    assert directory.rejected == ()
    assert len(directory.departments) == 11
    assert max(len(directory.path(d)) for d in directory.departments) == 3
    assert len(directory.employees) == 40
    assert [e.id for e in directory.employees.values() if e.state is State.DEPARTED] == ["E0040"]
    assert [e.id for e in directory.employees.values() if len(e.positions) > 1] == ["E0005"]
    mobiles = [e.mobile for e in directory.employees.values()]
    assert len(set(mobiles)) == 40 and all(m and len(m) == 11 for m in mobiles)
    assert all(e.email and e.birthday and e.gender for e in directory.employees.values())


def test_the_sample_company_in_paths_is_the_same_company() -> None:
    two_files = read_csv(
        CsvSource(
            employees=SAMPLE / "employees.csv",
            departments=SAMPLE / "departments.csv",
            columns=SAMPLE_POSITIONS,
        )
    )
    paths = read_csv(
        CsvSource(
            layout="paths", employees=SAMPLE / "employees-paths.csv", columns=SAMPLE_POSITIONS
        )
    )
    assert paths.rejected == ()
    assert sorted(map(paths.path, paths.departments)) == sorted(
        map(two_files.path, two_files.departments)
    )
    for key, person in two_files.employees.items():
        other = paths.employees[key]
        assert [two_files.path(p.department_id or "") for p in person.positions] == [
            paths.path(p.department_id or "") for p in other.positions
        ]
        assert person == _with_positions(other, person.positions)


def _with_positions(employee: Employee, positions: tuple[Position, ...]) -> Employee:
    return employee._replace(positions=positions)


def test_the_sample_chinese_hr_export() -> None:
    path = SAMPLE / "hr-export-gb18030.csv"
    with pytest.raises(UnicodeDecodeError):
        path.read_text(encoding="utf-8")
    directory = read_csv(
        CsvSource(
            layout="paths",
            employees=path,
            columns={
                "id": "工号", "username": "账号", "name": "姓名", "department": "部门",
                "job_title": "职务", "email": "邮箱", "mobile": "手机", "gender": "性别",
                "birthday": "出生日期", "status": "在职状态", "senior": "高管",
            },
        )
    )  # fmt: skip
    assert directory.rejected == ()
    assert len(directory.employees) == 5
    assert (
        directory.employees["E0001"].senior
        and directory.employees["E0001"].birthday == "1968-03-12"
    )
    assert directory.employees["E0040"].state is State.DEPARTED
    assert directory.path("研发中心/后端开发部/基础架构组") == (
        "研发中心",
        "后端开发部",
        "基础架构组",
    )


def test_encoded_sample_has_no_bom() -> None:
    assert not (SAMPLE / "hr-export-gb18030.csv").read_bytes().startswith(codecs.BOM_UTF8)


@pytest.mark.parametrize(
    "row",
    [
        "E9,carol,Carol Chen,D2,13900000009,已离职,\n",  # a status nobody named
        "E9,carol\u200e,Carol Chen,D2,13900000009,在职,\n",  # a character that cannot be seen
        "E9,carol,Carol Chen,D404,13900000009,在职,\n",  # a department nobody has
    ],
)
def test_a_rejected_row_keeps_what_tells_its_person_from_another(tmp_path: Path, row: str) -> None:
    # Issue 32: a rejected row naming a leaver's username by another id protected the
    # leaver whoever it was. Its name and mobile, where readable, tell (plan.rekeys).
    text = "id,username,name,department,mobile,status,tel\n" + row
    d = read(tmp_path, text, departed_values=["离职"], active_values=["在职"])
    found = rejected_at(d, "employees.csv:2")
    assert found.key == "E9"
    assert dict(found.identifiers) == {"name": "Carol Chen", "mobile": "13900000009"}
