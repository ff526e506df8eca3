"""A line break moved across the edge of a row: the end of one row's last field starts the
next row's first ("active" then "user2" read as "activ" and "euser2"), or the start of the
next row's first field ends the row before ("E1" then "user2" read as "E1us" and "er2").
Both rows keep the header's width and read well; each is still one person's, with a field
at its edge changed, and a status first in a row may read as another: "…,Lin" +
"inactive,…" as "…,Linin" + "active,…" (a former employee back) and "…,Lin" + "active,…"
as "…,L" + "inactive,…" (someone active gone). Whatever the columns' order, the edge, how
far the break moved, the statuses (of the default vocabularies), the names, the
departments and positions (by id or by path), an extra attribute (one of each ends as a
status starts) and fields left empty, planned as the runner plans with
``username_change = "remove_and_create"`` (the setting under which a changed username
replaces an account): nobody active is locked or removed, nobody departed unlocked, nobody
given a new account, and a username changed this way is a conflict that says why; the
same on the next run of the same export, once the first run's changes are made."""

from __future__ import annotations

import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from syncd.config import CsvSource
from syncd.mapping import SourceMapping
from syncd.model import Department, Directory, Employee, Kind, Position, State
from syncd.plan import Action, Change, Plan, PlatformView, Policy, Snapshot
from syncd.plan.join import FIELDS, JoinRules, SourceRead, join
from syncd.plan.values import DEPARTED
from syncd.sources.csv import read_csv
from tests.engine.plan_world import (
    COMPANY,
    NOW,
    dept,
    directory,
    person,
    planned_as_the_runner_does,
    synced,
)
from tests.support.examples import examples

COLUMNS = ["id", "username", "name", "department", "positions", "mobile", "office", "status"]
SHORT = ["id", "username", "name", "department", "mobile", "status"]  # the pinned rows' header
USERNAMES = ["user{}", "noël{}", "j.smith{}", "{}wang", "li.na.{}"]
NAMES = ["Person {}", "Lin", "Qin {}", "Martin"]  # some end as a status value starts
# An extra attribute, written as an extended field: some end as a status value starts.
OFFICES = ["Berlin", "HQ {}", "Lin", ""]
# Departments, one whose id ends as a status value starts ("admin" and "adm" + "inactive").
DEPARTMENTS = [*COMPANY, dept("admin", "Admin")]
# Layout paths: the departments' paths, one whose last name ends as a status value starts.
PATHS = ["rd", "Co/R&D", "Co / Admin", "Co/Admin/Lin", "sales"]
# Statuses of the default vocabularies: read first in a row, "active" may be what is left
# of "inactive", and "inactive" may be "active" with the end of the row before ("…,Lin").
STATUSES = {"active": State.ACTIVE, "在职": State.ACTIVE, "enabled": State.ACTIVE}
STATUSES |= {"inactive": State.DEPARTED, "离职": State.DEPARTED, "departed": State.DEPARTED}
# And one that is another of the same meaning with text before it ("已" + "离职"): read so,
# the status is right, the row before's last field is not.
STATUSES |= {"已离职": State.DEPARTED}
# An HR system's vocabulary whose departed value is an active one with text after it: last in
# a row, "Active - left" may read "Active", its end moved to the start of the row after.
# And a departed code that is an active one without its last digit ("Left", "Left1"): last
# in a row, "Left" may read "Left1" with the first digit of the row after.
SUFFIXED = {"Active": State.ACTIVE, "On leave": State.ACTIVE, "Active - left": State.DEPARTED}
SUFFIXED |= {"Left": State.DEPARTED, "Left1": State.ACTIVE}
# And an active value that is another active one with text after it: "Active" has two.
SUFFIXED |= {"Active - remote": State.ACTIVE}
REPLACE = Policy(username_change="remove_and_create", extended_fields={"office": "office"})
# Each column's value in person n's row, for the rows written out here.
VALUES = {"id": "e{}", "username": "user{}", "name": "Person {}", "department": "rd"}
VALUES |= {"positions": "sales", "mobile": "1380000000{}", "office": "HQ {}"}


class Joined(NamedTuple):
    """The export joined with a directory of the people syncd holds that says no status:
    by ``key``; the export required and first for every field, or (``directory_first``)
    the directory required and first for every field but the status, the export optional
    (joined_with_a_directory)."""

    key: str
    directory_first: bool = False


# A join of the export with a directory, or the export alone (None).
JOINED = st.none() | st.builds(Joined, st.sampled_from(["id", "username"]), st.booleans())


def status_first_moved(
    last: str, statuses: list[str], end: str, edge: str
) -> tuple[list[list[str]], str]:
    """Two rows, the status first (e1's and e2's ``statuses``) and ``last`` last (e1's
    value there ``end``), and the text from e1's last field to e2's status as a moved line
    break leaves it (``edge``)."""
    header = ["status", *(c for c in VALUES if c != last), last]
    rows = [header]
    rows += [[s, *(VALUES[c].format(n) for c in header[1:])] for n, s in enumerate(statuses, 1)]
    rows[1][-1] = end
    first, second = (",".join(cells) for cells in rows[1:])
    return (
        rows,
        f"{','.join(header)}\n{first[: len(first) - len(end)]}{edge}{second[len(statuses[1]) :]}\n",
    )


# The "in" of e2's "inactive" gone to e1's id: nothing syncd wrote can tell.
ID_LAST = status_first_moved("id", ["active", "inactive"], "e1", "e1in\nactive")
# The "in" of e1's department "admin" gone to e2's "active": "adm", which the file lacks.
DEPARTMENT_LAST = status_first_moved("department", ["active", "active"], "admin", "adm\ninactive")


def status_last_moved(first: str, tail: str = "") -> tuple[list[list[str]], str]:
    """Two rows, ``first`` their first column and the status last, e1 departed ("Active -
    left") and e2 active, and the text as a line break moved left by " - left" leaves it.
    ``tail``: what ends the header line (``","``: a last column without a name, which the
    rows leave out)."""
    header = [first, *(c for c in VALUES if c != first), "status"]
    rows = [header]
    rows += [
        [*(VALUES[c].format(n) for c in header[:-1]), s]
        for n, s in ((1, "Active - left"), (2, "Active"))
    ]
    lines = [",".join(cells) for cells in rows]
    return rows, f"{lines[0]}{tail}\n{lines[1][: -len(' - left')]}\n - left{lines[2]}\n"


def status_last(column: str | None = None) -> st.SearchStrategy[list[int]]:
    """Column orders with the status last (and ``column`` first, if given)."""
    last = COLUMNS.index("status")
    if column is None:
        rest = [i for i in range(len(COLUMNS)) if i != last]
        return st.permutations(rest).map(lambda m: [*m, last])
    first = COLUMNS.index(column)
    middle = [i for i in range(len(COLUMNS)) if i not in (first, last)]
    return st.permutations(middle).map(lambda m: [first, *m, last])


def status_first(column: str) -> st.SearchStrategy[list[int]]:
    """Column orders with the status first and ``column`` last: where a moved line break
    can make one status another, and the row before show it."""
    first, last = COLUMNS.index("status"), COLUMNS.index(column)
    middle = [i for i in range(len(COLUMNS)) if i not in (first, last)]
    return st.permutations(middle).map(lambda m: [first, *m, last])


@st.composite
def moved_breaks(
    draw: st.DrawFn,
    statuses: list[str],
    orders: st.SearchStrategy[list[int]] | None = None,
    places: list[str] | None = None,
) -> tuple[list[list[str]], str]:
    """A company's rows (columns in any order, or one of ``orders``, header first, a status
    of ``statuses`` each, a department of ``places``, the departments file's ids if none)
    and the export's text with one line break between two rows, or the last one, moved by
    a few characters, left or right, never past the field at the edge (each row keeps the
    header's width)."""
    order = draw(st.permutations(range(len(COLUMNS))) if orders is None else orders)
    count = draw(st.integers(2, 6))
    shapes = draw(st.lists(st.sampled_from(USERNAMES), min_size=count, max_size=count))
    rows = [[COLUMNS[i] for i in order]]
    for n, shape in enumerate(shapes, 1):
        status = draw(st.sampled_from(statuses))
        name = draw(st.sampled_from(NAMES)).format(n)
        ids = places or [d.id for d in DEPARTMENTS]
        place = draw(st.sampled_from(ids))
        others = draw(st.lists(st.sampled_from(ids), min_size=1, max_size=2) | st.just([]))
        office = draw(st.sampled_from(OFFICES)).format(n)
        pad = draw(st.sampled_from(["", " "]))  # an id with spaces around it is read trimmed
        cells = [f"{pad}e{n}{pad}", shape.format(n), name, place, ";".join(others)]
        mobile = draw(st.sampled_from([f"1380000{n:04d}", ""]))  # a mobile may be left empty
        cells += [mobile, office, status]
        rows.append([cells[i] for i in order])
    lines = [",".join(cells) for cells in rows] + [""]  # the file ends with a line end
    k = draw(st.integers(1, count))  # the break after row k (the header is row 0)
    # Left: the end of row k's last field starts row k + 1; right: the start of row k + 1's
    # first field ends row k. An empty field at the edge has nothing to move.
    left = k == count or draw(st.booleans())
    edge = len(rows[k][-1] if left else rows[k + 1][0])
    if edge == 0:
        return rows, "\n".join(lines)
    # Often by as much as the status at the edge, if one is, is longer or shorter than
    # another: where one may read as another.
    near = [c for c in (rows[k][-1], rows[k + 1][0] if k < count else "") if c in statuses]
    shifts = sorted({abs(len(a) - len(b)) for a in near or statuses for b in statuses} - {0})
    d = min(draw(st.integers(1, edge) | st.sampled_from(shifts)), edge)
    if left:
        lines[k], lines[k + 1] = lines[k][:-d], lines[k][-d:] + lines[k + 1]
    else:
        lines[k], lines[k + 1] = lines[k] + lines[k + 1][:d], lines[k + 1][d:]
    # After the last row, the moved text is a last line without a line end of its own.
    return rows, "\n".join(lines)


def moved(statuses: list[str], edge: str) -> tuple[list[list[str]], str]:
    """Two rows, status first and name last, the first named Lin, and the text between
    "Lin" and the second's status as a moved line break leaves it (``edge``)."""
    rows = [["status", "id", "username", "department", "mobile", "name"]]
    rows += [
        [s, f"e{n}", f"user{n}", "rd", f"1380000000{n}", "Lin"] for n, s in enumerate(statuses, 1)
    ]
    line = ",".join(rows[2][1:])
    return rows, f"{','.join(rows[0])}\n{','.join(rows[1][:-1])},{edge},{line}\n"


def spaced(export: tuple[list[list[str]], str]) -> tuple[list[list[str]], str]:
    """The export with its ids written with spaces around them (read trimmed)."""
    rows, text = export
    return rows, text.replace(",e1,", ", e1 ,").replace(",e2,", ", e2 ,")


def written(rows: list[list[str]], vocabulary: dict[str, State] = STATUSES) -> list[Employee]:
    """The people of the rows as written, before the break moved."""
    header = rows[0]

    def cell(cells: list[str], column: str) -> str:
        return cells[header.index(column)] if column in header else ""

    people = []
    for cells in rows[1:]:
        e = person(
            cell(cells, "id").strip(),
            cell(cells, "username"),
            path_id(cell(cells, "department")),
            name=cell(cells, "name"),
            mobile=cell(cells, "mobile") or None,
            state=vocabulary[cell(cells, "status")],
            extra=(("office", cell(cells, "office")),) if cell(cells, "office") else (),
        )
        others = [path_id(d) for d in cell(cells, "positions").split(";") if d]
        others = [d for d in dict.fromkeys(others) if d != e.positions[0].department_id]
        people.append(e._replace(positions=(*e.positions, *map(Position, others))))
    return people


def path_id(path: str) -> str:
    """A department's id: its path's names trimmed (an id of the departments file is one)."""
    return "/".join(name.strip() for name in path.split("/"))


def path_departments(paths: list[str]) -> list[Department]:
    """The departments on ``paths``, each with its parents, by id."""
    ids = {path_id(p) for p in paths}
    ids |= {i.rsplit("/", 1)[0] for i in ids if "/" in i}
    made = (dept(i, i.rsplit("/", 1)[-1], i.rsplit("/", 1)[0] if "/" in i else None) for i in ids)
    return sorted(made, key=lambda d: d.id.count("/"))


def read_text(
    text: str,
    vocabulary: dict[str, State] = STATUSES,
    layout: str = "two_files",
    mapping: SourceMapping | None = None,
) -> Directory:
    """The export read by the CSV source, with ``vocabulary``'s statuses (the defaults'), in
    ``layout`` (``two_files``: with a departments file of DEPARTMENTS), by ``mapping``'s
    rules."""
    values: dict[str, Any] = {
        "active_values": [v for v, state in vocabulary.items() if state is State.ACTIVE],
        "departed_values": [v for v, state in vocabulary.items() if state is State.DEPARTED],
    }
    with tempfile.TemporaryDirectory() as folder:
        employees, departments = Path(folder, "employees.csv"), Path(folder, "departments.csv")
        employees.write_text(text, "utf-8")
        if "office" in text.split("\n", 1)[0].split(","):  # the extra attribute, as written
            values["extra_columns"] = {"office": "office"}
        if layout == "paths":
            return read_csv(
                CsvSource(employees=employees, layout="paths", **values), mapping=mapping
            )
        lines = [f"{d.id},{d.name},{d.parent_id or ''}\n" for d in DEPARTMENTS]
        departments.write_text("id,name,parent_id\n" + "".join(lines), "utf-8")
        source = CsvSource(employees=employees, departments=departments, **values)
        return read_csv(source, mapping=mapping)


@settings(max_examples=examples(300), deadline=None)
@given(moved_breaks(sorted(STATUSES)))
@example(moved(["active", "active"], "L\ninactive"))  # someone active would be locked
@example(moved(["active", "inactive"], "Linin\nactive"))  # a former employee unlocked
@example(spaced(moved(["active", "inactive"], "Linin\nactive")))  # ids " e1 ", " e2 "
@example(spaced(moved(["active", "active"], "L\ninactive")))
@example(ID_LAST)  # the same, the "in" gone to an id: nothing syncd wrote can tell
@example(DEPARTMENT_LAST)  # "admin" read "adm", a department the file does not have
@example(status_first_moved("positions", ["active", "active"], "be;admin", "be;adm\ninactive"))
@example(status_first_moved("office", ["active", "active"], "Berlin", "Berl\ninactive"))
@example(status_first_moved("office", ["active", "inactive"], "Berlin", "Berlinin\nactive"))
@example(status_first_moved("mobile", ["active", "inactive"], "", "in\nactive"))  # none written
def test_a_moved_line_break_locks_removes_or_replaces_nobody(
    export: tuple[list[list[str]], str],
) -> None:
    check_moved_break(*export, STATUSES)


@pytest.mark.parametrize("last", [c for c in COLUMNS if c not in ("id", "status")])
@settings(max_examples=examples(150), deadline=None)
@given(data=st.data())
def test_a_moved_line_break_after_each_field_a_status_first_follows_harms_nobody(
    last: str, data: st.DataObject
) -> None:
    """The same, the status first and each field in turn last (where the moved text
    comes from or goes to), in each layout, with or without accounts of those who left
    before syncd first ran."""
    layout = data.draw(st.sampled_from(["two_files", "paths"]))
    places = PATHS if layout == "paths" else None
    export = data.draw(moved_breaks(["active", "inactive"], status_first(last), places))
    departed_synced, changed = data.draw(st.booleans()), data.draw(changes(export[0]))
    check_moved_break(
        *export,
        STATUSES,
        layout,
        departed_synced=departed_synced,
        changed=changed,
        joined=data.draw(JOINED),
    )


DIGITS_ONLY = {"replace": ["\\D", ""]}
# Rules that make what syncd writes of a field or an extra attribute other than its cell:
# the mobile's digits alone, whatever text it gains. And a row filter on the office: those
# in "Lin" left out (contractors), those of the other offices let in; a field at the edge
# judged as a moved line break left it would let in the one or leave out the other.
OFFICE_FILTER = {"exclude": {"office": ["Lin"]}, "include": {"office": ["Berlin", "HQ *", ""]}}
RULES = SourceMapping.model_validate(
    {
        "fields": {"name": {"transforms": ["lower"]}, "mobile": {"transforms": [DIGITS_ONLY]}},
        "extra": {"office": "{office} office"},
        "filter": OFFICE_FILTER,
    }
)


@pytest.mark.parametrize("last", ["name", "mobile", "office"])
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_a_moved_line_break_beside_a_field_a_rule_makes_harms_nobody(
    last: str, data: st.DataObject
) -> None:
    """The same where a mapping rule makes what syncd writes of the field at the edge:
    weighed as the rule makes it ("lin", "Berlin office"); where the rule makes the same
    of it either way (the mobile's digits), nothing tells."""
    export = data.draw(moved_breaks(["active", "inactive"], status_first(last)))
    changed, joined = data.draw(changes(export[0])), data.draw(JOINED)
    check_moved_break(*export, STATUSES, mapping=RULES, changed=changed, joined=joined)


@pytest.mark.parametrize("first", ["name", "mobile", "office"])
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_a_moved_line_break_after_a_status_last_beside_a_field_a_rule_makes_harms_nobody(
    first: str, data: st.DataObject
) -> None:
    """The same with the status last and the field a rule makes first in the row after."""
    export = data.draw(moved_breaks(sorted(SUFFIXED), status_last(first)))
    changed, joined = data.draw(changes(export[0])), data.draw(JOINED)
    check_moved_break(*export, SUFFIXED, mapping=RULES, changed=changed, joined=joined)


@pytest.mark.parametrize("field", ["name", "office"])
@pytest.mark.parametrize("first", [True, False])
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_a_moved_line_break_between_statuses_of_one_meaning_harms_nobody(
    field: str, first: bool, data: st.DataObject
) -> None:
    """A status that is another of the same meaning with text at the edge ("已离职" is "已" +
    "离职", "Active - remote" is "Active" + " - remote"), and the field beside it a rule
    makes and the row filter judges: the status reads right either way, the row beside's
    field does not ("Person 1已", " - remoteBerlin")."""
    if first:
        export = data.draw(moved_breaks(["active", "离职", "已离职"], status_first(field)))
        vocabulary = STATUSES
    else:
        export = data.draw(moved_breaks(["Active", "Active - remote"], status_last(field)))
        vocabulary = SUFFIXED
    changed, joined = data.draw(changes(export[0])), data.draw(JOINED)
    check_moved_break(*export, vocabulary, mapping=RULES, changed=changed, joined=joined)


@pytest.mark.parametrize(
    ("last", "end", "edge"),
    [
        ("name", "Lin", "L\ninactive"),  # "lin" written: the lock waits
        ("name", "Lin", "Linin\nactive"),  # the unlock waits
        ("office", "Berlin", "Berl\ninactive"),  # "Berlin office" written
        ("mobile", "13800000001", "13800000001in\nactive"),  # the same digits either way
    ],
)
def test_a_field_a_rule_makes_is_weighed_as_the_rule_makes_it(
    last: str, end: str, edge: str
) -> None:
    """Pinned: e1's field last, e2's status first, the text between as the break left it."""
    states = ["active", "active" if edge.endswith("inactive") else "inactive"]
    check_moved_break(*status_first_moved(last, states, end, edge), STATUSES, mapping=RULES)


# Layout paths, the department last: e1's "Co/Admin" read "Co/Adm", e2's "active" as
# "inactive"; the path a department of its own, which syncd would make.
PATH_LAST = status_first_moved("department", ["active", "active"], "Co/Admin", "Co/Adm\ninactive")


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(
        moved_breaks(["active", "inactive"], status_first("department"), PATHS),
        moved_breaks(["active", "inactive"], status_first("positions"), PATHS),
    )
)
@example(PATH_LAST)
@example(status_first_moved("department", ["active", "active"], "Co / Admin", "Co / Adm\ninactive"))
@example(status_first_moved("department", ["active", "inactive"], "Co/Admin", "Co/Adminin\nactive"))
@example(status_first_moved("positions", ["active", "active"], "Co/Admin", "Co/Adm\ninactive"))
@example(status_first_moved("positions", ["active", "inactive"], "", "in\nactive"))  # e1 had none
def test_a_moved_line_break_after_a_department_path_locks_or_unlocks_nobody(
    export: tuple[list[list[str]], str],
) -> None:
    """The same in layout paths, the status first and the department's path last."""
    check_moved_break(*export, STATUSES, "paths")


@settings(max_examples=examples(200), deadline=None)
@given(moved_breaks(sorted(SUFFIXED), status_last()))
@example(status_last_moved("id"))  # a former employee unlocked: nothing syncd wrote tells
@example(status_last_moved("username"))  # the username after read "- leftuser2"
@example(status_last_moved("mobile"))  # the mobile after read as written, with "- left"
@example(status_last_moved("id", ","))  # the status the last named column, and the row's
@example(
    (
        [
            SHORT,
            ["1", "u1", "N 1", "rd", "1381", "Left"],
            ["12", "u2", "N 2", "rd", "1382", "Active"],
        ],
        ",".join(SHORT) + "\n1,u1,N 1,rd,1381,Left1\n2,u2,N 2,rd,1382,Active\n",
    )
)  # "Left" read "Left1" with the "1" of the id after: nothing syncd wrote tells
@example(
    (
        [SHORT, ["e1", "u1", "N 1", "rd", "13800000001", "Active - left"]],
        ",".join(SHORT) + "\ne1,u1,N 1,rd,13800000001,Active\n - left",
    )
)  # the file's last line break moved: its last line "- left", without a line end
def test_a_moved_line_break_after_a_status_last_unlocks_nobody(
    export: tuple[list[list[str]], str],
) -> None:
    """The same with the status last in each row and a vocabulary whose departed value is an
    active one with text after it."""
    check_moved_break(*export, SUFFIXED)


@pytest.mark.parametrize("first", [c for c in COLUMNS if c != "status"])
@settings(max_examples=examples(100), deadline=None)
@given(data=st.data())
def test_a_moved_line_break_before_each_field_a_status_last_precedes_harms_nobody(
    first: str, data: st.DataObject
) -> None:
    """The same with the status last and each field in turn first in the row after, the
    export alone or joined by its id or its username."""
    export = data.draw(moved_breaks(sorted(SUFFIXED), status_last(first)))
    changed, joined = data.draw(changes(export[0])), data.draw(JOINED)
    check_moved_break(*export, SUFFIXED, changed=changed, joined=joined)


def check_moved_break(
    rows: list[list[str]],
    text: str,
    vocabulary: dict[str, State],
    layout: str = "two_files",
    mapping: SourceMapping | None = None,
    departed_synced: bool = True,
    changed: frozenset[str] = frozenset(),
    joined: Joined | None = None,
) -> None:
    """Nobody active locked or removed, nobody departed unlocked, no account made, nobody
    updated and no department made (syncd holds each row and department as written); each
    username changed is a conflict
    (check_changed_usernames). The same on the next run of the same export, once the first
    run's changes are made. With ``mapping``, the people syncd wrote are the rows as
    written read by its rules (those its filter leaves out are nobody's: a lock beside
    such a row goes ahead by design, nothing telling whether text moved). Not
    ``departed_synced``: those who left beside a row of someone active had left before
    syncd first ran (no account of theirs: none may be made; beside a row syncd holds
    nobody under, nothing tells, and an account made goes ahead by design, as a lock
    does). ``changed``: the ids whose status this export changes (syncd holds the other:
    they left, or came back, since the last run). ``joined``: the export joined with a
    directory of the people syncd holds that says no status (joined_with_a_directory),
    the people held under the join key."""
    people = held_people(rows, vocabulary, layout, mapping, departed_synced)
    departments = DEPARTMENTS if layout == "two_files" else path_departments(PATHS)
    active, departed = truly(rows, people)
    people = [e._replace(state=OTHER[e.state]) if e.id in changed else e for e in people]
    if joined is not None and joined.key == "username":  # a person's joined id is the key
        people = [e._replace(id=e.username) for e in people]
    locked = {e.id for e in people if e.state is State.DEPARTED}
    d = read = read_text(text, vocabulary, layout, mapping)
    directory_people = people
    at_edge = rows[0].index("status") in (0, len(rows[0]) - 1)  # the break at a status
    for run in (1, 2):
        held = directory(departments, people)
        snapshot, view = synced(held, locked=dict.fromkeys(locked, NOW), policy=REPLACE)
        snapshot = locked_as_departed(snapshot)
        if joined is not None:
            d = joined_with_a_directory(read, directory_people, joined, snapshot)
        p = planned_as_the_runner_does(d, snapshot, view, REPLACE)
        harm = [c for c in p.changes if harmful(c, active, departed)]
        assert harm == [], (run, text, harm, p.notes)
        if at_edge:
            check_held_as_written(p, text, run)
        check_changed_usernames(d, snapshot, view, p, text)
        people, locked = applied(people, locked, d, p)
        departments = [*departments, *(x for x in d.departments.values() if x not in departments)]


def check_held_as_written(p: Plan, text: str, run: int) -> None:
    """Syncd holds every row and department as written: an update would write a field as
    the break left it, and a department made is a path as the break left it, made empty."""
    updated = [c.key for c in p.changes if c.action is Action.UPDATE]
    assert updated == [], (run, text, updated, p.notes)
    made = [c.key for c in p.changes if c.kind is Kind.DEPARTMENT and c.action is Action.CREATE]
    assert made == [], (run, text, made, p.notes)


def joined_with_a_directory(
    hr: Directory, people: list[Employee], joined: Joined, snapshot: Snapshot
) -> Directory:
    """``hr``, the export, joined with a directory holding ``people`` that says no status
    (the export decides it): the export required and the directory not (someone only the
    export has is taken), or, ``directory_first``, the other way round."""
    key, first = joined
    ad = Directory({}, {e.id: e for e in people}, status_read=False)
    reads = [
        SourceRead("hr", hr, key=key, required=not first),
        SourceRead("ad", ad, key=key, required=first, expects_status=False),
    ]
    order = ("ad", "hr") if first else ("hr", "ad")
    rules = JoinRules({**dict.fromkeys(FIELDS, order), "state": ("hr",)})
    return join(reads, rules, synced=snapshot.employees).directory


def locked_as_departed(snapshot: Snapshot) -> Snapshot:
    """``snapshot`` with each person locked there locked as departed (a read called them
    so), as syncd writes it."""
    people = snapshot.employees
    gone = {k: e._replace(lock_reason=DEPARTED) for k, e in people.items() if e.locked}
    return replace(snapshot, employees={**people, **gone})


def held_people(
    rows: list[list[str]],
    vocabulary: dict[str, State],
    layout: str,
    mapping: SourceMapping | None,
    departed_synced: bool,
) -> list[Employee]:
    """The people syncd holds for the rows as written (check_moved_break)."""
    people = written(rows, vocabulary)
    if mapping is not None:
        whole = "".join(f"{','.join(cells)}\n" for cells in rows)
        people = list(read_text(whole, vocabulary, layout, mapping).employees.values())
    if not departed_synced:
        gone = left_beside_someone_active(rows, vocabulary)
        people = [e for e in people if e.id not in gone]
    return people


def truly(rows: list[list[str]], people: list[Employee]) -> tuple[set[str], set[str]]:
    """The usernames of those active (whom no lock may reach: but beside a row syncd holds
    nobody under, where nothing tells) and of those departed, as the rows are written."""
    unheld = beside_nobody(rows, {e.id for e in people})
    active = {e.username for e in people if e.state is State.ACTIVE and e.id not in unheld}
    return active, {e.username for e in people if e.state is State.DEPARTED}


def harmful(c: Change, active: set[str], departed: set[str]) -> bool:
    """Whether a change makes an account (everyone's is held), unlocks someone departed or
    locks or removes someone active (by username)."""
    return c.kind is Kind.EMPLOYEE and (
        c.action is Action.CREATE
        or (c.action is Action.UNLOCK and c.display in departed)
        or (c.action in (Action.LOCK, Action.REMOVE) and c.display in active)
    )


OTHER = {State.ACTIVE: State.DEPARTED, State.DEPARTED: State.ACTIVE}


def changes(rows: list[list[str]]) -> st.SearchStrategy[frozenset[str]]:
    """Ids of ``rows`` whose status the export changes (syncd holds the other)."""
    return st.frozensets(st.sampled_from(row_ids(rows))) | st.just(frozenset())


def left_beside_someone_active(rows: list[list[str]], vocabulary: dict[str, State]) -> set[str]:
    """The ids of the rows whose status says departed beside (before a status first, after
    a status last) a row whose status says active, and who are beside nobody active
    themselves (a row beside that syncd holds nobody under tells nothing of a departure,
    which goes ahead by design)."""
    at, step, ids = rows[0].index("status"), beside_step(rows), row_ids(rows)
    states = [vocabulary[cells[at]] for cells in rows[1:]] + [State.DEPARTED]
    return {
        key
        for n, key in enumerate(ids)
        if states[n] is State.DEPARTED
        and 0 <= n + step < len(ids)
        and states[n + step] is State.ACTIVE
        and states[n - step] is State.DEPARTED
    }


def beside_nobody(rows: list[list[str]], held: set[str]) -> set[str]:
    """The ids of the rows beside (before a status first, after a status last) a row whose
    person syncd holds nothing for (``held``: the ids it holds)."""
    step, ids = beside_step(rows), row_ids(rows)
    return {
        key for n, key in enumerate(ids) if 0 <= n + step < len(ids) and ids[n + step] not in held
    }


def beside_step(rows: list[list[str]]) -> int:
    """Where the row beside a row is: -1, the one before (the status first); 1, after."""
    return -1 if rows[0].index("status") == 0 else 1


def row_ids(rows: list[list[str]]) -> list[str]:
    """The rows' ids as written, trimmed (as read)."""
    return [cells[rows[0].index("id")].strip() for cells in rows[1:]]


def applied(
    people: list[Employee], locked: set[str], d: Directory, p: Plan
) -> tuple[list[Employee], set[str]]:
    """The people syncd holds, and who of them is locked, once ``p``'s changes are made:
    each updated as read, each lock and unlock made, each removal."""
    done = {(c.action, c.key) for c in p.changes}
    kept = [
        d.employees[e.id] if (Action.UPDATE, e.id) in done else e
        for e in people
        if (Action.REMOVE, e.id) not in done
    ]
    locked = locked | {k for a, k in done if a is Action.LOCK}
    return kept, locked - {k for a, k in done if a is Action.UNLOCK}


def check_changed_usernames(
    d: Directory, snapshot: Snapshot, view: PlatformView, p: Plan, text: str
) -> None:
    """Each active row read with another username than its account's is a conflict; one
    for a moved line break says so, and what it advises makes the new account."""
    for e in d.employees.values():
        held = snapshot.employees.get(e.id)
        if held is None or held.username == e.username or e.state is State.DEPARTED:
            continue  # a departed row's old account stays, locked, whatever it gives
        said = [n.message for n in p.notes if n.key == e.id and n.kind == "conflict"]
        assert said, (text, e, p.notes)
        if any("line break moved across the row's edge" in m for m in said):
            # What the note advises when the change is real: the old account deleted on the
            # platform, an account is made under the new username.
            # Unless the row waits with the status beside it (a line break moved across
            # the edge between them: syncd.plan.moved_breaks).
            gone = replace(view, deleted=frozenset({held.username}))
            p = planned_as_the_runner_does(d, snapshot, gone, REPLACE)
            made = [c.display for c in p.changes if c.action is Action.CREATE]
            waits = [n for n in p.notes if n.key == e.id and "waits with the" in n.message]
            assert made == ([] if waits else [e.username]), (text, p.changes)


@pytest.mark.parametrize(
    ("before", "now", "done"),
    [("inactive", "active", Action.UNLOCK), ("active", "inactive", Action.LOCK)],
)
def test_a_status_after_a_row_that_reads_as_written_is_taken_as_it_reads(
    before: str, now: str, done: Action
) -> None:
    """Lin's row reads as syncd wrote it, so nothing moved across its edge: the person after
    her back in the export, or gone from it, is unlocked or locked as the status says."""
    rows, _ = moved(["active", before], "")
    people = written(rows)
    locked = {e.id: NOW for e in people if e.state is State.DEPARTED}
    snapshot, view = synced(directory(DEPARTMENTS, people), locked=locked, policy=REPLACE)
    text = "".join(f"{','.join(cells)}\n" for cells in rows).replace(f"{before},e2", f"{now},e2")
    p = planned_as_the_runner_does(read_text(text), snapshot, view, REPLACE)
    assert [(c.action, c.key) for c in p.changes] == [(done, "e2")], (text, p.notes)


@pytest.mark.parametrize("name", ["Lin", "Person 1"])
def test_a_former_employee_back_after_a_new_hire_waits_only_if_the_hire_ends_as_a_status_did(
    name: str,
) -> None:
    """e2 left ("inactive") and reads "active" again, after the row of e1, a new hire syncd
    holds nothing for: nothing tells whether e1's name took the "in" of e2's status. Named
    "Lin" it may have: the unlock waits (said), and so does e1's account, which would be
    made with the name as read (and the next run would find it as syncd wrote it). Any
    other name: e2 is back, e1 made."""
    rows, _ = moved(["active", "inactive"], "")
    e2 = written(rows)[1]
    snapshot, view = synced(directory(DEPARTMENTS, [e2]), locked={"e2": NOW}, policy=REPLACE)
    text = "".join(f"{','.join(cells)}\n" for cells in rows).replace("inactive,e2", "active,e2")
    p = planned_as_the_runner_does(
        read_text(text.replace(",Lin\n", f",{name}\n", 1)), snapshot, view, REPLACE
    )
    unlocked = [c.key for c in p.changes if c.action is Action.UNLOCK]
    assert unlocked == ([] if name == "Lin" else ["e2"]), (text, p.notes)
    made = [c.key for c in p.changes if c.action is Action.CREATE]
    assert made == ([] if name == "Lin" else ["e1"]), (text, p.notes)
    assert name != "Lin" or any(n.key == "e2" and "not synced yet" in n.message for n in p.notes)


@pytest.mark.parametrize("name", ["Lin", "Person 1"])
def test_an_account_for_someone_who_left_before_syncd_ran_waits_beside_a_row_showing_it(
    name: str,
) -> None:
    """e2 left before syncd first ran (no account) and reads "active" after e1, "Lin"
    written: read "Linin", the "in" of e2's "inactive" may be e1's: no account is made for
    e2, and e1's update waits with it (said). After a name read as written, e2 is a hire."""
    rows, _ = moved(["active", "inactive"], "")
    e1 = written(rows)[0]
    snapshot, view = synced(directory(DEPARTMENTS, [e1]), policy=REPLACE)
    text = "".join(f"{','.join(cells)}\n" for cells in rows).replace("inactive,e2", "active,e2")
    if name == "Lin":
        text = text.replace(",Lin\nactive", ",Linin\nactive")
    p = planned_as_the_runner_does(read_text(text), snapshot, view, REPLACE)
    done = [(c.action, c.key) for c in p.changes]
    assert done == ([] if name == "Lin" else [(Action.CREATE, "e2")]), (text, p.notes)
    said = [n.message for n in p.notes if n.key in ("e1", "e2")]
    assert name != "Lin" or any("the create waits" in m for m in said), said


def test_a_row_the_filter_leaves_out_gets_no_account_for_a_status_beside_it() -> None:
    """e1 is a contractor the row filter leaves out; e2 left. A moved line break reads
    "…,contractorin" + "active,…": e1 no longer matches the filter, e2 reads as back.
    Neither is done: e2's unlock waits (nothing tells by e1's type), and e1's account
    with it."""
    rules = SourceMapping.model_validate({"filter": {"exclude": {"type": ["contractor"]}}})
    head = "status,id,username,name,department,type\n"
    rows = "active,e1,user1,N1,rd,{}\n{},e2,user2,N2,rd,staff\n"
    held = read_text(head + rows.format("contractor", "inactive"), mapping=rules)
    snapshot, view = synced(held, locked={"e2": NOW}, policy=REPLACE)
    d = read_text(head + rows.format("contractorin", "active"), mapping=rules)
    p = planned_as_the_runner_does(d, snapshot, view, REPLACE)
    assert p.changes == (), p.notes
    assert [n.key for n in p.notes if "waits" in n.message] == ["e2", "e1"], p.notes


@pytest.mark.parametrize(
    ("department", "locked"), [("admin", ["e2"]), ("adm", []), ("adx", ["e2"])]
)
def test_a_departure_after_a_department_read_short_of_one_the_file_has_waits(
    department: str, locked: list[str]
) -> None:
    """The department last in each row and e2 read "inactive": after e1's "adm", a
    department the file does not have while it has "admin", the "in" may be e1's lost end:
    the lock waits (said). After "admin", nothing moved; after "adx", which nothing moved
    across the edge makes a department: e2 is locked."""
    rows, text = DEPARTMENT_LAST
    snapshot, view = synced(directory(DEPARTMENTS, written(rows)), policy=REPLACE)
    text = text.replace(",adm\n", f",{department}\n")
    p = planned_as_the_runner_does(read_text(text), snapshot, view, REPLACE)
    assert [c.key for c in p.changes if c.action is Action.LOCK] == locked, (text, p.notes)
    said = [n.message for n in p.notes if n.key == "e2"]
    assert locked or any("'adm' is unknown, 'admin' is known" in m for m in said), said


@pytest.mark.parametrize(
    ("decides", "broken", "unlocked"),
    [("hr", True, []), ("ad", True, ["user2"]), ("hr", False, ["user2"])],
)
def test_a_join_weighs_the_status_of_the_source_that_decides_it(
    decides: str, broken: bool, unlocked: list[str]
) -> None:
    """HR's export (status first, name last) joined with AD by username: e2 left, and a
    moved line break reads "…,Lin" + "inactive,…" as "…,Linin" + "active,…". Where HR
    decides the status, the unlock waits, as with HR alone; where AD does and reads e2
    active, HR's file has no say: e2 is unlocked. HR's e2 back after "Lin" read as written
    (its row beside weighed under its joined key): unlocked."""
    rows, text = moved(["active", "inactive"], "Linin\nactive")
    before = "".join(f"{','.join(cells)}\n" for cells in rows)
    if not broken:
        text = before.replace("inactive,e2", "active,e2")
    people = {f"ad{e.id}": e._replace(id=f"ad{e.id}") for e in written(rows)}
    rules = JoinRules({"state": (decides, *({"hr", "ad"} - {decides}))})

    def joined(hr: str, state: State, **kw: Any) -> Directory:
        ad = {k: e._replace(state=state) if k == "ade2" else e for k, e in people.items()}
        reads = [
            SourceRead("hr", read_text(hr), key="username"),
            SourceRead("ad", Directory({}, ad, status_read=True), key="username"),
        ]
        return join(reads, rules, **kw).directory

    snapshot, view = synced(joined(before, State.DEPARTED), locked={"user2": NOW}, policy=REPLACE)
    now = joined(
        text, State.ACTIVE if decides == "ad" else State.DEPARTED, synced=snapshot.employees
    )
    p = planned_as_the_runner_does(now, snapshot, view, REPLACE)
    done = [c.key for c in p.changes if c.action is Action.UNLOCK]
    assert done == unlocked, (p.changes, p.notes)


# The status row a contractor the row filter leaves out (office "Lin"): e2 left, and the
# break reads "…,Person 1in" + "active,…".
CONTRACTOR_BESIDE = (
    [
        ["status", "id", "username", "office", "department", "name"],
        ["active", "e1", "user1", "Berlin", "rd", "Person 1"],
        ["inactive", "e2", "user2", "Lin", "rd", "Person 2"],
    ],
    "status,id,username,office,department,name\n"
    "active,e1,user1,Berlin,rd,Person 1in\nactive,e2,user2,Lin,rd,Person 2\n",
)


@pytest.mark.parametrize(
    "export",
    [
        # e1's "Berlin" read "Berl", which the row filter leaves out; e2's "active" read
        # "inactive": e2's lock waits (the join weighs the row beside, which the export no
        # longer holds, by its id or username).
        status_first_moved("office", ["active", "active"], "Berlin", "Berl\ninactive"),
        # e1's name read "Person 1in" beside a row the export leaves out: e1's update waits.
        CONTRACTOR_BESIDE,
    ],
)
@pytest.mark.parametrize("key", ["id", "username"])
def test_a_join_weighs_the_row_beside_a_status_where_the_row_filter_leaves_either_out(
    export: tuple[list[list[str]], str], key: str
) -> None:
    """HR's export, its row filter on the office, joined by ``key`` with a directory that
    says no status: a row the filter leaves out, the status's or the one beside it, is
    weighed as HR alone weighs it."""
    check_moved_break(*export, STATUSES, mapping=RULES, joined=Joined(key))


@pytest.mark.parametrize("departed_synced", [True, False])
def test_a_join_by_username_makes_no_account_under_a_username_a_moved_line_break_made(
    departed_synced: bool,
) -> None:
    """HR's export (status first, username last) joined with a directory by username: e2
    left, and the break reads "…,user1" + "inactive,…" as "…,user1in" + "active,…". By
    key, "user1in" is someone new: no account is made for them, nor for e2 (back, or a
    leaver syncd never synced); e1 is kept as user1."""
    export = status_first_moved("username", ["active", "inactive"], "user1", "user1in\nactive")
    check_moved_break(*export, STATUSES, departed_synced=departed_synced, joined=Joined("username"))


@pytest.mark.parametrize(
    ("text", "aside", "key"),
    [
        # The status first: "…,Lin" + "active,…" read "…,Linac" + "tive,…".
        ("status,id,name\nactive,e1,Linac\ntive,e2,N2\n", ["employees.csv:2"], "e1"),
        ("status,id,name\nactive,e1,Li\nnactive,e2,N2\n", ["employees.csv:2"], "e1"),
        # A name of 100,000 characters: the text across the edge is weighed where a status fits.
        (
            "status,id,name\nactive,e1," + "L" * 100_000 + "ac\ntive,e2,N2\n",
            ["employees.csv:2"],
            "e1",
        ),
        ("status,name,id\nactive,N1,e1ac\ntive,N2,e2\n", ["employees.csv:2"], None),  # the id
        # The status last: "…,Active" + "e2,…" read "…,Acti" + "vee2,…".
        ("id,name,status\ne1,N1,Acti\nvee2,N2,Active\n", ["employees.csv:3"], None),
        ("name,id,status\nN1,e1,Acti\nveN2,e2,Active\n", ["employees.csv:3"], "e2"),
        # A status in neither list however the text across the edge is split: HR renamed it.
        ("status,id,name\nactive,e1,Lin\nterminated,e2,N2\n", [], None),
    ],
)
def test_a_status_left_in_neither_list_by_a_moved_line_break_sets_the_row_beside_aside(
    text: str, aside: list[str], key: str | None
) -> None:
    """A line break moved across the edge leaves the status in neither list ("tive"): its
    row is set aside, and so is the row beside, whose field at the edge the break changed
    too ("Linac"), named by its other cells (its id, when the id is not at the edge)."""
    # Each row with a username and a department in the middle, after its second column.
    lines = [line.split(",") for line in text.splitlines()]
    middle = [["username", "department"], *([f"user{n}", "rd"] for n in range(1, 3))]
    text = "".join(
        ",".join([*c[:2], *m, *c[2:]]) + "\n" for c, m in zip(lines, middle, strict=True)
    )
    read = read_text(text, STATUSES | {"Active": State.ACTIVE})
    rows = {r.where: r for r in read.rejected}
    beside = [w for w, r in rows.items() if "in neither list, but read" in r.reason]
    assert beside == aside, rows
    for where in aside:
        assert rows[where].key == key and not rows[where].may_hide_rows, rows[where]
        assert "a line break moved across the edge" in rows[where].reason
    assert len(rows) == len(aside) + 1  # the status's own row, set aside as in neither list
    assert list(rows) == sorted(rows, key=lambda where: int(where.rsplit(":", 1)[1]))


@pytest.mark.parametrize("office", ["Berlin", "Lin"])
def test_the_row_beside_a_status_moved_waits_whatever_the_status_s_own_change(
    office: str,
) -> None:
    """e2 left this week (syncd holds her active), or is a contractor the row filter leaves
    out (office "Lin"); the break reads "…,Person 1in" + "active,…": e2's status makes no
    change, but e1's name shows the "in" moved (written "Person 1"): e1's update waits,
    and says why, rather than writing "Person 1in"."""
    rows = [["status", "id", "username", "department", "office", "name"]]
    rows += [["active", "e1", "user1", "rd", "Berlin", "Person 1"]]
    rows += [["inactive", "e2", "user2", "rd", office, "Person 2"]]
    people = held_people(rows, STATUSES, "two_files", RULES, departed_synced=True)
    people = [e._replace(state=State.ACTIVE) for e in people]  # as the last run read them
    snapshot, view = synced(directory(DEPARTMENTS, people), policy=REPLACE)
    text = "".join(f"{','.join(cells)}\n" for cells in rows)
    text = text.replace("Person 1\ninactive", "Person 1in\nactive")
    p = planned_as_the_runner_does(read_text(text, mapping=RULES), snapshot, view, REPLACE)
    assert p.changes == (), p.changes
    said = [n.message for n in p.notes if n.key == "e1"]
    assert any("the update waits with the status of source id e2" in m for m in said), said


def test_a_status_read_as_another_of_its_meaning_makes_its_change_the_row_before_waits() -> None:
    """e2 left this week ("已离职"); the break reads "…,Person 1已" + "离职,…": the status is
    right either way, and e2 is locked; e1's name shows the "已" moved (written "Person
    1"): e1's update waits, and says why."""
    rows = [["status", "id", "username", "department", "name"]]
    rows += [["active", "e1", "user1", "rd", "Person 1"], ["已离职", "e2", "user2", "rd", "N2"]]
    people = [e._replace(state=State.ACTIVE) for e in written(rows)]  # as the last run read
    snapshot, view = synced(directory(DEPARTMENTS, people), policy=REPLACE)
    text = "".join(f"{','.join(cells)}\n" for cells in rows).replace("1\n已", "1已\n")
    p = planned_as_the_runner_does(read_text(text), snapshot, view, REPLACE)
    assert [(c.action, c.key) for c in p.changes] == [(Action.LOCK, "e2")], p.notes
    said = [n.message for n in p.notes if n.key == "e1"]
    assert any("the update waits with the status of source id e2" in m for m in said), said
