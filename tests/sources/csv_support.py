"""Shared by the CSV source's tests (tests/sources/test_csv_*.py): files written under a
test's tmp_path, the settings that read them, and the rejections and failures they give."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.model import Directory, Kind, RejectedRow
from syncd.sources.csv import read_csv

DATA = Path(__file__).parent.parent / "data" / "csv"

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
