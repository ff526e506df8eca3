"""Departments: the departments file (layout two_files), and the ids employees name."""

from __future__ import annotations

from dataclasses import dataclass

from syncd.config import CsvDepartmentColumns
from syncd.model import (
    Department,
    Kind,
    RejectedRow,
)
from syncd.sources._text import (
    parse_int32,
)
from syncd.sources.csv.columns import _cell, _Columns, _is_blank, _resolved
from syncd.sources.csv.records import _REPEATED_HEADER, _Broken, _Table


@dataclass(frozen=True, slots=True)
class _DepartmentsRead:
    items: list[tuple[str, Department]]
    rejected: list[RejectedRow]


def _read_departments(table: _Table, settings: CsvDepartmentColumns) -> _DepartmentsRead:
    columns = _Columns(table)
    at = _resolved(columns, settings, "source.csv.department_columns", ("id", "name", "parent_id"))
    items: list[tuple[str, Department]] = []
    rejected: list[RejectedRow] = []

    def reject(where: str, reason: str, cells: list[str] | None) -> None:
        key = columns.trusted(cells, at["id"])
        rejected.append(RejectedRow(where, reason, Kind.DEPARTMENT, key))

    for line, cells in table.rows:
        where = table.where(line)
        if isinstance(cells, _Broken):
            reject(where, columns.reason(cells), cells.cells)
        elif _is_blank(cells):
            continue
        elif (misfit := columns.misfit(cells)) is not None:
            reject(where, misfit, cells)
        elif columns.repeats_header(cells):
            reject(where, _REPEATED_HEADER, cells)
        else:
            department = _department(cells, at, columns)
            if isinstance(department, Department):
                items.append((where, department))
            else:
                reject(where, department, cells)
    return _DepartmentsRead(items, rejected)


def _department(cells: list[str], at: dict[str, int | None], columns: _Columns) -> Department | str:
    department_id, name = _cell(cells, at["id"]), _cell(cells, at["name"])
    if department_id is None:
        return columns.missing(at["id"])
    if name is None:
        return columns.missing(at["name"])
    sort_order = None
    if (text := _cell(cells, at["sort_order"])) is not None:
        sort_order = parse_int32(text)
        if sort_order is None:
            return columns.not_a_number(at["sort_order"], text)
    return Department(
        id=department_id,
        name=name,
        parent_id=_cell(cells, at["parent_id"]),
        sort_order=sort_order,
        sn=_cell(cells, at["sn"]),
        en_name=_cell(cells, at["en_name"]),
    )


class _DepartmentIds:
    """Layout two_files: a department cell holds the department's id."""

    def department_of(self, text: str | None, where: str) -> str | None:
        return text or None  # already trimmed

    def departments(self) -> list[tuple[str, Department]]:
        return []  # they come from the departments file
