"""Bad and hostile CSV exports after a good one: clear errors, and nobody removed by them.

Every test first syncs a good export (40 people), then gives syncd a damaged one. The
damage is reported (a rejected row with file:line and why, or a run that fails or is
blocked with a message naming the file and the setting) and never becomes a lock, a
removal or a department deletion: the platform's people and nodes stay as they were.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pytest

from syncd.errors import EXIT_BLOCKED, EXIT_FAILED, EXIT_OK
from syncd.plan import REMOVING
from syncd.run.runner import RunResult
from tests.engine.company import Company, Platform, department, employee
from tests.support.runs import plan_of

from .support import Rig, rejected, writes

FORMULAS = ["=cmd|' /C calc'!A0", "+1", "-1", "@SUM(1)"]
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def synced(rig: Rig) -> Rig:
    """A site whose good export of 40 people (in departments D1 to D4) is synced."""
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(10, 45)]
    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    rig.emulator.reset(data=False)  # count this test's requests only
    return rig


def employees_file(rig: Rig) -> Path:
    return rig.folder / "employees.csv"


def removals(result: RunResult) -> list[str]:
    assert result.plan is not None or result.outcome == "failed"
    changes = result.plan.changes if result.plan is not None else ()
    return [c.message for c in changes if c.action in REMOVING]


def assert_nobody_removed(rig: Rig, before: Platform) -> None:
    """The platform holds the same nodes and people as before, none newly locked."""
    after = rig.platform()
    assert after.nodes == before.nodes
    assert set(after.people) == set(before.people)
    assert {u for u, p in after.people.items() if p[4]} == {
        u for u, p in before.people.items() if p[4]
    }
    changed = writes(rig.emulator)
    assert not any(k.endswith(("/lock", "/disable")) or k.startswith("DELETE") for k in changed)


def run_with_file(rig: Rig, content: bytes, **csv_settings: str) -> RunResult:
    """Sync with this employees file (and csv settings) in place of the company's."""
    from syncd.run.runner import RunRequest, run_sync

    employees_file(rig).write_bytes(content)
    if csv_settings:
        rig.source_lines = [
            "[source]",
            'kind = "csv"',
            "[source.csv]",
            f'employees = "{employees_file(rig)}"',
            f'departments = "{rig.folder / "departments.csv"}"',
            'departed_values = ["departed"]',
            *(f'{k} = "{v}"' for k, v in csv_settings.items()),
        ]
    return run_sync(rig.settings(), RunRequest())


def good_bytes(rig: Rig) -> bytes:
    rig.company.write(rig.folder)
    return employees_file(rig).read_bytes()


# ---------------------------------------------------------------- damaged files


def test_a_file_cut_short_in_the_middle_of_a_row_removes_nobody(synced: Rig) -> None:
    before = synced.platform()
    text = good_bytes(synced)
    cut = text.rindex(b"user42,")  # three rows from the end, inside a row, no final newline
    result = run_with_file(synced, text[: cut + 3])

    assert removals(result) == []
    rows = rejected(synced, result.run_id)
    assert len(rows) == 1 and str(rows[0]["where"]).startswith("employees.csv:")
    assert "cut short" in str(rows[0]["reason"]), rows
    assert any(n.kind == "leavers" for n in plan_of(result).notes)
    assert_nobody_removed(synced, before)


def test_a_file_cut_short_inside_the_last_field_of_a_row_removes_nobody(synced: Rig) -> None:
    # Every field of the last row is there, its status cut from "active" to "act": a
    # reader that only counts fields takes the file for whole, and user43 and user44,
    # whose rows are gone, for leavers.
    before = synced.platform()
    text = good_bytes(synced)
    line_end = text.index(b"\r\n", text.rindex(b"user42,"))
    assert text[line_end - 6 : line_end] == b"active"
    result = run_with_file(synced, text[: line_end - 3])

    assert removals(result) == []
    rows = rejected(synced, result.run_id)
    assert len(rows) == 1 and str(rows[0]["where"]).startswith("employees.csv:")
    assert "ends without a line end" in str(rows[0]["reason"]), rows
    assert_nobody_removed(synced, before)


def test_a_crlf_file_cut_between_the_cr_and_the_lf_of_a_row_removes_nobody(synced: Rig) -> None:
    # The row before the cut is whole but for its LF: read as a line end of its own, the
    # file passed for complete and the people in the lost rows were removed.
    synced.sync_settings.update(leaver_policy="remove")
    before = synced.platform()
    text = good_bytes(synced)
    line_end = text.index(b"\r\n", text.rindex(b"user38,"))
    result = run_with_file(synced, text[: line_end + 1])

    assert removals(result) == []
    rows = rejected(synced, result.run_id)
    assert len(rows) == 1 and str(rows[0]["where"]).startswith("employees.csv:")
    assert "ends without a line end" in str(rows[0]["reason"]), rows
    assert_nobody_removed(synced, before)


def test_a_departments_file_cut_short_deletes_no_department(synced: Rig) -> None:
    synced.company.departments += [department("D8", "Archive", "D1"), department("D9", "Empty")]
    assert synced.sync().exit_code == EXIT_OK
    synced.emulator.reset(data=False)
    before = synced.platform()
    path = synced.folder / "departments.csv"
    text = path.read_bytes()
    path.write_bytes(text[: text.index(b"D8,Arch") + 5])  # D8 cut, D9 gone
    from syncd.run.runner import RunRequest, run_sync

    result = run_sync(synced.settings(), RunRequest())

    assert removals(result) == []
    rows = rejected(synced, result.run_id)
    assert [r["where"] for r in rows] == ["departments.csv:6"], rows
    assert "cut short" in str(rows[0]["reason"])
    assert_nobody_removed(synced, before)


def test_a_file_cut_short_inside_a_quoted_field_removes_nobody(synced: Rig) -> None:
    synced.company.person("user43")["name"] = "Smith, John"  # written quoted
    assert synced.sync().exit_code == EXIT_OK
    before = synced.platform()
    text = employees_file(synced).read_bytes()
    result = run_with_file(synced, text[: text.index(b'"Smith') + 4])

    assert removals(result) == []
    (row,) = rejected(synced, result.run_id)
    assert "ends inside a quoted field" in str(row["reason"])
    assert_nobody_removed(synced, before)


def test_a_file_with_40_percent_of_its_rows_gone_is_blocked_by_the_shrink_guard(
    synced: Rig,
) -> None:
    before = synced.platform()
    lines = good_bytes(synced).splitlines(keepends=True)
    kept = lines[: 1 + len(lines[1:]) * 6 // 10]
    result = run_with_file(synced, b"".join(kept))

    assert (result.outcome, result.exit_code) == ("blocked", EXIT_BLOCKED)
    assert result.error is not None and "source looks empty or broken" in result.error
    assert writes(synced.emulator) == {}
    assert_nobody_removed(synced, before)


def test_gb18030_read_as_utf8_stops_the_run_naming_the_file(synced: Rig) -> None:
    synced.company.person("ann")["name"] = "王伟"
    before = synced.platform()
    text = good_bytes(synced).decode("utf-8").encode("gb18030")
    result = run_with_file(synced, text, encoding="utf-8")

    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    assert result.error is not None
    assert str(employees_file(synced)) in result.error and "utf-8" in result.error.lower()
    assert writes(synced.emulator) == {}
    assert_nobody_removed(synced, before)


def test_utf8_read_as_gb18030_is_not_taken_for_names(synced: Rig) -> None:
    """Mojibake would rename people on the platform: the file must be refused instead."""
    synced.company.person("ann")["name"] = "王伟"
    assert synced.sync().exit_code == EXIT_OK
    synced.emulator.reset(data=False)
    before = synced.platform()
    result = run_with_file(synced, good_bytes(synced), encoding="gb18030")

    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    assert result.error is not None and str(employees_file(synced)) in result.error
    assert "source.csv.encoding" in result.error and "UTF-8" in result.error
    assert writes(synced.emulator) == {}
    assert_nobody_removed(synced, before)
    assert synced.platform().people["ann"][0] == "王伟"


def test_a_wrong_delimiter_stops_the_run_naming_the_file_and_setting(synced: Rig) -> None:
    before = synced.platform()
    text = good_bytes(synced).replace(b",", b";")
    result = run_with_file(synced, text, delimiter=",")

    assert (result.outcome, result.exit_code) == ("failed", EXIT_FAILED)
    assert result.error is not None
    assert "employees.csv" in result.error and "source.csv.columns" in result.error
    assert_nobody_removed(synced, before)


def test_a_header_repeated_at_the_top_is_one_rejected_row(synced: Rig) -> None:
    before = synced.platform()
    text = good_bytes(synced)
    header = text.splitlines(keepends=True)[0]
    result = run_with_file(synced, header + text)

    assert result.exit_code == EXIT_OK, result.error
    (row,) = rejected(synced, result.run_id)
    assert row["where"] == "employees.csv:2" and "repeats the header" in str(row["reason"])
    assert plan_of(result).changes == ()
    assert_nobody_removed(synced, before)


def test_two_exports_joined_into_one_file_remove_nobody(synced: Rig) -> None:
    before = synced.platform()
    text = good_bytes(synced)
    result = run_with_file(synced, text + text)

    assert removals(result) == []
    reasons = {str(r["reason"]) for r in rejected(synced, result.run_id)}
    assert any("repeats the header" in r for r in reasons), reasons
    assert result.exit_code in (EXIT_OK, EXIT_BLOCKED)
    assert_nobody_removed(synced, before)


def test_a_10_mb_field_rejects_its_row_only(synced: Rig) -> None:
    synced.company.person("user15")["name"] = "x" * (10 * 1024 * 1024)
    before = synced.platform()
    result = run_with_file(synced, good_bytes(synced))

    assert result.exit_code == EXIT_OK, result.error
    (row,) = rejected(synced, result.run_id)
    assert "longer than 1,048,576 characters" in str(row["reason"])
    assert row["key"] == "E15"
    assert removals(result) == [] and plan_of(result).changes == ()
    assert_nobody_removed(synced, before)


def test_nul_bytes_reject_their_row_only(synced: Rig) -> None:
    synced.company.person("user16")["name"] = "Bad\x00Name"
    synced.company.person("user17")["job_title"] = "Lead"  # a real change lands meanwhile
    before = synced.platform()
    result = run_with_file(synced, good_bytes(synced))

    assert result.exit_code == EXIT_OK, result.error
    (row,) = rejected(synced, result.run_id)
    assert "NUL" in str(row["reason"]) and row["key"] == "E16"
    assert [c.display for c in plan_of(result).changes] == ["user17"]
    assert_nobody_removed(synced, before)


# ---------------------------------------------------------------- formulas


def test_formula_cells_reach_the_platform_as_text_and_are_neutralised_in_csv_reports(
    rig: Rig,
) -> None:
    rig.company = Company(
        departments=[department("@SUM(1)", "+1 Team"), department("D2", "-1 Unit", "@SUM(1)")],
        employees=[
            employee(
                "-1", "formula1", "@SUM(1)", name=FORMULAS[0], job_title=FORMULAS[3], mobile=""
            ),
            employee("+1", "formula2", "D2", name="+1", job_title="-1", mobile=""),
            employee("E3", "plain", "D2", name="@SUM(1)", job_title=FORMULAS[0]),
        ],
    )
    result = rig.sync()
    assert result.exit_code == EXIT_OK, result.error
    assert rig.platform().same_as(rig.company.expected())
    titles = {
        e["username"]: [p.get("job_title") for p in e["positions"]]
        for e in rig.emulator.state()["employees"]
    }
    assert titles == {"formula1": ["@SUM(1)"], "formula2": ["-1"], "plain": [FORMULAS[0]]}

    shown = rig.cli("reports", "show", str(result.run_id), "--format", "csv")
    assert shown.returncode == 0, shown.stderr
    table = list(csv.reader(io.StringIO(shown.stdout)))
    header, rows = table[0], table[1:]
    assert len(rows) == len(plan_of(result).changes)
    for row in rows:
        for cell in row:
            assert not cell.startswith(FORMULA_START), (header, row)
    keys = {row[header.index("key")] for row in rows}
    assert {"'-1", "'+1", "'@SUM(1)"} <= keys
    # The JSON report keeps the values as they are (it is data, not a spreadsheet).
    as_json = rig.cli("reports", "show", str(result.run_id), "--format", "json")
    assert json.dumps(FORMULAS[0], ensure_ascii=False) in as_json.stdout


def test_formula_looking_rows_in_the_source_round_trip_unchanged(rig: Rig) -> None:
    """Read back from the CSV file exactly: no quote prefix added on the way in."""
    rig.company.person("ann")["name"] = FORMULAS[0]
    rig.company.person("bob")["job_title"] = '=HYPERLINK("http://x.example")'
    assert rig.sync().exit_code == EXIT_OK
    people = rig.platform().people
    assert people["ann"][0] == FORMULAS[0]
    state = {e["username"]: e for e in rig.emulator.state()["employees"]}
    assert state["bob"]["positions"][0]["job_title"] == '=HYPERLINK("http://x.example")'
    assert re.fullmatch(r"=cmd\|' /C calc'!A0", state["ann"]["name"])
