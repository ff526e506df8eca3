"""``syncd reports list/show/prune`` in-process, on runs made by real syncs against the emulator."""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import re
import sqlite3
from datetime import datetime
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner, Result

from syncd import report as rpt
from syncd.cli import app, run_cli
from syncd.errors import EXIT_FAILED, SyncdError
from syncd.run import runs as reports
from tests.engine.company import World
from tests.reports.conftest import FORMULA_ERROR, MOBILE_TAKEN, SCRIPT_NAME, Runs

cli = CliRunner()


def invoke(r: Runs, *args: str) -> Result:
    result = cli.invoke(app, [*args, "--config", str(r.config)])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output
    return result


def db(r: Runs) -> sqlite3.Connection:
    return sqlite3.connect(r.world.folder / "state" / "syncd.db")


# ---------------------------------------------------------------- list


def table_rows(output: str) -> dict[int, list[str]]:
    """The list's data rows by run id: id, date, time, trigger, mode, read, outcome, exit,
    then the seven counts (the duration, between them, may hold spaces)."""
    rows = {}
    for line in output.splitlines():
        words = line.split()
        if words and words[0].isdigit():
            rows[int(words[0])] = words[:8] + words[-7:]
    return rows


def test_list_shows_one_line_per_run_newest_first(runs: Runs) -> None:
    output = invoke(runs, "reports", "list").output
    rows = table_rows(output)
    assert list(rows) == [4, 3, 1]  # real runs: the dry run (2) is kept apart
    dry = table_rows(invoke(runs, "reports", "list", "--dry-runs").output)
    assert list(dry) == [2]
    assert dry[2][4] == "dry_run" and dry[2][8:10] == ["3", "2"]  # planned, not done
    header = ["id", "started", "trigger", "mode", "read", "outcome", "exit", "took"]
    header += ["created", "updated", "locked", "removed", "deleted", "failed", "rejected"]
    assert all(name in output for name in header)
    # created, updated, locked, removed, deleted, failed, rejected
    assert rows[1][3:] == [
        "shell",
        "apply",
        "full",
        "partial",
        "1",
        "9",
        "0",
        "0",
        "0",
        "0",
        "3",
        "1",
    ]
    assert rows[3][6] == "ok" and rows[3][8:10] == ["3", "2"]
    assert rows[4][6:8] == ["blocked", "2"] and rows[4][10] == "6"  # planned locks
    # Planned and done differ in words, not only in colour (this output has none).
    said = {int(w[0]): w[-8] for w in map(str.split, output.splitlines()) if w and w[0].isdigit()}
    assert said == {4: "planned", 3: "done", 1: "done"}
    assert "\x1b[" not in output
    assert "planned and not done (dry runs and blocked runs)" in " ".join(output.split())


def test_list_last_and_failed(runs: Runs) -> None:
    assert list(table_rows(invoke(runs, "reports", "list", "--last", "2").output)) == [4, 3]
    failed = invoke(runs, "reports", "list", "--failed").output
    assert list(table_rows(failed)) == [4, 1]


def test_list_with_no_runs(tmp_path: Path, runs: Runs) -> None:
    empty = runs.config.read_text().replace(str(runs.world.folder / "state"), str(tmp_path / "s"))
    config = tmp_path / "empty.toml"
    config.write_text(empty)
    result = cli.invoke(app, ["reports", "list", "--config", str(config)])
    assert result.exit_code == 0 and "no runs recorded yet" in result.output


# ---------------------------------------------------------------- show: text


def test_show_text_groups_failures_by_error_first(runs: Runs) -> None:
    output = invoke(runs, "reports", "show", "1").output
    assert output.startswith("run 1: partial (exit 1)\n")
    assert f"  2 × {MOBILE_TAKEN}\n" in output
    assert f"  1 × {FORMULA_ERROR}\n" in output
    assert output.index(f"2 × {MOBILE_TAKEN}") < output.index(f"1 × {FORMULA_ERROR}")
    # Who failed, and the value their error names, as it was sent.
    assert f"      employee bad1 ({SCRIPT_NAME}) [E7]: mobile 13800000007\n" in output
    sections = ["failures", "changes", "notes", "guards", "rejected rows (1)"]
    positions = [output.index(f"\n{s}\n") for s in sections]
    assert positions == sorted(positions)
    assert "  create (12)\n" in output
    assert f"+ create employee bad1  — failed: {MOBILE_TAKEN}" in output
    assert "employees.csv:" in output and "'username' is empty" in output
    assert "max_removals: passed" in output


def test_show_text_lists_changes_by_action_with_field_diffs_and_notes(runs: Runs) -> None:
    output = invoke(runs, "reports", "show", "3").output
    assert output.startswith("run 3: ok (exit 0)\n")
    assert "  update (2)\n" in output and "  create (3)\n" in output
    assert "        name: Backend → Platform\n" in output
    assert "        mobile: 13800000002 → 13999999999\n" in output
    assert "conflict: E3: username changed in the source from cat to kat" in output
    assert "failures\n  none\n" in output


def test_show_dry_run_and_blocked_run(runs: Runs) -> None:
    dry = invoke(runs, "reports", "show", "2").output
    assert dry.startswith("dry run 2: ok (exit 0)\n")
    assert "result    planned: 3 created, 2 updated" in dry
    blocked = invoke(runs, "reports", "show", "4").output
    assert blocked.startswith("run 4: blocked (exit 2)\n")
    assert "blocked by guard max_removals: 6 removals planned" in blocked
    assert "max_removals: BLOCKED" in blocked
    assert "  lock (6)\n" in blocked


def test_latest_is_the_newest_run(runs: Runs) -> None:
    latest = invoke(runs, "reports", "show", "latest").output
    assert latest == invoke(runs, "reports", "show", "4").output
    assert invoke(runs, "reports", "show").output == latest  # the default


def test_failed_only(runs: Runs) -> None:
    output = invoke(runs, "reports", "show", "1", "--failed-only").output
    assert "failed changes\n  create (3)\n" in output
    assert "create employee ann" not in output
    data = json.loads(
        invoke(runs, "reports", "show", "1", "--failed-only", "--format", "json").output
    )
    assert data["failed_only"] is True
    assert {i["display"] for i in data["items"]} == {"bad1", "bad2", "formula1"}
    assert data["totals"]["failed"] == 3 and data["totals"]["by_action"] == {"create": 9}


# ---------------------------------------------------------------- show: JSON


def test_json_is_the_full_record_and_reads_back(runs: Runs) -> None:
    output = invoke(runs, "reports", "show", "1", "--format", "json").output
    data = json.loads(output)
    with runs.state() as state:
        assert rpt.RunReport.from_dict(data) == reports.load_report(state, 1)
    with db(runs) as conn:
        stored = conn.execute("SELECT COUNT(*) FROM run_items WHERE run_id = 1").fetchone()[0]
        summary = json.loads(conn.execute("SELECT summary FROM runs WHERE id = 1").fetchone()[0])
    assert len(data["items"]) == stored == 12
    assert data["run"]["outcome"] == "partial" and data["run"]["exit_code"] == 1
    assert data["run"]["duration_ms"] == summary["duration_ms"]
    assert data["source"] == summary["source"]
    assert data["guards"] == summary["guards"]
    assert data["stats"]["calls"] == summary["calls"]
    assert data["error"] is None
    assert data["failures"][0] == {"error": MOBILE_TAKEN, "count": 2, "seqs": [9, 10]}
    bad1 = next(i for i in data["items"] if i["display"] == "bad1")
    assert bad1["after"]["name"] == SCRIPT_NAME and bad1["before"] is None
    # Refused as a mobile another account holds, bad1 is sent again without it (known
    # problems): the emulator's rule refuses that too, so the item fails after 2 attempts.
    assert (bad1["outcome"], bad1["error"], bad1["attempts"]) == ("failed", MOBILE_TAKEN, 2)
    assert data["rejected"][0]["where"].startswith("employees.csv:")
    assert [h["run_id"] for h in data["history"]] == [1]
    counts = {(c["kind"], c["action"], c["outcome"]): c["n"] for c in data["counts"]}
    assert counts == {
        ("department", "create", "ok"): 4,
        ("employee", "create", "ok"): 5,
        ("employee", "create", "failed"): 3,
    }


def test_each_run_tells_where_its_time_went_step_by_step(runs: Runs) -> None:
    with db(runs) as conn:
        stored = dict(conn.execute("SELECT id, summary FROM runs").fetchall())
    summaries = {run_id: json.loads(text) for run_id, text in stored.items()}
    planned_only = ["recover", "read", "plan", "journal"]
    sent = [*planned_only, "send", "read back"]
    # 1 partial and 3 ok were sent; 2 is a dry run, 4 blocked by a guard: neither sent.
    expected = {1: sent, 2: planned_only, 3: sent, 4: planned_only}
    assert {n: list(s["steps_ms"]) for n, s in summaries.items()} == expected
    for summary in summaries.values():
        steps = summary["steps_ms"].values()
        assert all(isinstance(ms, int) and ms >= 0 for ms in steps)
        assert sum(steps) <= summary["duration_ms"] + 1  # both whole ms, each rounded down
    data = json.loads(invoke(runs, "reports", "show", "3", "--format", "json").output)
    assert data["stats"]["steps_ms"] == summaries[3]["steps_ms"]

    # As a person reads it: the steps that took a twentieth of a second or more.
    summaries[3]["steps_ms"] = {"recover": 49, "read": 1234, "plan": 50, "send": 61_000}
    with db(runs) as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = 3", (json.dumps(summaries[3]),))
    text = invoke(runs, "reports", "show", "3").output
    assert "\n  steps     read 1.2 s, plan 0.1 s, send 1 min 1 s\n" in text
    # Every step slow: the line is wrapped within 80 columns, aligned under its first part.
    steps = ["recover", "read", "plan", "journal", "send", "read back"]
    summaries[3]["steps_ms"] = dict.fromkeys(steps, 61_000)
    with db(runs) as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = 3", (json.dumps(summaries[3]),))
    lines = invoke(runs, "reports", "show", "3").output.splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("  steps     "))
    shown = [
        lines[first],
        *itertools.takewhile(lambda x: x.startswith(" " * 12), lines[first + 1 :]),
    ]
    assert len(shown) > 1 and all(len(line) <= 80 for line in shown)
    assert " ".join(line.strip() for line in shown) == "steps     " + ", ".join(
        f"{step} 1 min 1 s" for step in steps
    )  # broken between steps only
    # A run recorded before steps were timed has no such line.
    del summaries[1]["steps_ms"]
    with db(runs) as conn:
        conn.execute("UPDATE runs SET summary = ? WHERE id = 1", (json.dumps(summaries[1]),))
    assert "\n  steps " not in invoke(runs, "reports", "show", "1").output


def test_the_chart_keeps_the_real_runs_among_many_dry_runs(runs: Runs) -> None:
    columns = "trigger, mode, read, source, started_at, finished_at, outcome, exit_code, summary"
    with db(runs) as conn:  # a --check every five minutes: 40 dry runs after the real ones
        for n in range(1, 41):
            conn.execute(
                f"INSERT INTO runs ({columns}) SELECT trigger, mode, read, source, "  # noqa: S608
                "started_at + ?, finished_at + ?, outcome, exit_code, summary FROM runs "
                "WHERE id = 2",
                (n * 300_000, n * 300_000),
            )

    data = json.loads(invoke(runs, "reports", "show", "latest", "--output", "json").output)

    history = data["history"]
    assert [h["run_id"] for h in history if h["mode"] == "apply"] == [1, 3, 4]
    assert len([h for h in history if h["mode"] == "dry_run"]) == reports.HISTORY
    assert history[-1]["run_id"] == data["run"]["id"] == 44  # the report's own run, last


# ---------------------------------------------------------------- show: CSV


def test_csv_one_row_per_item_with_formulas_neutralised(runs: Runs) -> None:
    output = invoke(runs, "reports", "show", "1", "--format", "csv").output
    rows = list(csv.reader(io.StringIO(output)))
    assert tuple(rows[0]) == rpt.CSV_COLUMNS
    assert len(rows) == 1 + 12
    by_display = {r[5]: dict(zip(rpt.CSV_COLUMNS, r, strict=True)) for r in rows[1:]}
    formula = by_display["formula1"]
    assert formula["error"] == "'" + FORMULA_ERROR  # neutralised against formula injection
    assert formula["outcome"] == "failed" and formula["run_id"] == "1"
    started = datetime.fromisoformat(formula["run_started"])
    assert started.tzinfo is not None  # a time with its zone
    bad1 = by_display["bad1"]
    assert json.loads(bad1["after"])["name"] == SCRIPT_NAME
    assert bad1["before"] == "" and bad1["error"] == MOBILE_TAKEN
    assert not any(cell.startswith(rpt.FORMULA_STARTS) for row in rows for cell in row)


def test_output_to_a_file(runs: Runs, tmp_path: Path) -> None:
    target = tmp_path / "run1.csv"
    result = invoke(runs, "reports", "show", "1", "--output", "csv", "--file", str(target))
    assert "csv report written to" in result.output and str(target) in result.output
    with target.open(newline="", encoding="utf-8") as handle:
        assert len(list(csv.reader(handle))) == 13
    page = tmp_path / "run1.html"
    invoke(runs, "reports", "show", "1", "-o", "html", "--file", str(page))
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------- errors


def test_unknown_run_is_a_clear_error_with_exit_3(runs: Runs) -> None:
    result = cli.invoke(app, ["reports", "show", "999", "--config", str(runs.config)])
    assert isinstance(result.exception, SyncdError)
    assert result.exception.exit_code == EXIT_FAILED
    assert "no run 999 is recorded" in str(result.exception)
    bad = cli.invoke(app, ["reports", "show", "yesterday", "--config", str(runs.config)])
    assert isinstance(bad.exception, SyncdError) and "not a run" in str(bad.exception)
    fmt = cli.invoke(app, ["reports", "show", "1", "--format", "pdf", "-c", str(runs.config)])
    assert isinstance(fmt.exception, SyncdError) and "unknown output format" in str(fmt.exception)
    path = cli.invoke(app, ["reports", "show", "1", "-o", "/tmp/x.html", "-c", str(runs.config)])
    assert isinstance(path.exception, SyncdError) and "--file PATH" in str(path.exception)


def test_unknown_run_exits_3_with_one_line_of_error(
    runs: Runs, capsys: pytest.CaptureFixture[str]
) -> None:
    code = run_cli(["reports", "show", "999", "--config", str(runs.config)])
    err = capsys.readouterr().err
    assert code == EXIT_FAILED
    assert "error: no run 999 is recorded: see `syncd reports list`" in err
    assert "Traceback" not in err


def test_an_unwritable_output_is_a_clear_error(runs: Runs, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "report.html"
    result = cli.invoke(
        app, ["reports", "show", "1", "--file", str(target), "--config", str(runs.config)]
    )
    assert isinstance(result.exception, SyncdError)
    assert "cannot write the report" in str(result.exception)


# ---------------------------------------------------------------- prune


def age(r: Runs, days: dict[int, float]) -> None:
    """Make runs look as old as given, in days, by moving their start back."""
    with db(r) as conn:
        for run_id, d in days.items():
            conn.execute(
                "UPDATE runs SET started_at = started_at - ? WHERE id = ?",
                (int(d * reports.DAY_MS), run_id),
            )


def counts(r: Runs) -> tuple[list[int], int, int]:
    with db(r) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM runs ORDER BY id")]
        items = conn.execute("SELECT COUNT(*) FROM run_items").fetchone()[0]
        rejected = conn.execute("SELECT COUNT(*) FROM rejected_rows").fetchone()[0]
    return ids, items, rejected


def test_prune_deletes_old_runs_with_their_items_and_rejected_rows(runs: Runs) -> None:
    age(runs, {1: 40, 2: 35, 3: 10, 4: 50})
    with db(runs) as conn:
        kept_items = conn.execute("SELECT COUNT(*) FROM run_items WHERE run_id >= 3").fetchone()
        kept_rejected = conn.execute(
            "SELECT COUNT(*) FROM rejected_rows WHERE run_id >= 3"
        ).fetchone()
    output = invoke(runs, "reports", "prune", "--keep-days", "30").output
    assert "pruned 2 runs" in output
    # Run 4 is older than 30 days but the latest: kept.
    assert counts(runs) == ([3, 4], kept_items[0], kept_rejected[0])
    again = invoke(runs, "reports", "prune", "--keep-days", "30").output
    assert "pruned 0 runs" in again


def test_prune_never_deletes_the_latest_a_running_or_an_unrecovered_run(runs: Runs) -> None:
    age(runs, {1: 40, 2: 40, 3: 40, 4: 40})
    with db(runs) as conn:
        conn.execute("UPDATE runs SET outcome = 'running' WHERE id = 2")
        conn.execute("UPDATE run_items SET outcome = 'sent' WHERE run_id = 3 AND seq = 0")
    pruned = reports.prune(runs.state(), keep_days=0)
    assert (pruned.runs, counts(runs)[0]) == (1, [2, 3, 4])


def test_prune_refuses_a_negative_age(runs: Runs) -> None:
    with pytest.raises(SyncdError, match="0 or more"):
        reports.prune(runs.state(), keep_days=-1)


@pytest.mark.parametrize(
    ("table", "command"),
    [
        ("runs", ["reports", "list"]),
        ("runs", ["reports", "show", "latest"]),
        ("rejected_rows", ["reports", "show", "1"]),
        ("run_items", ["reports", "show", "1", "--format", "html"]),
        ("cursors", ["status"]),
        ("runs", ["status"]),
    ],
)
def test_a_state_database_that_cannot_be_read_is_exit_3_naming_it(
    world: World, capsys: pytest.CaptureFixture[str], table: str, command: list[str]
) -> None:
    world.sync()
    database = world.folder / "state" / "syncd.db"
    with contextlib.closing(sqlite3.connect(database)) as conn:
        conn.execute(f"DROP TABLE {table}")  # damaged, or written by something else

    code = run_cli([*command, "--config", str(world.folder / "syncd.toml")])

    err = capsys.readouterr().err
    assert code == EXIT_FAILED
    assert f"error: state database {database} is damaged (no such table: {table})" in err
    assert "restore the latest backup" in err
    assert "internal error" not in err


# ---------------------------------------------------------------- JSON for scripts


def is_zoned(text: str) -> bool:
    return datetime.fromisoformat(text).tzinfo is not None


def test_list_as_json(runs: Runs) -> None:
    data = json.loads(invoke(runs, "reports", "list", "--output", "json").output)
    assert data["schema"] == 1
    assert [r["id"] for r in data["runs"]] == [4, 3, 1]
    first = data["runs"][-1]
    assert (first["outcome"], first["exit_code"], first["mode"]) == ("partial", 1, "apply")
    assert first["counts"] == {
        "created": 9,
        "updated": 0,
        "locked": 0,
        "removed": 0,
        "deleted": 0,
        "adopted": 0,
    }
    assert (first["failed"], first["rejected"], first["applied"]) == (3, 1, True)
    assert is_zoned(first["started"]) and is_zoned(first["finished"])
    assert first["duration_ms"] == first["finished_at"] - first["started_at"]
    assert data["runs"][0]["applied"] is False  # blocked: its counts are what was planned
    failed = json.loads(invoke(runs, "reports", "list", "--failed", "-o", "json").output)
    assert [r["id"] for r in failed["runs"]] == [4, 1]


def test_show_as_json_has_a_schema_zoned_times_and_department_paths(runs: Runs) -> None:
    data = json.loads(invoke(runs, "reports", "show", "3", "--output", "json").output)
    assert data["schema"] == 1
    assert is_zoned(data["run"]["started"]) and is_zoned(data["run"]["finished"])
    assert all(is_zoned(point["started"]) for point in data["history"])
    # The departments the items name, by their source id: for readers of the positions.
    assert data["departments"]["D3"] == "Acme/Head Office/R&D/Platform"
    assert data["departments"]["D2"] == "Acme/Head Office/R&D"


def test_list_keeps_whole_columns_at_80_columns(runs: Runs) -> None:
    lines = reports.list_runs(runs.state())
    screen = io.StringIO()
    Console(file=screen, width=80, color_system=None).print(rpt.run_table(lines, 80))
    shown = screen.getvalue().splitlines()
    assert all(len(line) <= 80 for line in shown)
    assert shown[0].split()[:4] == ["id", "started", "mode", "outcome"]
    rows = [line.split() for line in shown if line[:3].strip().isdigit()]
    assert [int(r[0]) for r in rows] == [4, 3, 1]  # every id, whole
    assert all(re.fullmatch(r"[+-]\d{4}", r[2][-5:]) for r in rows)  # the time's zone
    caption = " ".join(screen.getvalue().split())  # the caption may wrap anywhere
    assert "too narrow for:" in caption and "--output json" in caption


# ---------------------------------------------------------------- one person


def test_person_lists_each_run_that_changed_or_failed_them(runs: Runs) -> None:
    bob = invoke(runs, "reports", "person", "bob").output
    lines = bob.splitlines()
    assert lines[0] == "bob: 2 changes recorded (source id E2)"
    assert "run 1: partial (exit 1): create bob — ok" in lines[1]
    assert "run 3: ok (exit 0): update bob — ok" in lines[3]
    assert "      mobile: 13800000002 → 13999999999" in lines
    assert "dry run 2" not in bob  # planned only: not shown unless asked
    planned = invoke(runs, "reports", "person", "bob", "--planned").output
    assert "dry run 2: ok (exit 0): update bob (planned, not sent) — planned" in planned
    bad = invoke(runs, "reports", "person", "bad1").output
    assert f"create bad1 — failed: {MOBILE_TAKEN}" in bad
    nobody = invoke(runs, "reports", "person", "nobody").output
    assert "no recorded run changed, locked, removed or failed this person" in nobody


def test_person_as_json_and_csv_with_times(runs: Runs, tmp_path: Path) -> None:
    data = json.loads(invoke(runs, "reports", "person", "bob", "-o", "json").output)
    assert data["schema"] == 1 and data["username"] == "bob" and data["keys"] == ["E2"]
    assert [(e["run"]["id"], e["item"]["action"]) for e in data["events"]] == [
        (1, "create"),
        (3, "update"),
    ]
    assert all(is_zoned(e["run"]["started"]) for e in data["events"])
    target = tmp_path / "bob.csv"
    invoke(runs, "reports", "person", "bob", "-o", "csv", "--file", str(target))
    with target.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["run_id"], r["action"], r["outcome"]) for r in rows] == [
        ("1", "create", "ok"),
        ("3", "update", "ok"),
    ]
    assert all(is_zoned(r["run_started"]) for r in rows)


def test_a_move_reads_as_department_paths(world: World) -> None:
    world.sync()
    world.company.person("dan")["department"] = "D3"
    world.company.person("dan")["job_title"] = "Engineer"
    world.sync()
    config = str(world.folder / "syncd.toml")
    shown = cli.invoke(app, ["reports", "show", "2", "--config", config]).output
    moved = "positions: Acme/Head Office/Sales → Acme/Head Office/R&D/Backend (Engineer)"
    assert f"        {moved}\n" in shown
    person = cli.invoke(app, ["reports", "person", "dan", "--config", config]).output
    assert moved in person
