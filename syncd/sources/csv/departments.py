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
from syncd.sources.csv.columns import (
    _cell,
    _Columns,
    _is_blank,
    _resolved,
    split_head,
    split_tail,
)
from syncd.sources.csv.records import _REPEATED_HEADER, _Broken, _Table


@dataclass(frozen=True, slots=True)
class _DepartmentsRead:
    items: list[tuple[str, Department]]
    rejected: list[RejectedRow]
    heads: dict[str, str] | None = None  # department id -> its head's person id (column head)


def _read_departments(table: _Table, settings: CsvDepartmentColumns) -> _DepartmentsRead:
    columns = _Columns(table)
    at = _resolved(columns, settings, "source.csv.department_columns", ("id", "name", "parent_id"))
    items: list[tuple[str, Department]] = []
    rejected: list[RejectedRow] = []
    heads: dict[str, str] = {}

    def reject(where: str, reason: str, cells: list[str] | None, hides: bool = False) -> None:
        key = columns.trusted(cells, at["id"])
        rejected.append(RejectedRow(where, reason, Kind.DEPARTMENT, key, may_hide_rows=hides))

    last: tuple[int, list[str]] | None = None  # the last record with text, as for employees
    for line, cells in table.rows:
        where = table.where(line)
        if isinstance(cells, _Broken):
            reject(where, columns.reason(cells), cells.cells, columns.hides_rows(cells))
            last = None
            continue
        if _is_blank(cells):
            continue
        before, last = last, (line, cells)
        if (
            before is not None
            and len(before[1]) < columns.min_width
            and columns.split(before[1], cells)
        ):
            reject(where, split_tail(before[0]), None, hides=True)
            continue
        if (misfit := columns.misfit(cells)) is not None:
            if before is not None and len(cells) < columns.min_width and items:
                head = table.where(before[0])
                if items[-1][0] == head and columns.split(before[1], cells):
                    items.pop()
                    reject(head, split_head(line), before[1][:-1], hides=True)
            reject(where, misfit, cells, hides=True)
        elif columns.repeats_header(cells, where):
            reject(where, _REPEATED_HEADER, cells)
        else:
            department = _department(cells, at, columns)
            if isinstance(department, Department):
                items.append((where, department))
                if (head_id := _cell(cells, at["head"])) is not None:
                    heads[department.id] = head_id
            else:
                reject(where, department, cells)
    return _DepartmentsRead(items, rejected, heads)


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
