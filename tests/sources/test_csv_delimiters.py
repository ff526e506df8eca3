"""The CSV source against real files: delimiters, sniffed from the header, set, or
declared by an Excel sep= line."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sources.csv_support import HEADER, fails, read, settings_for


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
    short = read(tmp_path, text + "E2;bob\n", layout="paths", columns={"name": "name,x"})
    assert [row.where for row in short.rejected] == ["employees.csv:4", "employees.csv:5"]


def test_a_bad_delimiter_setting(tmp_path: Path) -> None:
    assert "source.csv.delimiter: 'ab' is not a delimiter" in fails(
        settings_for(tmp_path, HEADER, delimiter="ab")
    )
