"""The CSV source against real files: the two layouts, departments in a file of their own
(two_files) or derived from each person's department path (paths)."""

from __future__ import annotations

from pathlib import Path

from syncd.config import CsvSource
from syncd.model import Department, Employee, Kind, Position, State
from syncd.sources.csv import read_csv
from tests.sources.csv_support import DATA, HEADER, read, rejected_at

# ---------------------------------------------------------------- layout two_files


def test_two_files_reads_departments_and_every_employee_field() -> None:
    settings = CsvSource(
        employees=DATA / "two_files" / "employees.csv",
        departments=DATA / "two_files" / "departments.csv",
        columns={"positions": "positions"},
        extra_columns={"工位": "desk"},
    )
    directory = read_csv(settings)

    assert directory.rejected == ()
    assert directory.complete
    assert directory.source == f"csv:{settings.employees},{settings.departments}"
    assert directory.departments["D1"] == Department(
        "D1", "Head Office", None, 1, "100", "Head Office"
    )
    assert directory.departments["D2"] == Department("D2", "研发中心", "D1", 2, "200", "R&D Center")
    assert directory.departments["D3"] == Department("D3", "Backend", "D2", 1)
    assert directory.path("D3") == ("Head Office", "研发中心", "Backend")
    assert directory.employees["E1"] == Employee(
        id="E1",
        username="alice",
        name="张丽",
        positions=(
            Position("D3", "Engineer", primary=True),
            Position("D4"),
            Position("D2"),
        ),
        en_name="Alice Zhang",
        email="alice@example.com",
        mobile="13800000001",
        tel="021-1234",
        sn="1001",
        gender="FEMALE",
        birthday="1990-01-05",
        job_title="Engineer",
        sort_order=10,
        senior=False,
        state=State.ACTIVE,
        extra=(("desk", "A-101"),),
    )


def test_two_files_empty_cells_are_none_and_flags_dates_and_states_are_parsed() -> None:
    directory = read_csv(
        CsvSource(
            employees=DATA / "two_files" / "employees.csv",
            departments=DATA / "two_files" / "departments.csv",
        )
    )
    bob, carol, dave = (directory.employees[key] for key in ("E2", "E3", "E4"))
    assert (bob.en_name, bob.tel, bob.gender, bob.birthday, bob.senior) == (
        None, None, "MALE", "1985-02-03", True
    )  # fmt: skip
    assert bob.extra == ()
    assert (carol.birthday, carol.state, carol.sort_order, carol.job_title) == (
        "1992-12-31", State.DEPARTED, None, None
    )  # fmt: skip
    assert carol.positions == (Position("D1", None, primary=True),)
    assert dave.positions == ()  # an empty department cell: the root organization


def test_department_rows_with_bad_cells_are_rejected_with_the_column(tmp_path: Path) -> None:
    departments = (
        "id,name,parent_id,sort_order\n"
        "D1,Head Office,,1\n"
        "D2,R&D,D1,first\n"
        ",Nameless,D1,3\n"
        "D4,,D1,4\n"
        "D6,Support,D1,99999999999\n"
        "D5,Sales,D1\n"  # last: a row after a short one is set aside with it
    )
    directory = read(tmp_path, HEADER + "E1,alice,Alice,D1\n", departments)
    assert set(directory.departments) == {"D1"}
    expected = {
        "departments.csv:3": ("D2", "column 'sort_order': 'first' is not a whole number"),
        "departments.csv:4": (None, "column 'id' is empty, and it is required"),
        "departments.csv:5": ("D4", "column 'name' is empty, and it is required"),
        "departments.csv:6": ("D6", "'99999999999' is not a whole number (from -2147483648"),
        "departments.csv:7": ("D5", "the row has 3 fields where the header has 4"),
    }
    for where, (key, reason) in expected.items():
        row = rejected_at(directory, where)
        assert row.kind is Kind.DEPARTMENT
        assert row.key == key
        assert reason in row.reason


# ---------------------------------------------------------------- layout paths


def test_paths_layout_derives_the_tree_with_the_path_as_id() -> None:
    directory = read_csv(
        CsvSource(
            layout="paths",
            employees=DATA / "paths" / "employees.csv",
            columns={"positions": "positions"},
        )
    )
    assert directory.rejected == ()
    assert directory.source == f"csv:{DATA / 'paths' / 'employees.csv'}"
    assert directory.departments == {
        "Head Office": Department("Head Office", "Head Office", None),
        "Head Office/R&D": Department("Head Office/R&D", "R&D", "Head Office"),
        "Head Office/R&D/Backend": Department(
            "Head Office/R&D/Backend", "Backend", "Head Office/R&D"
        ),
        "Head Office/Sales": Department("Head Office/Sales", "Sales", "Head Office"),
    }
    alice, bob, carol, dave = (directory.employees[key] for key in ("E1", "E2", "E3", "E4"))
    assert alice.positions == (
        Position("Head Office/R&D/Backend", "Engineer", primary=True),
        Position("Head Office/Sales"),
    )
    # Spaces around names and doubled or trailing separators do not make new departments.
    assert bob.positions == (Position("Head Office/R&D", "Manager", primary=True),)
    assert carol.positions[0].department_id == "Head Office/R&D/Backend"
    assert carol.state is State.DEPARTED
    assert dave.positions == ()


def test_paths_layout_with_another_separator_keeps_it_in_ids(tmp_path: Path) -> None:
    text = HEADER + "E1,alice,Alice,Group > Sales > East\nE2,bob,Bob,Group > A/B\n"
    directory = read(tmp_path, text, layout="paths", path_separator=">")
    assert directory.departments["Group>Sales>East"] == Department(
        "Group>Sales>East", "East", "Group>Sales"
    )
    assert directory.employees["E1"].positions[0].department_id == "Group>Sales>East"
    # The platform joins names with "/": a name holding one is rejected, with its people.
    assert "contains '/'" in rejected_at(directory, "employees.csv:3", Kind.DEPARTMENT).reason
    assert (
        "'Group>A/B', which is unknown"
        in rejected_at(directory, "employees.csv:3", Kind.EMPLOYEE).reason
    )


def test_paths_layout_keeps_the_departments_of_rejected_rows(tmp_path: Path) -> None:
    text = HEADER.rstrip() + ",birthday\nE1,alice,Alice,Group/Sales,not a date\n"
    directory = read(tmp_path, text, layout="paths")
    assert "E1" not in directory.employees
    assert set(directory.departments) == {"Group", "Group/Sales"}


def test_paths_layout_department_ids_are_stable_across_files(tmp_path: Path) -> None:
    first = read(tmp_path, HEADER + "E1,alice,Alice,A/B/C\nE2,bob,Bob,A/D\n", layout="paths")
    (tmp_path / "again").mkdir()
    second = read(
        tmp_path / "again", HEADER + "E2,bob,Bob, A / D \nE1,alice,Alice,A/B/C/\n", layout="paths"
    )
    assert first.departments == second.departments
