"""Departments that are the paths people carry (a CSV file's layout ``paths``) are made for
the people the run places in them: not for a row rejected, a leaver never synced or a
change that waits, whose department would stand empty (a damaged row's path, "Co/Adm"),
and always for everyone the plan creates or moves there. Generated: the paths, who is new
or synced (and where syncd placed them), who is rejected, who left before syncd first ran.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import NamedTuple

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.config import CsvSource
from syncd.model import Directory, Kind
from syncd.plan import Action, Plan, Policy
from syncd.plan.join import JoinRules, SourceRead, join
from syncd.sources.csv import read_csv
from tests.engine.plan_world import planned_as_the_runner_does, synced
from tests.support.examples import examples

HEADER = "id,username,name,department,status\n"
PATHS = st.lists(st.sampled_from(["Co", "R&D", "Adm", "Admin", "Lab"]), min_size=1, max_size=3)


class Row(NamedTuple):
    path: str  # as read now
    held: str | None  # where syncd placed them (None: never synced)
    rejected: bool  # read without a name: set aside
    departed: bool


ROWS = st.builds(
    Row,
    PATHS.map("/".join),
    st.none() | PATHS.map("/".join),
    st.booleans(),
    st.booleans(),
)


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(ROWS, min_size=1, max_size=8), st.booleans())
def test_a_path_department_is_made_for_someone_placed_in_it(rows: list[Row], joined: bool) -> None:
    """Every department made places someone the plan creates or updates, or syncd holds,
    in it or below; every department someone is created or moved into is made or held.
    ``joined``: the export joined by id with a directory of everyone it reads that says no
    status and places nobody (the export's paths are the tree)."""
    read = read_paths(rows)
    if joined:
        read = joined_with_a_directory(read)
    synced_rows = [r._replace(path=r.held, rejected=False) for r in rows if r.held is not None]
    held = read_paths(synced_rows, [n for n, r in enumerate(rows) if r.held is not None])
    snapshot, view = synced(held)
    p = planned_as_the_runner_does(read, snapshot, view, Policy())
    made = {c.key for c in p.changes if c.kind is Kind.DEPARTMENT and c.action is Action.CREATE}
    placed = placed_departments(read, p, set(snapshot.employees))
    assert made <= placed, (rows, made - placed, p.notes)
    there = made | set(snapshot.departments)
    moved = {
        d
        for c in p.changes
        if c.kind is Kind.EMPLOYEE and c.action in (Action.CREATE, Action.UPDATE)
        for d in above(read, c.key)
    }
    assert moved <= there, (rows, moved - there, p.notes)
    unmade = {n.key for n in p.notes if n.message.startswith("department ")}
    assert unmade == {k for k in read.departments if k not in there}, (rows, p.notes)


def joined_with_a_directory(hr: Directory) -> Directory:
    """``hr`` joined by id with a directory of its people, placed nowhere and with no status:
    the export first for every field."""
    people = {k: e._replace(positions=()) for k, e in hr.employees.items()}
    reads = [
        SourceRead("hr", hr, key="id"),
        SourceRead("ad", Directory({}, people, status_read=False), "id", required=False),
    ]
    return join(reads, JoinRules({})).directory


def read_paths(rows: list[Row], ids: list[int] | None = None) -> Directory:
    """The rows read by the CSV source in layout paths, person n's id "e{n}"."""
    lines = [
        f"e{n},user{n},{'' if r.rejected else f'Person {n}'},{r.path},"
        f"{'inactive' if r.departed else 'active'}\n"
        for n, r in zip(ids if ids is not None else range(len(rows)), rows, strict=True)
    ]
    with tempfile.TemporaryDirectory() as folder:
        employees = Path(folder, "employees.csv")
        employees.write_text(HEADER + "".join(lines), "utf-8")
        return read_csv(CsvSource(employees=employees, layout="paths"))


def placed_departments(read: Directory, p: Plan, held: set[str]) -> set[str]:
    """The departments (and those above them) of the people the plan creates or updates,
    or syncd holds and the plan leaves as they are, as read."""
    changed = {c.key for c in p.changes if c.kind is Kind.EMPLOYEE}
    made = {
        c.key
        for c in p.changes
        if c.kind is Kind.EMPLOYEE and c.action in (Action.CREATE, Action.UPDATE)
    }
    kept = {k for k in held if k not in changed}
    return {d for k in made | kept for d in above(read, k)}


def above(read: Directory, key: str) -> set[str]:
    """The departments of a person's positions as read, and those above them."""
    found: set[str] = set()
    e = read.employees.get(key)
    for p in e.positions if e is not None else ():
        at = p.department_id
        while at is not None:
            found.add(at)
            at = read.departments[at].parent_id
    return found
