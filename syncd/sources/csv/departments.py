"""Departments: the departments file (layout two_files), and the ids employees name."""

from __future__ import annotations

from collections.abc import Collection
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
from syncd.sources.csv.columns import _cell, _Columns, _resolved
from syncd.sources.csv.records import _REPEATED_HEADER, _Table
from syncd.sources.csv.rows import Rows


@dataclass(frozen=True, slots=True)
class _DepartmentsRead:
    items: list[tuple[str, Department]]
    rejected: list[RejectedRow]
    heads: dict[str, str] | None = None  # department id -> its head's person id (column head)


def _read_departments(table: _Table, settings: CsvDepartmentColumns) -> _DepartmentsRead:
    columns = _Columns(table)
    at = _resolved(columns, settings, "source.csv.department_columns", ("id", "name", "parent_id"))
    heads: dict[str, str] = {}

    def read(cells: list[str], where: str) -> Department | str:
        if columns.repeats_header(cells, where):
            return _REPEATED_HEADER
        department = _department(cells, at, columns)
        if isinstance(department, Department) and (head := _cell(cells, at["head"])) is not None:
            heads[department.id] = head
        return department

    def rejected(
        where: str, reason: str, cells: list[str] | None, hides: bool, seen: Collection[str]
    ) -> RejectedRow:
        key = columns.trusted(cells, at["id"])
        return RejectedRow(where, reason, Kind.DEPARTMENT, key, may_hide_rows=hides)

    rows = Rows(table.name, columns, read, rejected)
    for line, cells in table.rows:
        rows.sort(line, cells)
    rows.end()
    kept = {department.id for _, department in rows.items}  # a row read, then set aside
    heads = {key: head for key, head in heads.items() if key in kept}
    return _DepartmentsRead(rows.items, rows.rejected, heads)


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
    """Layout two_files: a department cell holds the department's id (``ids``: those the
    departments file gives)."""

    def __init__(self, ids: frozenset[str]) -> None:
        self.ids = ids

    def department_of(self, text: str | None, where: str) -> str | None:
        return text or None  # already trimmed

    def departments(self) -> list[tuple[str, Department]]:
        return []  # they come from the departments file
