"""Whatever a CSV file holds, the source reads it, accounting for every row, or raises
SourceError: never another exception."""

from __future__ import annotations

import csv
import io
import tempfile
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.model import Directory, Kind
from syncd.sources.csv import read_csv
from tests.support.examples import examples

REQUIRED = ["id", "username", "name", "department"]
OPTIONAL = ["email", "birthday", "sort_order", "senior", "status", "job_title", "positions"]
DELIMITERS = [",", ";", "\t", "|"]
ENCODINGS = ["utf-8", "utf-8-sig", "gb18030", "utf-16"]

# Names without delimiters or quotes: sniffing must find the delimiter the file was written with.
header_names = st.text(
    alphabet=st.sampled_from("abcxyz_ 工号姓名部门"), min_size=1, max_size=8
).filter(lambda name: name.strip() != "")
# Cells made of what breaks CSV readers: quotes, every delimiter, line ends, NUL, BOM, spaces.
cell_texts = st.one_of(
    st.text(alphabet=st.sampled_from('ab张,;|\t"\r\n \x00\ufeff=1-/'), max_size=12),
    st.text(max_size=8),
    st.sampled_from(
        ["", " ", "E1", "E2", "1990-01-05", "19900105", "是", "离职", "A/B", "=cmd|' /C calc'!A0"]
    ),
)


PLAUSIBLE = {
    "id": st.sampled_from(["E1", "E2", "E3", "E4", "E5", " E6 "]),
    "username": st.sampled_from(["alice", "bob", "carol", "Dave", "erin", "frank"]),
    "name": st.sampled_from(["张三", "Alice", "O'Brien, Pat", 'The "Boss"', "=1+1"]),
    "department": st.sampled_from(["", "总部", "总部/研发中心", " A / B ", "A//B/", "/"]),
    "email": st.sampled_from(["", "a@example.com"]),
    "birthday": st.sampled_from(["", "1990-01-05", "1990/1/5", "19900105", "1990-02-30"]),
    "sort_order": st.sampled_from(["", "1", "-5", "x"]),
    "senior": st.sampled_from(["", "1", "是", "no", "maybe"]),
    "status": st.sampled_from(["", "在职", "离职", " Inactive "]),
    "job_title": st.sampled_from(["", "Engineer", "Line one\nline two", "a;b|c\td"]),
    "positions": st.sampled_from(["", "A;B", "总部/研发中心; A "]),
}


@st.composite
def csv_files(draw: st.DrawFn) -> tuple[list[str], list[list[str]]]:
    """A header (the required columns, some optional ones, some unknown ones) and rows."""
    extra = draw(st.lists(header_names, max_size=3))
    header = REQUIRED + draw(st.lists(st.sampled_from(OPTIONAL), unique=True, max_size=4)) + extra
    header = draw(st.permutations(header))
    width = len(header)
    # Mostly cells a real export could hold, so that rows are kept as well as rejected.
    row = st.tuples(*(st.one_of(PLAUSIBLE.get(name, cell_texts), cell_texts) for name in header))
    good_row = row.map(list)
    odd_row = st.lists(cell_texts, min_size=0, max_size=width + 2)
    rows = draw(st.lists(st.one_of(good_row, good_row, odd_row), max_size=12))
    return header, rows


def read_text(data: bytes, **options: object) -> Directory:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "employees.csv"
        path.write_bytes(data)
        source = CsvSource.model_validate({"layout": "paths", "employees": path, **options})
        return read_csv(source)


def is_data_row(row: list[str]) -> bool:
    """A row the reader must account for: one with text, or with a line break inside a cell
    (a multi-line record may hide another person's row: rejected, never taken as blank)."""
    return any(cell.strip() or "\n" in cell or "\r" in cell for cell in row)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    file=csv_files(),
    delimiter=st.sampled_from(DELIMITERS),
    encoding=st.sampled_from(ENCODINGS),
    quote_all=st.booleans(),
    explicit=st.booleans(),
)
# A row whose only cell is a quoted line break: rejected (it may hide a row), not blank.
@example(
    file=(REQUIRED, [["\r"]]), delimiter=",", encoding="utf-8", quote_all=False, explicit=False
)
# ... and so is one whose only text is a line break in a column that names nobody.
@example(
    file=(REQUIRED, [["", "", "\r"]]),
    delimiter=",",
    encoding="utf-8",
    quote_all=False,
    explicit=False,
)
def test_every_row_is_kept_or_rejected_with_a_reason(
    file: tuple[list[str], list[list[str]]],
    delimiter: str,
    encoding: str,
    quote_all: bool,
    explicit: bool,
) -> None:
    header, rows = file
    out = io.StringIO(newline="")
    writer = csv.writer(
        out, delimiter=delimiter, quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL
    )
    writer.writerow(header)
    writer.writerows(rows)
    options: dict[str, object] = {}
    if "positions" in header:
        options["columns"] = {"positions": "positions"}
    if explicit:
        options |= {"encoding": encoding, "delimiter": delimiter}
    try:
        directory = read_text(out.getvalue().encode(encoding), **options)
    except SourceError as exc:
        event(f"failed: {str(exc).partition(': ')[2][:40]}")
        return
    rejected = [row for row in directory.rejected if row.kind is Kind.EMPLOYEE]
    event("read, some rows kept" if directory.employees else "read, none kept")
    event("read, some rows rejected" if rejected else "read, none rejected")
    assert len(directory.employees) + len(rejected) == sum(map(is_data_row, rows))
    assert all(row.reason and row.where.startswith("employees.csv:") for row in directory.rejected)


csv_bytes = st.text(alphabet=st.sampled_from('E1ab张,;"\n\r \x00\ufeff'), max_size=200).map(
    str.encode
)


@settings(max_examples=examples(300), deadline=None)
@given(
    body=st.one_of(st.binary(max_size=300), csv_bytes),
    header=st.sampled_from([b"", b"id,username,name,department\n"]),
)
def test_any_bytes_read_or_fail_with_source_error(body: bytes, header: bytes) -> None:
    try:
        directory = read_text(header + body)
    except SourceError as exc:
        event(f"failed: {str(exc).partition(': ')[2][:30]}")
        return
    event("read")
    lines = (header + body).count(b"\n") + (header + body).count(b"\r") + 1
    for row in directory.rejected:
        name, _, line = row.where.partition(":")
        assert name == "employees.csv" and 1 <= int(line) <= lines
        assert row.reason


fields = st.one_of(
    st.sampled_from(["E1", "E2", "ab", "b a"]),
    st.text(alphabet=st.sampled_from('Eab1"\n\r '), max_size=6),
)
lines = st.lists(fields, min_size=3, max_size=5)


@settings(max_examples=examples(300), deadline=None)
@given(
    rows=st.lists(lines, max_size=10), delimiter=st.sampled_from([",", ";"]), sniff=st.booleans()
)
def test_broken_quoting_reads_or_fails_with_source_error(
    rows: list[list[str]], delimiter: str, sniff: bool
) -> None:
    # Rows joined by hand, not by a CSV writer: quotes land anywhere, opened and never closed.
    text = delimiter.join(REQUIRED) + "\n" + "".join(delimiter.join(row) + "\n" for row in rows)
    try:
        directory = read_text(text.encode(), delimiter="auto" if sniff else delimiter)
    except SourceError as exc:
        event(f"failed: {str(exc).partition(': ')[2][:30]}")
        return
    event("read, some rows kept" if directory.employees else "read, none kept")
    event("read, some rows rejected" if directory.rejected else "read, none rejected")
    physical_lines = len(io.StringIO(text, newline="").readlines())
    rejected = [row for row in directory.rejected if row.kind is Kind.EMPLOYEE]
    assert len(directory.employees) + len(rejected) <= physical_lines - 1
    starts = [int(row.where.partition(":")[2]) for row in directory.rejected]
    assert all(2 <= line <= physical_lines for line in starts)


# A copy of a person's row with one thing wrong with it, or none.
DEFECTS: dict[str, dict[str, str]] = {
    "none": {},
    "unknown status": {"status": "已离职"},
    "empty status": {"status": ""},
    "bad birthday": {"birthday": "1990-02-30"},
    "bad sort order": {"sort_order": "x"},
    "no name": {"name": ""},
    "departed": {"status": "离职"},
}
DUPLICATE_HEADER = ["id", "username", "name", "department", "status", "birthday", "sort_order"]


@st.composite
def rows_with_copies(draw: st.DrawFn) -> list[list[str]]:
    """Rows of a few people, some of them twice or more (the same id or the same username),
    each copy with a defect of its own or none."""
    rows: list[list[str]] = []
    for _ in range(draw(st.integers(1, 8))):
        n = draw(st.integers(1, 4))
        row = {
            "id": f"E{n}",
            "username": draw(st.sampled_from([f"user{n}", f"User{n}", "shared"])),
            "name": f"Person {n}",
            "department": "总部",
            "status": "在职",
            "birthday": "",
            "sort_order": "",
        }
        row.update(DEFECTS[draw(st.sampled_from(sorted(DEFECTS)))])
        rows.append([row[c] for c in DUPLICATE_HEADER])
    return rows


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=rows_with_copies())
@example(  # a departed person's row rejected, its copy saying active (issue 32)
    rows=[
        ["E1", "user1", "Person 1", "总部", "已离职", "", ""],
        ["E1", "user1", "Person 1", "总部", "在职", "", ""],
    ]
)
def test_every_copy_of_a_duplicate_is_set_aside_whatever_else_is_wrong(
    rows: list[list[str]],
) -> None:
    """No id or username that a rejected row names is kept for another row: a copy rejected
    for its own reason (an unknown status, a bad date) leaves its other copies nothing."""
    out = io.StringIO(newline="")
    writer = csv.writer(out)
    writer.writerow(DUPLICATE_HEADER)
    writer.writerows(rows)
    directory = read_text(out.getvalue().encode(), active_values=["在职"], departed_values=["离职"])
    rejected = [row for row in directory.rejected if row.kind is Kind.EMPLOYEE]
    assert len(directory.employees) + len(rejected) == len(rows)
    ids = Counter(row[0] for row in rows)
    names = Counter(row[1].casefold() for row in rows)
    for e in directory.employees.values():
        assert ids[e.id] == 1 and names[e.username.casefold()] == 1, (e, rejected)
    event(f"{len(directory.employees)} kept, {len(rejected)} set aside")
