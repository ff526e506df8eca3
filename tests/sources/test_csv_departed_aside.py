"""A CSV row set aside for a field that does not say who the person is still says they left.

A row that gives an id, a username and a departed status, and is set aside for something
else (no name, a birthday, sort order, senior flag or end date that cannot be read, a
department nobody knows), is marked departed (``Directory.departed_aside``) when no other
row gives its id or username, so the planner locks the person it names
(syncd.plan.departed_aside). Never for a status nobody named (which stays loud: the row
names the value), a row another row copies, or a row whose last field a misfit below it
may have cut.

Generated: each row's status and what is wrong with it, against real files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from tempfile import TemporaryDirectory

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.config.source import CsvEmployeeColumns
from syncd.model import Directory
from tests.sources.csv_support import read
from tests.support.examples import examples

HEADER = "id,username,name,department,birthday,sort_order,senior,end_date,status\n"
GOOD = {"birthday": "1990-01-05", "sort_order": "3", "senior": "no", "end_date": ""}
# A field that does not say who the person is, and a value of it that cannot be read.
FAULTS = {
    "no name": ("name", ""),
    "birthday": ("birthday", "1990-02-30"),
    "sort order": ("sort_order", "1.5"),
    "senior": ("senior", "maybe"),
    "end date": ("end_date", "2026-11-31"),
    "department": ("department", "D77"),
}
COPIES = ["none", "copied alike", "copied unlike", "id copied", "username copied"]
STATUSES = ["active", "departed", "on a boat"]  # the last in neither list
# An id and username as given: plainly, or in characters that cannot be told apart on screen.
SPELLINGS = {
    "plain": ("E{n}", "u{n}"),
    "invisible in the id": ("E\u200b{n}", "u{n}"),
    "control in the username": ("E{n}", "u\x07{n}"),
    "mixed scripts": ("E{n}", "\u0430u{n}"),  # a Cyrillic a
}


@dataclass(frozen=True)
class Row:
    status: str
    # A key of FAULTS, "none", "copied alike" (the row again, another department: a line per
    # position), "copied unlike" (the same, with another status), "id copied" (another
    # person under its id, with the same status) or "username copied"
    fault: str
    spelling: str = "plain"  # a key of SPELLINGS
    number: int = 0  # the row's person's: "E14" (one's id may start another's: "E1")

    def keys(self) -> tuple[str, str]:
        key, username = SPELLINGS[self.spelling]
        return key.format(n=self.number), username.format(n=self.number)


def cells_of(key: str, username: str, name: str, status: str, fault: str) -> dict[str, str]:
    """A row's cells by column, good but for ``fault``'s field (a key of FAULTS, if one)."""
    cells = {"id": key, "username": username, "name": name, "department": "D2"}
    cells |= GOOD | {"status": status}
    if fault in FAULTS:
        column, value = FAULTS[fault]
        cells[column] = value
    return cells


def line(cells: dict[str, str]) -> str:
    return ",".join(cells[c] for c in HEADER.strip().split(","))


def lines(rows: list[Row]) -> list[str]:
    out = []
    for row in rows:
        n, (key, username) = row.number, row.keys()
        cells = cells_of(key, username, f"Person {n}", row.status, row.fault)
        if row.fault == "login recycled":
            cells["end_date"] = FAULTS["end date"][1]
        out.append(line(cells))
        if row.fault.startswith("copied"):  # alike, or with another status
            again = cells | {"department": "D1"}
            if row.fault == "copied unlike":
                again["status"] = "active" if row.status == "departed" else "departed"
            out.append(line(again))
        if row.fault == "id copied":
            out.append(f"{key},other{n},Other {n},D2,,,,,{row.status}")  # departed too, maybe
        elif row.fault == "username copied":
            out.append(f"X{n},{username},Namesake {n},D2,,,,,{row.status}")
        elif row.fault == "login recycled":  # a new hire given their username
            out.append(f"X{n},{username},Newcomer {n},D2,,,,,active")
    return out


def recycled(rows: list[Row], cut: tuple[str | None, ...]) -> tuple[dict[str, str], set[str]]:
    """The leavers whose login a new hire's row gives, their own row set aside for a date
    that is not one: theirs to lose, as syncd holds that very pair for them; and the ids
    of those a short record may have cut (their row or the new hire's): either way."""
    leavers = {
        row.number: row.keys()
        for row in rows
        if row.fault == "login recycled" and row.status == "departed" and row.spelling == "plain"
    }
    near = {key for n, (key, _) in leavers.items() if {key, f"X{n}"} & set(cut)}
    return dict(leavers.values()), near


@settings(max_examples=examples(200))
@given(
    rows=st.lists(
        st.builds(
            Row,
            status=st.sampled_from(STATUSES),
            fault=st.sampled_from([*COPIES, "login recycled", *FAULTS]),
            spelling=st.sampled_from(["plain", "plain", *SPELLINGS]),
            number=st.integers(1, 40),
        ),
        min_size=1,
        max_size=8,
        unique_by=lambda row: row.number,
    ),
    cut_after=st.none() | st.integers(0, 7),
    split=st.none() | st.tuples(st.integers(0, 7), st.integers(1, 80)),
)
def test_a_row_set_aside_for_another_field_still_says_who_left(
    rows: list[Row], cut_after: int | None, split: tuple[int, int] | None
) -> None:
    text = lines(rows)
    before, near = damage(text, cut_after, split)
    directory = read_lines(text)

    # A status in neither list stays loud on a row set aside for another field too.
    loud = {r.key for r in directory.rejected if r.status == "on a boat"}
    for row in rows:
        key = row.keys()[0]
        if row.status == "on a boat" and row.fault in FAULTS and row.spelling == "plain":
            assert key in loud or key in (before, *near), (key, directory.rejected)
    expected = departures(rows, before)
    leavers, unsure = recycled(rows, (before, *near))
    unsure.update(k or "" for k in near)
    found = directory.departed_aside()
    assert drop(found, unsure) == drop(expected, unsure)
    assert found.items() <= (expected | leavers).items()
    assert not set(found) & set(directory.employees)
    # As the runner asks: syncd holds each person's id and username as the rows give them.
    holds = dict(row.keys() for row in rows)
    found = directory.as_held(holds.get, joined=False).departed_aside()
    assert drop(found, unsure) == drop(expected | leavers, unsure)


def read_lines(text: list[str]) -> Directory:
    """The lines under HEADER, read as the CSV source reads its employees file."""
    with TemporaryDirectory() as folder:
        return read(
            Path(folder),
            HEADER + "\n".join(text) + "\n",
            active_values=["active"],
            departed_values=["departed"],
            columns=CsvEmployeeColumns(end_date="end_date"),
        )


def damage(
    text: list[str], cut_after: int | None, split: tuple[int, int] | None
) -> tuple[str | None, tuple[str | None, ...]]:
    """The lines damaged in place; the id of the row a short record may have cut, and the
    ids of the rows near the damage that are nobody's alone or may be another's end."""
    near: list[str | None] = []
    if split is not None and split[0] < len(text):
        # A stray line break in a line (in its id: "E1" then "4,…" of "E14,…"): its row is
        # nobody's alone, and its head names nobody either; the row before a short head may
        # be cut short, the row after a short tail the tail's end.
        at, line = split[0], text[split[0]]
        cut = min(split[1], len(line) - 1)
        near += [t.split(",")[0] for t in text[max(at - 1, 0) : at + 2]]
        text[at : at + 1] = [line[:cut], line[cut:]]
    before = None
    if cut_after is not None and cut_after < len(text):
        # A short record after a row: its end, maybe (a line break in its last field). The
        # row before may be cut short; the row after may be the short record's own end.
        before = text[cut_after].split(",")[0]
        near.append(text[cut_after + 1].split(",")[0] if cut_after + 1 < len(text) else None)
        text.insert(cut_after + 1, "ed")
    return before, tuple(near)


@settings(max_examples=examples(100))
@given(
    key=st.text("E0123456789", min_size=1, max_size=5),
    more=st.text("0123456789", min_size=1, max_size=3),
    fault=st.sampled_from(sorted(FAULTS)),
    between=st.integers(1, 3),
    cut_first=st.booleans(),
)
def test_a_row_cut_in_its_id_holds_no_other_departure(
    key: str, more: str, fault: str, between: int, cut_first: bool
) -> None:
    """A stray line break in a row's id ("E1" then "4,…" of "E14,…"): the short row before
    it names nobody, so the departure of the person whose id it reads as ("E1", their row
    set aside for another field, rows away) is not held up by it."""

    def row(ident: str, username: str, status: str, fault: str = "none") -> str:
        return line(cells_of(ident, username, f"Person {username}", status, fault))

    cut = row(key + more, "cut", "active")
    rows = [
        f"{cut[: len(key)]}\n{cut[len(key) :]}",
        *(row(f"F{n}", f"f{n}", "active") for n in range(between)),
        row(key, "left", "departed", fault),
    ]
    if not cut_first:
        rows.reverse()
    directory = read_lines(rows)
    assert directory.departed_aside() == {key: "left"}, directory.rejected


def departures(rows: list[Row], cut: str | None) -> dict[str, str]:
    """The departures rows set aside for another field say, alone or copied alike, plainly
    (the row a short record may have cut, ``cut``, aside)."""
    return dict(
        row.keys()
        for row in rows
        if row.status == "departed"
        and row.fault in (*FAULTS, "copied alike")
        and row.spelling == "plain"
        and row.keys()[0] != cut
    )


def drop(found: dict[str, str], unsure: set[str]) -> dict[str, str]:
    return {k: v for k, v in found.items() if k not in unsure}
