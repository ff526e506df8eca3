"""The pure renderers, on hand-made reports: any text in any field renders safely."""

from __future__ import annotations

import ast
import csv
import dataclasses
import io
import itertools
import json
import math
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from syncd import report as rpt
from syncd.logs import redact, register_secret
from syncd.report import chart
from syncd.report.text import render_text
from tests.reports.pages import allowed_scripts, external_references, parse
from tests.support.examples import examples
from tests.support.waiting import scaled

HOSTILE = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(1)>",
    "</td></tr></table><h1>",
    "<!-- x",
    "]]><![CDATA[",
    "&amp; &lt;",
    "=1+2",
    "+SUM(A1:A9)",
    "-2",
    "@cmd",
    "\tTAB",
    "\rCR",
    "line\nbreak",
    "\x1b[2J\x1b[31mred",
    "\u202eevil\u202c",
    "a\u2028b",
    "\x00nul",
    "access_token=abc&x=1",
    "王建国",
    "",
]
FIELDS = 20
texts = st.one_of(
    st.text(max_size=30),
    st.sampled_from(HOSTILE),
    st.tuples(st.sampled_from(HOSTILE), st.text(max_size=8)).map("".join),
)


def build(v: Sequence[str]) -> rpt.RunReport:
    """A report with every text field taken from ``v`` (FIELDS strings)."""
    run = rpt.RunInfo(5, "schedule", "apply", "full", v[0], 1_000, 2_500, "partial", 1, v[1])
    items = (
        rpt.Item(0, "employee", v[2], v[3], "create", v[4], None, {"name": v[5], "mobile": v[6]}),
        rpt.Item(
            1,
            "employee",
            v[7],
            v[8],
            "update",
            v[9],
            {"name": v[10]},
            {"name": v[11]},
            outcome="failed",
            status=60001,
            error=v[12],
            attempts=2,
        ),
        rpt.Item(2, "department", v[13], v[14], "delete", v[15], outcome="failed", error=v[12]),
    )
    counts = (
        rpt.Count("employee", "create", "ok", 1),
        rpt.Count("employee", "update", "failed", 1),
        rpt.Count("department", "delete", "failed", 1),
    )
    run_before = rpt.RunInfo(4, "shell", "dry_run", "full", "", 0, 10, "ok", 0)
    return rpt.RunReport(
        run=run,
        source={"kind": "csv", "where": v[16], "departments": 1, "employees": 2, "rejected": 1},
        guards=(rpt.Guard("max_removals", True, v[17]),),
        notes=(rpt.Note("conflict", v[18], v[19]), rpt.Note("drift", v[2], v[9])),
        counts=counts,
        items=items,
        rejected=(rpt.Rejected(0, "employee", v[19], v[18], v[17]),),
        stats={"calls": {"POST /x": 2}, "retries": 1, "recovered": 0},
        error=v[6],
        history=(rpt.history_point(run_before, counts), rpt.history_point(run, counts)),
    )


def benign(values: Sequence[str]) -> list[str]:
    """Plain tokens in place of the values, keeping their order, equality and emptiness."""
    tokens = {v: f"v{n:03d}" for n, v in enumerate(sorted(set(values)))}
    return [tokens[v] if v else "" for v in values]


def shown(value: str) -> str:
    return rpt.printable(redact(value))


def structure(page: str) -> list[tuple[str, list[tuple[str, str | None]]]]:
    """Tags and attributes; a data-* attribute's value is a value shown, so left out."""
    return [
        (tag, [(k, None if k.startswith("data-") else v) for k, v in attrs])
        for tag, attrs in parse(page).tags
    ]


# Values each renderer shows (indexes into the FIELDS strings).
IN_TEXT = [0, 1, 6, 7, 8, 9, 11, 12, 13, 14, 15, 17, 18, 19]
IN_HTML = [0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 17, 18, 19]


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_any_text_renders_safely_as_html(values: list[str]) -> None:
    page = rpt.render_html(build(values))
    assert structure(page) == structure(rpt.render_html(build(benign(values))))
    assert external_references(page) == []
    text = parse(page).all_text
    for n in IN_HTML:
        assert shown(values[n]) in text, n


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_any_text_renders_safely_as_text(values: list[str]) -> None:
    output = render_text(build(values))
    # No value can add a line, move the cursor or reorder what is around it.
    assert not any(rpt.UNSAFE.search(line) for line in output.split("\n"))
    assert output.count("\n") == render_text(build(benign(values))).count("\n")
    for n in IN_TEXT:
        assert shown(values[n]) in output, n


def expected_cell(value: object) -> str:
    text = redact("" if value is None else str(value))
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_any_text_round_trips_through_csv_with_formulas_neutralised(values: list[str]) -> None:
    report = build(values)
    rows = list(csv.reader(io.StringIO(rpt.render_csv(report), newline="")))
    assert rows[0] == list(rpt.CSV_COLUMNS)
    for row, item in zip(rows[1:], report.items, strict=True):
        before = (
            None
            if item.before is None
            else json.dumps(item.before, ensure_ascii=False, sort_keys=True)
        )
        after = (
            None
            if item.after is None
            else json.dumps(item.after, ensure_ascii=False, sort_keys=True)
        )
        stored = [report.run.id, "1970-01-01T00:00:01.000+00:00", item.seq, item.kind, item.key]
        stored += [item.display, item.action]
        stored += [item.outcome, item.status, item.error, item.message, before, after]
        assert row == [expected_cell(v) for v in stored]
        assert not any(cell.startswith(rpt.FORMULA_STARTS) for cell in row)


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_json_reads_back_as_the_same_report(values: list[str]) -> None:
    report = build(values)
    data = json.loads(rpt.render_json(report))
    assert rpt.RunReport.from_dict(data) == report.redacted()
    error = redact(values[12]) or "unknown error"
    assert data["failures"] == [{"error": error, "count": 2, "seqs": [1, 2]}]


def test_formula_cells_are_neutralised() -> None:
    for cell in ("=1+1", "+1", "-1", "@SUM(A1)", "\tx", "\rx"):
        assert rpt.neutralise(cell) == "'" + cell
    for cell in ("", "1", "a=b", " =1", "'=1"):
        assert rpt.neutralise(cell) == cell


def test_no_renderer_lets_a_secret_through() -> None:
    secret = "Sup3r-s3cret-for-report-tests"
    register_secret(secret)
    values = [f"x {secret} y"] * FIELDS
    report = build(values)
    for fmt in rpt.RENDERERS:
        assert secret not in rpt.render(report, fmt), fmt
        assert "x *** y" in rpt.render(report, fmt), fmt
    assert secret not in rpt.render_notification(report)
    token = build(["GET /x?access_token=abcdef&page=1"] * FIELDS)
    for fmt in rpt.RENDERERS:
        assert "abcdef" not in rpt.render(token, fmt), fmt


def test_text_report_reads_as_documented() -> None:
    values = ["v"] * FIELDS
    values[12] = "mobile already used by another employee"
    output = render_text(build(values))
    assert output.startswith("run 5: partial (exit 1)\n")
    assert "\nfailures\n  2 × mobile already used by another employee\n" in output
    assert "  result    1 created, 2 failed\n" in output
    assert "  update (1)\n" in output and "        name: v → v" not in output  # no change


def test_the_steps_a_run_took_read_the_same_in_text_and_html() -> None:
    report = dataclasses.replace(
        build(["v"] * FIELDS),
        stats={"steps_ms": {"recover": 3, "read": 650, "plan": 700, "send": 3_040}},
    )
    shown = "read 0.7 s, plan 0.7 s, send 3.0 s"  # under a twentieth of a second: left out
    assert f"\n  steps     {shown}\n" in render_text(report)
    assert f"<dt>steps</dt><dd>{shown}</dd>" in rpt.render(report, "html")


def test_notification_is_short_and_points_to_the_report() -> None:
    values = ["a" * 500] * FIELDS
    message = rpt.render_notification(build(values))
    lines = message.splitlines()
    assert lines[0].startswith("syncd run 5: partial (exit 1) on ")
    assert all(len(line) <= rpt.NOTIFY_LINE for line in lines)
    assert lines[-1] == "report: syncd reports show 5"
    assert sum("×" in line for line in lines) == 1


# Pure logic: the plan, the reports and saved plans reach neither I/O libraries nor the
# store (issue 27: the plan is a value; nothing in it queries the database later).
PURE = ("syncd.plan", "syncd.report", "syncd.run.saved_plan")
NOT_PURE = (
    "httpx",
    "sqlalchemy",
    "sqlmodel",
    "sqlite3",
    "ldap3",
    "syncd.snapshot",
    "syncd.platform",
)


def test_the_renderers_do_not_import_io_libraries() -> None:
    code = (
        f"import sys, {', '.join(PURE)}\n"
        f"no = {NOT_PURE!r}\n"
        "loaded = [m for m in sys.modules if any(m == n or m.startswith(n + '.') for n in no)]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=scaled(120))


def test_no_import_of_the_pure_modules_names_the_store_even_inside_a_function() -> None:
    root = Path(rpt.__file__).resolve().parent.parent
    files = [
        *(root / "plan").glob("*.py"),
        *(root / "report").glob("*.py"),
        root / "run" / "saved_plan.py",
    ]
    assert len(files) > 20
    found = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names, line = [a.name for a in node.names], node.lineno
            elif isinstance(node, ast.ImportFrom) and node.module is not None:
                names = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
                line = node.lineno
            else:
                continue
            for name in names:
                if any(name == n or name.startswith(n + ".") for n in NOT_PURE):
                    found.append(f"{path.name}:{line} imports {name}")
    assert found == []


def point(run_id: int, at_ms: int, items: int, *, mode: str = "apply", outcome: str = "ok") -> Any:
    run = rpt.RunInfo(run_id, "schedule", mode, "full", "", at_ms, at_ms + 1, outcome, 0)
    return rpt.history_point(run, [rpt.Count("employee", "create", "ok", items)])


def test_the_chart_shows_a_small_run_next_to_a_first_sync_on_a_time_axis() -> None:
    day = 86_400_000
    start = 1_795_400_000_000
    points = [
        point(1, start, 100_000),
        point(2, start + day, 50, outcome="partial"),
        point(3, start + day + 3_600_000, 120, mode="dry_run"),
        point(4, start + 3 * day, 5, outcome="blocked"),
    ]
    drawn = chart.history_chart(points, current=4)
    bars = {b.run_id: b for b in drawn.bars}
    height = {n: sum(s.height for s in b.segments) for n, b in bars.items()}
    # Log scale: 50 items are over a third of 100,000's height, 5 items under a fifth.
    assert height[1] == pytest.approx(chart.PLOT_H * math.log10(100_001) / math.log10(100_001))
    assert height[1] * 0.3 < height[2] < height[1] * 0.4
    assert 0 < height[4] < height[1] * 0.2
    # A time axis: two days between runs 2 and 4 are twice one day between runs 1 and 2.
    assert bars[4].x - bars[2].x == pytest.approx(2 * (bars[2].x - bars[1].x), rel=0.05)
    assert [t.label for t in drawn.y_ticks][-1] == "100k"
    assert drawn.x_ticks[0].label == time.strftime("%Y-%m-%d", time.localtime(start / 1000))
    # Outcomes by marker; the dry run apart, as a dot, not a bar.
    assert [bars[n].marker for n in (1, 2, 4)] == ["circle", "triangle", "square"]
    assert bars[3].dry and bars[3].segments == () and bars[3].radius > 0
    assert (drawn.runs, drawn.dry_runs) == (3, 1)


def test_runs_at_the_same_moment_do_not_hide_each_other() -> None:
    points = [point(n, 1_795_400_000_000, 10) for n in range(1, 31)]
    xs = [b.x for b in chart.history_chart(points).bars]
    gaps = [b - a for a, b in itertools.pairwise(xs)]
    assert min(gaps) >= chart.history_chart(points).bars[0].width
    assert xs[-1] <= chart.WIDTH


def test_the_chart_in_the_page_marks_every_outcome() -> None:
    run = rpt.RunInfo(4, "schedule", "apply", "full", "", 1, 2, "blocked", 2)
    points = (
        point(1, 0, 10),
        point(2, 1000, 10, outcome="failed"),
        point(3, 2000, 3),
        rpt.history_point(run, ()),
    )
    page = parse(rpt.render_html(rpt.RunReport(run, history=points)))
    marks = [
        dict(a)["class"] for t, a in page.tags if (dict(a).get("class") or "").startswith("m-")
    ]
    assert {"m-ok", "m-failed", "m-blocked"} <= set(marks)
    assert "run 2, " in page.all_text and ", failed: 10 create" in page.all_text


def many(n: int) -> rpt.RunReport:
    run = rpt.RunInfo(9, "shell", "apply", "full", "", 1, 2, "partial", 1)
    positions = [{"department": "D1", "job_title": "Engineer", "primary": True, "chief": False}]
    items = tuple(
        rpt.Item(
            seq,
            "employee",
            f"E{seq}",
            f"user{seq}",
            "create",
            f"create employee user{seq}",
            None,
            {"name": f"Person {seq}", "positions": positions},
            outcome="failed" if seq % 10 == 0 else "ok",
            error="mobile taken" if seq % 10 == 0 else None,
        )
        for seq in range(n)
    )
    return rpt.RunReport(run, items=items, departments={"D1": "Acme/R&D"})


def test_the_page_shows_the_first_rows_and_holds_every_change_for_the_search() -> None:
    page = rpt.render_html(many(1000))
    parsed = parse(page)
    rows = [a for t, a in parsed.tags if t == "tr" and ("class", "failed-row") in a]
    assert len(rows) == 20  # 1 in 10 of the first 200 rows in the page (20 shown, 180 folded)
    assert "… and 800 more" in parsed.all_text
    assert "Acme/R&D (Engineer, primary)" not in parsed.all_text  # one position: no "primary"
    assert "positions Acme/R&D (Engineer)" in parsed.all_text
    _, (data,) = allowed_scripts(page)
    held = json.loads(data)
    (group,) = held["groups"]
    assert len(group["rows"]) == 4 * 1000  # every change, four values each
    assert held["words"][held["details"][group["rows"][2]][0][2][0]] == "Acme/R&D"
    assert "search holds the first" not in parsed.all_text


def test_past_its_budget_the_page_says_how_many_changes_it_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from syncd.report import html

    monkeypatch.setattr(html, "PAGE_BUDGET", 150_000)
    page = rpt.render_html(many(5000))
    _, (data,) = allowed_scripts(page)
    held = len(json.loads(data)["groups"][0]["rows"]) // 4
    assert 500 < held < 5000
    assert len(page.encode()) <= 150_000
    text = " ".join(parse(page).all_text.split())
    assert f"The search holds the first {held:,} of 5,000 changes" in text
    assert "syncd reports show 9 --output csv lists them all" in text


def test_no_count_is_stacked_on_the_log_axis_so_a_few_failures_show_beside_many_creates() -> None:
    run = rpt.RunInfo(1, "schedule", "apply", "full", "", 1, 2, "partial", 1)
    counts = [
        rpt.Count("employee", "create", "ok", 20_167),
        rpt.Count("employee", "create", "failed", 20),
    ]
    bar = chart.history_chart([rpt.history_point(run, counts)]).bars[0]
    height = {s.series: s.height for s in bar.segments}
    # Each as tall as its own count: log(21) / log(20,168) of the plot, not 20/20,187 of it.
    assert height["failed"] == pytest.approx(
        chart.PLOT_H * math.log10(21) / math.log10(100_001), abs=0.1
    )
    assert height["failed"] > 0.25 * height["create"]
    created, failed = (next(s for s in bar.segments if s.series == n) for n in ("create", "failed"))
    assert created.x + created.width <= failed.x  # side by side, within the run's width
    assert failed.x + failed.width <= bar.x + bar.width / 2 + 0.1


def test_planned_counts_are_outlined_and_dry_runs_use_their_outcome_s_mark() -> None:
    points = [
        point(1, 0, 10),
        point(2, 60_000, 10, outcome="blocked"),
        point(3, 120_000, 10, mode="dry_run", outcome="failed"),
    ]
    blocked = rpt.history_point(
        rpt.RunInfo(2, "schedule", "apply", "full", "", 60_000, 60_001, "blocked", 2),
        [rpt.Count("employee", "lock", "planned", 10)],
    )
    bars = {b.run_id: b for b in chart.history_chart([points[0], blocked, points[2]]).bars}
    assert not bars[1].planned and bars[2].planned  # a blocked run did none of it
    assert bars[3].dry and bars[3].marker == "cross"  # the legend's mark for failed


def test_the_time_axis_never_repeats_a_label() -> None:
    start = 1_795_400_000_000
    points = [point(n, start + n * 1000, 10) for n in range(1, 25)]  # 24 runs in one minute
    labels = [t.label for t in chart.history_chart(points).x_ticks]
    assert len(labels) == len(set(labels)), labels
