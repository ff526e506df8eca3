"""The pure renderers, on hand-made reports: any text in any field renders safely."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from syncd import report as rpt
from syncd.logs import redact, register_secret
from tests.reports.pages import external_references, parse

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
    return parse(page).tags


# Values each renderer shows (indexes into the FIELDS strings).
IN_TEXT = [0, 1, 6, 7, 8, 9, 11, 12, 13, 14, 15, 17, 18, 19]
IN_HTML = [0, 1, 2, 3, 5, 6, 7, 8, 10, 11, 12, 13, 14, 17, 18, 19]


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_any_text_renders_safely_as_html(values: list[str]) -> None:
    page = rpt.render_html(build(values))
    assert structure(page) == structure(rpt.render_html(build(benign(values))))
    assert external_references(page) == []
    text = parse(page).all_text
    for n in IN_HTML:
        assert shown(values[n]) in text, n


@settings(max_examples=150, deadline=None)
@given(st.lists(texts, min_size=FIELDS, max_size=FIELDS))
def test_any_text_renders_safely_as_text(values: list[str]) -> None:
    output = rpt.render_text(build(values))
    # No value can add a line, move the cursor or reorder what is around it.
    assert not any(rpt.UNSAFE.search(line) for line in output.split("\n"))
    assert output.count("\n") == rpt.render_text(build(benign(values))).count("\n")
    for n in IN_TEXT:
        assert shown(values[n]) in output, n


def expected_cell(value: object) -> str:
    text = redact("" if value is None else str(value))
    return "'" + text if text[:1] in ("=", "+", "-", "@", "\t", "\r") else text


@settings(max_examples=150, deadline=None)
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
        stored = [report.run.id, item.seq, item.kind, item.key, item.display, item.action]
        stored += [item.outcome, item.status, item.error, item.message, before, after]
        assert row == [expected_cell(v) for v in stored]
        assert not any(cell.startswith(rpt.FORMULA_STARTS) for cell in row)


@settings(max_examples=100, deadline=None)
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
    output = rpt.render_text(build(values))
    assert output.startswith("run 5: partial (exit 1)\n")
    assert "\nfailures\n  2 × mobile already used by another employee\n" in output
    assert "  result    1 created, 2 failed\n" in output
    assert "  update (1)\n" in output and "        name: v → v" not in output  # no change


def test_notification_is_short_and_points_to_the_report() -> None:
    values = ["a" * 500] * FIELDS
    message = rpt.render_notification(build(values))
    lines = message.splitlines()
    assert lines[0].startswith("syncd run 5: partial (exit 1) on ")
    assert all(len(line) <= rpt.NOTIFY_LINE for line in lines)
    assert lines[-1] == "report: syncd reports show 5"
    assert sum("×" in line for line in lines) == 1


def test_the_renderers_do_not_import_io_libraries() -> None:
    code = (
        "import sys, syncd.report\n"
        "loaded = {'httpx', 'sqlalchemy', 'sqlmodel', 'ldap3'} & set(sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_chart_scales_bars_to_the_busiest_run() -> None:
    runs = [rpt.RunInfo(n, "schedule", "apply", "full", "", n, n + 1, "ok", 0) for n in (1, 2)]
    points = [
        rpt.history_point(runs[0], [rpt.Count("employee", "create", "ok", 10)]),
        rpt.history_point(runs[1], [rpt.Count("employee", "update", "ok", 5)]),
    ]
    svg = parse(rpt.chart_svg(points, current=2))
    heights = [
        float(dict(a)["height"] or 0)
        for t, a in svg.tags
        if t == "rect" and ("class", "frame") not in a
    ]
    assert heights == [rpt.PLOT_H, rpt.PLOT_H / 2]
    assert "run 2" in svg.all_text and "5 update" in svg.all_text
