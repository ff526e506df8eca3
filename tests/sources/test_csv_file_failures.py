"""The CSV source against real files: whole-file failures, a file missing, empty, without
a header or unreadable, fail the read with the path."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd.config import CsvSource
from syncd.errors import SourceError
from syncd.sources.csv import files as csv_files
from syncd.sources.csv import read_csv
from tests.sources.csv_support import HEADER, fails, read, settings_for, write
from tests.support.examples import examples


def test_missing_employees_file(tmp_path: Path) -> None:
    settings = CsvSource(layout="paths", employees=tmp_path / "nope.csv")
    assert fails(settings) == f"{tmp_path / 'nope.csv'}: file not found (source.csv.employees)"


def test_missing_departments_file(tmp_path: Path) -> None:
    settings = CsvSource(
        employees=write(tmp_path / "e.csv", HEADER), departments=tmp_path / "d.csv"
    )
    assert fails(settings) == f"{tmp_path / 'd.csv'}: file not found (source.csv.departments)"


def test_a_directory_is_not_a_file(tmp_path: Path) -> None:
    assert fails(CsvSource(layout="paths", employees=tmp_path)) == (
        f"{tmp_path}: is a directory, not a CSV file (source.csv.employees)"
    )


def test_an_empty_file(tmp_path: Path) -> None:
    message = fails(CsvSource(layout="paths", employees=write(tmp_path / "e.csv", "")))
    assert (
        message == f"{tmp_path / 'e.csv'}: the file is empty (0 bytes); it needs at least a header"
    )


@pytest.mark.parametrize("text", ["\n\n  \r\n", "\ufeff", "\ufeff\n"])
def test_a_file_of_blank_lines_has_no_header(tmp_path: Path, text: str) -> None:
    message = fails(CsvSource(layout="paths", employees=write(tmp_path / "e.csv", text)))
    assert message == f"{tmp_path / 'e.csv'}: has no header: the file holds only blank lines"


def test_a_header_without_rows_reads_as_nobody(tmp_path: Path) -> None:
    # Not an error here: the guards decide whether an empty source may be applied.
    directory = read(tmp_path, HEADER)
    assert directory.employees == {} and directory.complete and directory.rejected == ()


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_an_unreadable_file(tmp_path: Path) -> None:
    path = write(tmp_path / "e.csv", HEADER)
    path.chmod(0)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: cannot be read (permission denied)"
    )


def test_permission_denied_on_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "e.csv", HEADER)

    def denied(*args: Any, **kwargs: Any) -> Any:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(csv_files, "open", denied, raising=False)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: cannot be read (permission denied)"
    )


def test_a_read_error_midway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path / "e.csv", HEADER + "E1,alice,Alice,A\n")

    def failing(*args: Any, **kwargs: Any) -> Any:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(csv_files, "open", failing, raising=False)
    assert (
        fails(CsvSource(layout="paths", employees=path))
        == f"{path}: reading failed: Input/output error"
    )


# What another program may do to an export while syncd reads it: the file's text after.
WRITES = {
    "a row appended": lambda text: text + "E9999,late,Late Comer,D1\n",
    "a row begun": lambda text: text + "E9999,la",
    "cut at a line's end": lambda text: text[: text.index("\n", len(text) // 2) + 1],
    "cut inside a line": lambda text: text[: len(text) // 2],
    "written anew, longer": lambda text: text + text[len(HEADER) :].replace("user", "new"),
    "written anew, shorter": lambda text: text[: len(text) // 3].rsplit("\n", 1)[0] + "\n",
}


@settings(max_examples=examples(24), deadline=None)
@given(rows=st.integers(1001, 2500), write_how=st.sampled_from(sorted(WRITES)))
def test_a_file_written_to_while_it_is_read_is_not_used(
    tmp_path_factory: pytest.TempPathFactory, rows: int, write_how: str
) -> None:
    """Another program writes to the employees file in place while syncd reads it (when
    the read tells its first count, after 1,000 rows): whatever was read of it may be cut
    short at a line's end, where nothing in the text shows it (everyone past the cut would
    read as a leaver). The read fails, naming the file; nothing of it is used."""
    text = HEADER + "".join(f"E{n},user{n},User {n},D1\n" for n in range(rows))
    source = settings_for(tmp_path_factory.mktemp("export"), text)
    path = source.employees
    written: list[int] = []

    def count(_: int) -> None:
        if not written:
            written.append(path.write_bytes(WRITES[write_how](text).encode()))

    with pytest.raises(SourceError) as caught:
        read_csv(source, count=count)
    assert written
    assert str(caught.value).startswith(f"{path}: the file changed while it was read ("), (
        caught.value
    )


def test_a_file_replaced_by_a_rename_while_it_is_read_is_read_whole(tmp_path: Path) -> None:
    """The export written under another name and renamed over the old one while syncd reads
    it (as the error above advises): the read goes on with the old file, whole."""
    text = HEADER + "".join(f"E{n},user{n},User {n},D1\n" for n in range(1500))
    source = settings_for(tmp_path, text)
    path = source.employees
    renamed: list[str] = []

    def count(_: int) -> None:
        if not renamed:
            new = write(tmp_path / "employees.csv.new", HEADER + "E1,user1,User 1,D1\n")
            renamed.append(str(new.replace(path)))

    directory = read_csv(source, count=count)
    assert renamed and len(directory.employees) == 1500
