"""The HTML report: self-contained, escaped, and rendered by a real browser (headless Chromium)."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from syncd import report as rpt
from syncd.cli import app
from tests.reports.browser import FLAGS, browser_page, chromium_path
from tests.reports.conftest import MOBILE_TAKEN, SCRIPT_NAME, Runs
from tests.reports.pages import allowed_scripts, external_references, parse
from tests.support.waiting import scaled


def test_the_reference_checker_finds_what_it_must() -> None:
    bad = (
        '<link rel="stylesheet" href="https://cdn.example/x.css"><img src="//x.example/a.png">'
        '<script src="http://x.example/a.js"></script><style>@import "x.css"; '
        'b { background: url(http://x.example/b.png) }</style><a href="http://x">x</a>'
        '<div onclick="x()"></div>'
    )
    assert len(external_references(bad)) == 9  # 2 tags, 4 links, @import, url(), onclick
    assert (
        external_references('<a href="#failures">x</a><svg xmlns="http://www.w3.org/2000/svg">')
        == []
    )


def write_html(r: Runs, run: str, target: Path) -> str:
    result = CliRunner().invoke(
        app,
        ["reports", "show", run, "--output", "html", "--file", str(target), "-c", str(r.config)],
    )
    assert result.exit_code == 0, result.output
    return target.read_text(encoding="utf-8")


def test_the_page_is_self_contained_and_escapes_every_value(runs: Runs, tmp_path: Path) -> None:
    for run in ("1", "2", "3", "4"):
        page = write_html(runs, run, tmp_path / f"run{run}.html")
        assert external_references(page) == [], run
        code, data = allowed_scripts(page)  # the search, allowed by its hash, and its data
        assert (len(code), len(data)) == (1, 1), run
        parsed = parse(page)
        assert "@media print" in "".join(parsed.styles)
    page = (tmp_path / "run1.html").read_text(encoding="utf-8")
    assert SCRIPT_NAME in parse(page).all_text  # the name is text...
    assert "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; Mallory" in page  # ...escaped


def test_the_page_has_every_section_failures_first(runs: Runs, tmp_path: Path) -> None:
    page = write_html(runs, "1", tmp_path / "run1.html")
    text = parse(page).all_text
    headings = [re.sub("<[^>]+>", "", h) for h in re.findall("<h2>(.*?)</h2>", page)]
    assert headings == [
        "Failures",
        "Changes (12)",
        "Rejected rows (1)",
        "Notes: conflicts, drift, skipped",
        "Guards",
        "Last 1 runs: changes and failures",
    ]
    assert f"2 ×{MOBILE_TAKEN}" in text  # count and error text, in adjacent cells


def test_the_chart_has_a_bar_per_run_with_accessible_titles(runs: Runs, tmp_path: Path) -> None:
    page = write_html(runs, "latest", tmp_path / "run4.html")
    parsed = parse(page)
    svg = next(attrs for tag, attrs in parsed.tags if tag == "svg")
    assert ("role", "img") in svg and ("aria-labelledby", "chart-title chart-desc") in svg
    text = parsed.all_text
    assert "Changes per action and failures, last 4 runs" in text
    assert "run 1, " in text and ", partial: 9 create, 3 failed" in text
    assert ", blocked: 6 lock (planned, not applied)" in text
    bars = [
        attrs for tag, attrs in parsed.tags if tag == "rect" and ("class", "frame") not in attrs
    ]
    classes = [(dict(a)["class"] or "").split() for a in bars]
    assert {c[0] for c in classes} >= {"a-create", "a-failed", "a-update", "a-lock"}
    # The blocked run's locks were planned, not done: drawn in outline, and only they.
    assert {c[0] for c in classes if "planned" in c} == {"a-lock"}
    assert "outline: planned, not done (blocked)" in text


# ---------------------------------------------------------------- in a real browser

# What a person sees, read in the page: sideways scrolling, failures, and every outcome cell
# of the tables shown (not folded) inside the window's width.
LOOK = """(() => {
  const width = window.innerWidth;
  const failed = document.querySelector('#failures td.failed');
  const shown = el => el.getClientRects().length > 0;
  const outcomes = [...document.querySelectorAll('table.changes td.out')].filter(shown);
  return {
    width, scroll: document.documentElement.scrollWidth,
    failures: document.querySelector('#failures').innerText,
    failedColour: failed ? getComputedStyle(failed).color : null,
    failedRight: failed ? failed.getBoundingClientRect().right : null,
    errorWidth: document.querySelector('#failures td.error').getBoundingClientRect().width,
    outcomes: outcomes.map(td => [td.innerText, td.getBoundingClientRect().left,
                                  td.getBoundingClientRect().right]),
    scripts: document.scripts.length,
    searchShown: shown(document.querySelector('#search')),
  };
})()"""
FOUND = """(() => ({
  count: document.querySelector('#found-count').textContent,
  rows: [...document.querySelectorAll('#results tbody tr')].map(r => r.innerText),
  scripts: document.scripts.length,
}))()"""


def needs_chromium() -> None:
    if chromium_path() is None:
        pytest.skip("chromium is not installed (Debian package chromium; make system-packages)")


@pytest.mark.parametrize("width", [1280, 390])
def test_chromium_shows_failures_and_every_outcome_at_desktop_and_phone_width(
    runs: Runs, tmp_path: Path, width: int
) -> None:
    needs_chromium()
    page = tmp_path / "run1.html"
    write_html(runs, "1", page)
    with browser_page(tmp_path / "profile", width=width, height=900) as tab:
        tab.open(page.as_uri())
        shot = tab.screenshot(tmp_path / f"report-{width}.png", full_page=True)
        seen = tab.evaluate(LOOK)
    assert png_size(shot)[0] == width and shot.stat().st_size > 20_000  # not a blank page
    assert seen["width"] == width and seen["scroll"] <= width  # nothing runs off the side
    assert re.search(rf"2 ×\s+{re.escape(MOBILE_TAKEN)}", seen["failures"])
    assert seen["errorWidth"] > min(width / 2, 300)  # the reason is read across, not in a sliver
    assert seen["failedColour"] == "rgb(198, 40, 40)" and seen["failedRight"] <= width
    # Every outcome of the rows shown is inside the screen, failures included.
    assert len(seen["outcomes"]) == 12  # 4 departments, 8 people: all shown at first
    for text, left, right in seen["outcomes"]:
        assert text and 0 <= left < right <= width, (text, left, right)
    assert sum(text.startswith("failed") for text, _, _ in seen["outcomes"]) == 3
    assert seen["searchShown"] and seen["scripts"] == 2  # the data block and the search


def test_chromium_search_finds_changes_and_shows_values_as_text(runs: Runs, tmp_path: Path) -> None:
    needs_chromium()
    page = tmp_path / "run1.html"
    write_html(runs, "1", page)
    with browser_page(tmp_path / "profile", width=390, height=900) as tab:
        tab.open(page.as_uri())
        tab.type_into("#q", "bad")
        bad = tab.evaluate(FOUND)
        tab.evaluate("document.querySelector('#q').value = ''")
        tab.type_into("#q", "<script>alert")
        hostile = tab.evaluate(FOUND)
        tab.evaluate("document.querySelector('#q').value = ''")
        tab.type_into("#q", "no such person anywhere")
        nobody = tab.evaluate(FOUND)
        tab.evaluate("document.querySelector('button.list-all').click()")
        listed = tab.evaluate(FOUND)
        tab.screenshot(tmp_path / "search-390.png")
    assert bad["count"] == "2 changes found"
    assert all(MOBILE_TAKEN in row and "create employee" in row for row in bad["rows"])
    assert {row.split("\n")[1].split()[0] for row in bad["rows"]} == {"bad1", "bad2"}
    assert hostile["count"] == "1 changes found" and SCRIPT_NAME in hostile["rows"][0]
    assert hostile["scripts"] == 2  # the name was shown, not run
    assert nobody["count"] == "0 changes found" and nobody["rows"] == []
    # "List all" under the most frequent failure: its people, failed only.
    assert listed["count"] == "2 changes found"


def test_chromium_with_scripts_off_still_shows_failures_and_changes(
    runs: Runs, tmp_path: Path
) -> None:
    needs_chromium()
    page = tmp_path / "run1.html"
    write_html(runs, "1", page)
    with browser_page(tmp_path / "profile", width=1280, height=900, scripts=False) as tab:
        tab.open(page.as_uri())
        seen = tab.evaluate(LOOK)
        note = tab.evaluate("document.querySelector('#changes').innerText")
    assert MOBILE_TAKEN in seen["failures"]
    assert len(seen["outcomes"]) == 12
    assert not seen["searchShown"]  # no search box that would do nothing
    assert "syncd reports show 1 --output csv" in note


def test_chromium_prints_the_report(runs: Runs, tmp_path: Path) -> None:
    needs_chromium()
    page = tmp_path / "run4.html"
    write_html(runs, "latest", page)
    pdf = tmp_path / "report.pdf"
    profile = tmp_path / "chromium-profile"
    command = [str(chromium_path()), *FLAGS, f"--user-data-dir={profile}", "--no-pdf-header-footer"]
    command += [f"--print-to-pdf={pdf}", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=scaled(180), check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_an_html_report_built_from_values_is_as_safe(tmp_path: Path) -> None:
    """Without the database: the same renderer on a hand-made report with hostile values."""
    run = rpt.RunInfo(7, "shell", "apply", "full", '"><img src=x onerror=alert(1)>', 1, 2, "ok", 0)
    item = rpt.Item(
        0, "employee", "k", "</td><script>", "update", "m", {"name": "a"}, {"name": "b"}
    )
    report = rpt.RunReport(run, items=(item,), history=(rpt.history_point(run, ()),))
    page = rpt.render_html(report)
    assert external_references(page) == []
    assert '"><img src=x onerror=alert(1)>' in parse(page).all_text
    assert "</td><script>" in parse(page).all_text


# Every word of the page's prose cells on one line (none broken mid-letter), the chart's
# labels as tall as the page's small print, and the newest run's bar on the screen.
READING = """(() => {
  const split = [];
  const prose = '#failures td.error, #guards td, #notes li, dl.summary dd';
  for (const cell of document.querySelectorAll(prose)) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const m of node.textContent.matchAll(/[A-Za-z]{4,}/g)) {
        const range = document.createRange();
        range.setStart(node, m.index);
        range.setEnd(node, m.index + m[0].length);
        const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (lines.size > 1) split.push(m[0]);
      }
    }
  }
  const labels = [...document.querySelectorAll('.chart svg text')].map(
    t => t.getBoundingClientRect().height);
  const bars = [...document.querySelectorAll('.chart g.run')].map(g => g.getBoundingClientRect());
  const newest = bars[bars.length - 1];
  const wide = [...document.querySelectorAll('body *')].filter(
    e => e.getBoundingClientRect().right > window.innerWidth && !e.closest('.chart, .scroll'));
  return {split, smallest: Math.min(...labels), newest: [newest.left, newest.right],
          scroll: document.documentElement.scrollWidth, width: window.innerWidth,
          wide: wide.map(e => e.tagName + ' ' + e.className + ' ' + e.textContent.slice(0, 40))};
})()"""


@pytest.mark.parametrize("width", [1280, 390])
def test_chromium_keeps_words_whole_and_the_chart_legible_at_desktop_and_phone_width(
    runs: Runs, tmp_path: Path, width: int
) -> None:
    needs_chromium()
    page = tmp_path / "run4.html"
    write_html(runs, "4", page)
    with browser_page(tmp_path / "profile", width=width, height=900) as tab:
        tab.open(page.as_uri())
        seen = tab.evaluate(READING)
    assert seen["split"] == [], seen["split"]  # before: 'employee', 'deletions' broken
    assert seen["smallest"] >= 10, seen  # before: 6 px high at 390 (10 px text scaled down)
    left, right = seen["newest"]
    assert 0 <= left < right <= width, seen  # the newest run shows without scrolling
    assert seen["scroll"] <= width, seen  # only the chart scrolls sideways, not the page
