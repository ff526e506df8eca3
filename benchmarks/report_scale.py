"""The HTML report at scale: its size, the time to write it, and its first paint in Chromium.

    benchmarks/report_scale.py [--sizes 10000,100000] [--repeat 3] [--before DIR] [--keep]

For each size, a generated company (benchmarks/generate.py) is synced from CSV into
``syncd emulator`` with about 1% of people rejected by the platform (two reasons), after a
dry run and before a re-sync and a second dry run, so the report has failures and a history.
The first real sync's report (N people created) is then written by ``syncd reports show ID
--format html`` in its own process, and opened in headless Chromium (a fresh profile for
each of ``--repeat`` loads, the fastest kept): first contentful paint, DOMContentLoaded and
load, and, when the page has a search box, the time one search over every change takes.

``--before DIR`` also renders the same run with the ``syncd/`` package found in DIR
(``git archive <commit> syncd | tar -x -C DIR``), for before/after figures. Prints a table;
measurements, never assertions: nothing here runs in the test suite.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.generate import make_company, write_two_files
from benchmarks.harness import (
    ROOT,
    SYNCD,
    Platform,
    csv_source,
    measure,
    running_emulator,
    write_settings,
)
from tests.reports.browser import browser_page

OUT = Path(__file__).resolve().parent / "out"
REJECTS = [
    {"field": "username", "pattern": "17$", "message": "mobile already used by another employee"},
    {"field": "username", "pattern": "093$", "message": "department not found"},
]
# Where the page's load and paint times are read: the Paint Timing and Navigation Timing APIs.
FIGURES = """new Promise(done => new PerformanceObserver(list => {
  const nav = performance.getEntriesByType('navigation')[0];
  const paint = Object.fromEntries(list.getEntries().map(e => [e.name, e.startTime]));
  done({fcp: paint['first-contentful-paint'] ?? null, dcl: nav.domContentLoadedEventEnd,
        load: nav.loadEventEnd, nodes: document.getElementsByTagName('*').length});
}).observe({type: 'paint', buffered: true}))"""
SEARCH = """(() => {
  const box = document.querySelector('#q');
  if (!box || box.closest('[hidden]')) return null;
  const started = performance.now();
  box.value = 'wang.wei';
  box.dispatchEvent(new Event('input'));
  return {ms: performance.now() - started,
          shown: document.querySelectorAll('#results tbody tr').length};
})()"""


@dataclass
class Figures:
    people: int
    code: str  # "this checkout", or the --before folder
    html_bytes: int
    write_s: float  # `syncd reports show --format html`, wall
    fcp_ms: float | None
    dcl_ms: float
    load_ms: float
    dom_nodes: int
    search_ms: float | None
    loads: list[float]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks/report_scale.py", description=__doc__)
    parser.add_argument("--sizes", default="10000,100000", help="people, comma-separated")
    parser.add_argument("--repeat", type=int, default=3, help="page loads per page, best kept")
    parser.add_argument("--before", type=Path, help="a folder holding another syncd/ package")
    parser.add_argument("--keep", action="store_true", help="keep the state and pages")
    args = parser.parse_args(argv)
    if args.before is not None and not (args.before / "syncd" / "__init__.py").is_file():
        parser.error(f"{args.before}: no syncd/ package there")
    folder = OUT / time.strftime("report-%Y%m%d-%H%M%S")
    results: list[Figures] = []
    for people in (int(n) for n in args.sizes.split(",")):
        results += measure_size(people, folder / str(people), args)
    print(table(results))
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=2))
    if not args.keep:
        for child in folder.iterdir():
            if child.is_dir():
                shutil.rmtree(child)
    print(f"results: {folder / 'results.json'}")
    return 0


def measure_size(people: int, folder: Path, args: argparse.Namespace) -> list[Figures]:
    state = folder / "state"
    employees, departments = write_two_files(make_company(people), folder / "csv")
    with running_emulator(folder / "emulator.log") as emulator:
        settings = write_settings(
            folder / "syncd.toml",
            state,
            csv_source(employees, departments),
            Platform(emulator.base_url, batch_size=500, concurrency=4),
            removals=people,
        )
        emulator.control("POST", "faults", {"reject": REJECTS})
        for extra in (["--dry-run"], [], [], ["--dry-run"]):
            done = measure(
                [SYNCD, "sync", "--yes", "--config", settings, *extra], folder / "sync.log"
            )
            if done.exit_code not in (0, 1):
                raise RuntimeError(f"syncd sync exited {done.exit_code}:\n{done.output[-3000:]}")
    run_id = "2"  # the first real sync: every person created (or failed)
    print(f"{people} people: synced, state in {state}", flush=True)
    codes: list[tuple[str, Path | None]] = [("this checkout", None)]
    if args.before is not None:
        codes.append((str(args.before), args.before.resolve()))
    found: list[Figures] = []
    for label, source in codes:
        page = folder / f"report-{len(found)}.html"
        write_s = write_page(settings, run_id, page, source)
        found.append(load_page(people, label, page, write_s, args.repeat))
        print(f"  {row(found[-1])}", flush=True)
    return found


def write_page(settings: Path, run_id: str, page: Path, source: Path | None) -> float:
    """Seconds ``syncd reports show ID --format html`` takes, its output going to ``page``."""
    path = [str(source)] if source is not None else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([*path, str(ROOT)])}
    command = [sys.executable, "-c", "from syncd.cli import main; main()"]
    command += ["reports", "show", run_id, "--format", "html", "--config", str(settings)]
    started = time.perf_counter()
    with page.open("wb") as out:
        # Not from the repository root, whose syncd/ would come before the one asked for.
        subprocess.run(command, stdout=out, check=True, cwd=ROOT / "benchmarks", env=env)
    return time.perf_counter() - started


def load_page(people: int, code: str, page: Path, write_s: float, repeat: int) -> Figures:
    best: dict[str, float] | None = None
    loads = []
    search: float | None = None
    for _ in range(repeat):
        with (
            tempfile.TemporaryDirectory() as profile,
            browser_page(Path(profile), width=1280, height=900, timeout=600) as tab,
        ):
            tab.open(page.as_uri())
            figures = tab.evaluate(FIGURES)
            found = tab.evaluate(SEARCH)
        loads.append(round(figures["load"]))
        if best is None or figures["load"] < best["load"]:
            best = figures
        if found is not None:
            search = found["ms"] if search is None else min(search, found["ms"])
    assert best is not None
    return Figures(
        people,
        code,
        page.stat().st_size,
        round(write_s, 2),
        best["fcp"],
        round(best["dcl"]),
        round(best["load"]),
        int(best["nodes"]),
        None if search is None else round(search, 1),
        loads,
    )


def row(f: Figures) -> str:
    fcp = "—" if f.fcp_ms is None else f"{f.fcp_ms / 1000:.2f} s"
    search = "—" if f.search_ms is None else f"{f.search_ms:.0f} ms"
    return (
        f"{f.people:>7,} {f.code[:24]:<24} {f.html_bytes / 1e6:7.2f} MB {f.write_s:7.2f} s "
        f"{fcp:>8} {f.load_ms / 1000:7.2f} s {f.dom_nodes:>9,} {search:>8}"
    )


def table(results: Sequence[Figures]) -> str:
    head = (
        f"{'people':>7} {'code':<24} {'HTML':>10} {'write':>9} {'paint':>8} {'load':>9} "
        f"{'elements':>9} {'search':>8}"
    )
    return "\n".join([head, *(row(r) for r in results)])


if __name__ == "__main__":
    raise SystemExit(main())
