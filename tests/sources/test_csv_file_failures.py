"""The CSV source against real files: whole-file failures, a file missing, empty, without
a header or unreadable, fail the read with the path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from syncd.config import CsvSource
from syncd.sources.csv import files as csv_files
from tests.sources.csv_support import HEADER, fails, read, write


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
