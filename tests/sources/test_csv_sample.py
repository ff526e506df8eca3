"""The CSV source against real files: the bundled sample data (config/sample) reads whole,
and its two layouts describe the same company."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from syncd.config import CsvSource
from syncd.model import Directory, Employee, Position, State
from syncd.sources.csv import read_csv

SAMPLE = Path(__file__).parent.parent.parent / "config" / "sample"
SAMPLE_POSITIONS = {"positions": "positions"}


def sample_in_two_files() -> Directory:
    """The bundled sample company, read from its departments and employees files."""
    return read_csv(
        CsvSource(
            employees=SAMPLE / "employees.csv",
            departments=SAMPLE / "departments.csv",
            columns=SAMPLE_POSITIONS,
        )
    )


def test_the_sample_company_in_two_files() -> None:
    directory = sample_in_two_files()
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
    two_files = sample_in_two_files()
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
