"""The CSV source against real files: secondary positions and the separators of positions
and department paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from syncd.model import Position
from tests.sources.csv_support import DEPARTMENTS, HEADER, fails, read, settings_for


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


@pytest.mark.parametrize("key", ["path_separator", "positions_separator"])
def test_empty_separators_are_refused(tmp_path: Path, key: str) -> None:
    settings = settings_for(tmp_path, HEADER, **{key: ""})
    assert fails(settings) == f"source.csv.{key} is empty: set a character such as '/' or ';'"
