"""The CSV source against real files: encodings, detected or named, and bytes that decode
in none of them (refused with the line and the byte offset)."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.config import CsvSource
from syncd.model import State
from syncd.sources.csv import read_csv
from tests.sources.csv_support import HEADER, fails, settings_for, write

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


def test_a_utf16_file_without_bom_is_refused_by_its_nul_characters(tmp_path: Path) -> None:
    path = write(tmp_path / "u16.csv", HEADER + "E1,alice,Alice,A\n", "utf-16-le")
    assert "NUL characters" in fails(CsvSource(layout="paths", employees=path))
