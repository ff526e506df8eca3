"""The CSV source: HR exports read into a Directory.

Two layouts: ``two_files`` (an employees file whose department column holds a department
id, and a departments file), and ``paths`` (one employees file whose department column
holds a path such as ``Head Office/R&D/Backend``; the tree is derived from the paths and
a department's id is its normalized path, so it stays the same from run to run).

A row that cannot be used is set aside with the file, the line it starts on and a reason;
the other rows are still used. A problem with a whole file (missing, unreadable, not
decodable, a configured column absent from the header) raises SourceError instead: a
file that cannot be read is never taken for an empty one.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

from syncd._gc import collection_paused
from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.mapping import Rules, SourceMapping
from syncd.model import Directory, build_directory
from syncd.sources._paths import DepartmentPaths
from syncd.sources._trace import Count, Tracer
from syncd.sources.csv.departments import _DepartmentIds, _DepartmentsRead, _read_departments
from syncd.sources.csv.employees import _Mapping, _read_employees
from syncd.sources.csv.files import _read_file
from syncd.sources.csv.records import FIELD_LIMIT
from syncd.sources.heads import with_heads

__all__ = ["FIELD_LIMIT", "read_csv"]


def read_csv(
    settings: CsvSource,
    *,
    mapping: SourceMapping | None = None,
    trace: Tracer | None = None,
    count: Count | None = None,
    synced_names: Mapping[str, str] | None = None,
) -> Directory:
    """Read the configured CSV files into a complete Directory, or raise SourceError.

    ``mapping``: the rules (source.mapping); ``trace`` is told of every person read;
    ``count`` how many rows were read so far, now and then; ``synced_names``: see
    ``build_directory``.
    """
    for key in ("path_separator", "positions_separator"):
        if not getattr(settings, key):
            raise SourceError(f"source.csv.{key} is empty: set a character such as '/' or ';'")
    # The limit is process-wide in the csv module: set it on every read, in case it was changed.
    csv.field_size_limit(FIELD_LIMIT)
    rules = Rules(mapping) if mapping is not None and not mapping.empty else None
    # What a read returns lives on: frozen, the collector never goes over it (it
    # took a pass over every value made as soon as it was enabled again: 0.1 s at 100,000).
    with collection_paused(freeze=True):
        return _read(settings, _Mapping(rules, trace, count), synced_names)


def _read(
    settings: CsvSource, mapping: _Mapping, synced_names: Mapping[str, str] | None
) -> Directory:
    if settings.layout == "two_files":
        assert settings.departments is not None  # the settings validator requires it
        departments = _read_file(
            settings.departments,
            "source.csv.departments",
            settings,
            lambda table: _read_departments(table, settings.department_columns),
        )
        ids = _DepartmentIds(frozenset(d.id for _, d in departments.items))
        people = _read_file(
            settings.employees,
            "source.csv.employees",
            settings,
            lambda table: _read_employees(table, settings, ids, mapping),
        )
        files = [settings.employees, settings.departments]
    else:
        people = _read_file(
            settings.employees,
            "source.csv.employees",
            settings,
            lambda table: _read_employees(
                table, settings, DepartmentPaths(settings.path_separator), mapping
            ),
        )
        departments = _DepartmentsRead(people.departments, [])
        files = [settings.employees]
    items, problems = people.items, list[str]()
    if departments.heads:
        names = {d.id: d.name for _, d in departments.items}
        items, problems = with_heads(items, departments.heads, lambda d: names.get(d, d))
    return build_directory(
        departments.items,
        items,
        rejected=departments.rejected + people.rejected,
        complete=True,
        source="csv:" + ",".join(str(f) for f in files),
        filtered=people.filtered,
        warnings=problems,
        one_read=True,
        status_read=people.status_read,
        synced_names=synced_names,
        username_edges=people.username_edges,
        moved_statuses=people.moved_statuses,
        departments_from_people=settings.layout != "two_files",
    )
