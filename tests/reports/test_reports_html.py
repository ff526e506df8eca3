"""The HTML report: self-contained, escaped, and rendered by a real browser (headless Chromium)."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from syncd import report as rpt
from syncd.cli import app
from tests.reports.conftest import MOBILE_TAKEN, SCRIPT_NAME, Runs
from tests.reports.pages import external_references, parse


def test_the_reference_checker_finds_what_it_must() -> None:
    bad = (
        '<link rel="stylesheet" href="https://cdn.example/x.css"><img src="//x.example/a.png">'
        '<script src="http://x.example/a.js"></script><style>@import "x.css"; '
        'b { background: url(http://x.example/b.png) }</style><a href="http://x">x</a>'
        '<div onclick="x()"></div>'
    )
    assert len(external_references(bad)) == 10  # 3 tags, 4 links, @import, url(), onclick
    assert (
        external_references('<a href="#failures">x</a><svg xmlns="http://www.w3.org/2000/svg">')
        == []
    )


def write_html(r: Runs, run: str, target: Path) -> str:
    result = CliRunner().invoke(
        app,
        ["reports", "show", run, "--format", "html", "--output", str(target), "-c", str(r.config)],
    )
    assert result.exit_code == 0, result.output
    return target.read_text(encoding="utf-8")


def test_the_page_is_self_contained_and_escapes_every_value(runs: Runs, tmp_path: Path) -> None:
    for run in ("1", "2", "3", "4"):
        page = write_html(runs, run, tmp_path / f"run{run}.html")
        assert external_references(page) == [], run
        parsed = parse(page)
        assert not any(tag == "script" for tag, _ in parsed.tags)
        assert "@media print" in "".join(parsed.styles)
    page = (tmp_path / "run1.html").read_text(encoding="utf-8")
    assert SCRIPT_NAME in parse(page).all_text  # the name is text...
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; Mallory" in page  # ...escaped


def test_the_page_has_every_section_failures_first(runs: Runs, tmp_path: Path) -> None:
    text = parse(write_html(runs, "1", tmp_path / "run1.html")).all_text
    order = ["Failures", "Changes", "Rejected rows (1)", "Notes", "Guards", "Last 1 runs"]
    positions = [text.index(title) for title in order]
    assert positions == sorted(positions)
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
    assert {dict(a)["class"] for a in bars} >= {"a-create", "a-failed", "a-update", "a-lock"}


# ---------------------------------------------------------------- in a real browser


def chromium(*args: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    browser = shutil.which("chromium")
    if browser is None:
        pytest.skip("chromium is not installed (Debian package chromium; make system-packages)")
    profile = tmp_path / "chromium-profile"
    command = [
        browser,
        "--headless",
        "--no-sandbox",  # tests may run as root, where the sandbox refuses to start
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_chromium_renders_the_report_as_text(runs: Runs, tmp_path: Path) -> None:
    page = tmp_path / "run1.html"
    write_html(runs, "1", page)
    dom = chromium("--dump-dom", page.as_uri(), tmp_path=tmp_path).stdout
    rendered = parse(dom)
    assert not any(tag == "script" for tag, _ in rendered.tags)  # nothing ran or was injected
    text = rendered.all_text
    assert "Run 1: partial (exit 1)" in " ".join(text.split())
    assert "9 created, 3 failed" in text
    assert MOBILE_TAKEN in text
    assert SCRIPT_NAME in text  # shown as the literal text it is


def test_chromium_screenshot_and_print(runs: Runs, tmp_path: Path) -> None:
    page = tmp_path / "run4.html"
    write_html(runs, "latest", page)
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1280,2000", page.as_uri(), tmp_path=tmp_path)
    assert shot.exists() and png_size(shot) == (1280, 2000)
    assert shot.stat().st_size > 30_000  # a blank page of this size compresses to a few KB
    pdf = tmp_path / "report.pdf"
    chromium(f"--print-to-pdf={pdf}", "--no-pdf-header-footer", page.as_uri(), tmp_path=tmp_path)
    assert pdf.read_bytes()[:5] == b"%PDF-" and pdf.stat().st_size > 10_000


def test_an_html_report_built_from_values_is_as_safe(tmp_path: Path) -> None:
    """Without the database: the same renderer on a hand-made report with hostile values."""
    run = rpt.RunInfo(7, "shell", "apply", "full", '"><img src=x onerror=alert(1)>', 1, 2, "ok", 0)
    item = rpt.Item(
        0, "employee", "</td><script>", "u", "update", "m", {"name": "a"}, {"name": "b"}
    )
    report = rpt.RunReport(run, items=(item,), history=(rpt.history_point(run, ()),))
    page = rpt.render_html(report)
    assert external_references(page) == []
    assert '"><img src=x onerror=alert(1)>' in parse(page).all_text
    assert "</td><script>" in parse(page).all_text
