"""The table of issue 14 made from a run's results: for the terminal, for Markdown, one headline.

Each row is syncd's median next to its comparison's, the median of their ratios taken pair
by pair (A/B alternated), and the goal, met or not. Absolute goals hold at a scale (100,000
people, planning 1,000,000): at another scale a row says so instead of judging.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks.results import Results, median, pair_ratios

GOAL_PEOPLE = 100_000
GOAL_PLAN_PEOPLE = 1_000_000
BEGIN, END = "<!-- benchmark table: begin -->", "<!-- benchmark table: end -->"
HEADLINE_BEGIN = "<!-- benchmark headline: begin -->"
HEADLINE_END = "<!-- benchmark headline: end -->"


@dataclass(frozen=True)
class Goal:
    limit: float
    unit: str  # "x" (a ratio), "s" or "MB" (MiB, as rusage counts: 1 GB is 1024 MB here)
    at: int | None = None  # the scale it holds at (people); None: any

    def text(self) -> str:
        if self.unit == "x":
            return f"≤ {self.limit:g}×"
        if self.unit == "MB" and self.limit >= 1024:
            return f"≤ {self.limit / 1024:g} GB"
        return f"≤ {self.limit:g} {self.unit}"


@dataclass(frozen=True)
class Row:
    work: str  # {n}: people, {p}: people planned
    mine: str  # series
    theirs: str | None  # the comparison's series
    comparison: str  # what the comparison is
    figure: str = "wall"  # or "rss"
    goal: Goal | None = None
    scale: str = "people"  # or "plan_people": which count the goal's scale is checked against
    ratio: bool = True  # whether the ratio means anything (it does not next to imports alone)


ROWS = (
    Row("initial sync, {n} people from CSV, empty emulator / bare httpx push loop, same bodies",
        "initial", "push_loop", "push loop", goal=Goal(1.8, "x")),
    Row("first no-change re-sync after it (reads the files, as nothing was memoed)",
        "first_resync", "imports", "imports alone", ratio=False),
    Row("no-change re-sync, {n} people, CSV (steady state: the files unchanged, not read)",
        "resync", "imports", "imports alone", goal=Goal(1.2, "s", GOAL_PEOPLE), ratio=False),
    Row("no-change re-sync, {n} people, CSV read and planned (sync.skip_unchanged = false)",
        "resync_full", "imports", "imports alone", goal=Goal(1.2, "s", GOAL_PEOPLE), ratio=False),
    Row("no-change re-sync, {n} people, full LDAP read",
        "ldap_resync", "imports", "imports alone", goal=Goal(1.2, "s", GOAL_PEOPLE), ratio=False),
    Row("no-change incremental LDAP re-sync, {n} people",
        "ldap_incremental", "imports", "imports alone", goal=Goal(0.6, "s", GOAL_PEOPLE),
        ratio=False),
    Row("LDAP read of {n} people (syncd's reader, imports excluded) / ldapsearch -E pr=1000",
        "ldap_read", "ldapsearch", "ldapsearch", goal=Goal(1.5, "x")),
    Row("syncd check end to end / ldapsearch", "syncd_check", "ldapsearch", "ldapsearch"),
    Row("planning {p} people, 1% churn: time / csv-diff of the same rows",
        "plan", "csv_diff", "csv-diff", goal=Goal(4, "s", GOAL_PLAN_PEOPLE), scale="plan_people"),
    Row("planning {p} people: peak RSS / csv-diff's",
        "plan", "csv_diff", "csv-diff", "rss", Goal(1024, "MB", GOAL_PLAN_PEOPLE), "plan_people"),
    Row("peak RSS, initial sync of {n} people / push loop's",
        "initial", "push_loop", "push loop", "rss", Goal(160, "MB", GOAL_PEOPLE)),
    # The state database on PostgreSQL next to SQLite (run.py --database both): issue 27.
    Row("state on PostgreSQL / SQLite: initial sync, {n} people, CSV",
        "initial@postgresql", "initial", "SQLite", goal=Goal(1.3, "x")),
    Row("state on PostgreSQL / SQLite: first no-change re-sync",
        "first_resync@postgresql", "first_resync", "SQLite", goal=Goal(1.3, "x")),
    Row("state on PostgreSQL / SQLite: no-change re-sync (files unchanged, not read)",
        "resync@postgresql", "resync", "SQLite", goal=Goal(1.3, "x")),
    Row("state on PostgreSQL / SQLite: no-change re-sync, CSV read and planned",
        "resync_full@postgresql", "resync_full", "SQLite", goal=Goal(1.3, "x")),
    Row("state on PostgreSQL / SQLite: 1% churn sync",
        "churn@postgresql", "churn", "SQLite", goal=Goal(1.3, "x")),
    Row("state on PostgreSQL / SQLite: peak RSS, initial sync",
        "initial@postgresql", "initial", "SQLite", "rss"),
)  # fmt: skip

# Every series, for the table of every process measured.
SERIES = {
    "initial": "syncd sync: initial, CSV, empty emulator",
    "push_loop": "bare httpx push loop (timed sends; CPU, RSS: whole process)",
    "first_resync": "syncd sync: first no-change re-sync after the initial",
    "resync": "syncd sync: no-change re-sync, CSV (files unchanged: not read)",
    "resync_full": "syncd sync: no-change re-sync, CSV read and planned",
    "imports": "python -c 'import syncd.cli, syncd.run.runner': a sync's imports alone",
    "churn": "syncd sync: 1% churn, CSV",
    "ldap_read": "read_ldap in a child (timed read; RSS: whole process)",
    "ldapsearch": "ldapsearch -E pr=1000/noprompt, the 3 searches",
    "syncd_check": "syncd check, LDAP",
    "ldap_initial": "syncd sync: initial, LDAP",
    "ldap_first_resync": "syncd sync: first no-change re-sync, LDAP",
    "ldap_resync": "syncd sync: no-change re-sync, full LDAP read",
    "ldap_incremental": "syncd sync --incremental: no change, LDAP",
    "plan": "plan() in a child (timed plan; RSS: whole process with its inputs)",
    "csv_diff": "csv-diff --key id, employees before / after",
    "initial@postgresql": "syncd sync: initial, CSV, state on PostgreSQL",
    "first_resync@postgresql": "syncd sync: first no-change re-sync, state on PostgreSQL",
    "resync@postgresql": "syncd sync: no-change re-sync (not read), state on PostgreSQL",
    "resync_full@postgresql": "syncd sync: no-change re-sync, read, state on PostgreSQL",
    "churn@postgresql": "syncd sync: 1% churn, CSV, state on PostgreSQL",
}


@dataclass(frozen=True)
class Line:
    """One row, worked out: texts for the cells, and whether the goal was met (None: not judged)."""

    work: str
    mine: str
    theirs: str
    ratio: str
    goal: str
    met: bool | None
    verdict: str


def lines(results: Results) -> list[Line]:
    out = []
    for row in ROWS:
        mine = _values(results, row.mine, row.figure)
        theirs = _values(results, row.theirs, row.figure) if row.theirs else []
        if not mine:
            continue  # not measured in this run
        m, t = median(mine), median(theirs)
        ratios = pair_ratios(mine, theirs) if row.ratio and theirs else []
        r = median(ratios)
        met, verdict = _judge(row, results, m, r)
        out.append(
            Line(
                work=row.work.format(n=f"{results.people:,}", p=f"{results.plan_people:,}"),
                mine=_figure(m, row.figure),
                theirs=f"{_figure(t, row.figure)} ({row.comparison})" if t is not None else "",
                ratio=_ratio(r, ratios),
                goal=row.goal.text() if row.goal else "",
                met=met,
                verdict=verdict,
            )
        )
    return out


def _values(results: Results, key: str | None, figure: str) -> list[float]:
    if key is None:
        return []
    return results.rss(key) if figure == "rss" else results.walls(key)


def _judge(
    row: Row, results: Results, mine: float | None, ratio: float | None
) -> tuple[bool | None, str]:
    goal = row.goal
    if goal is None or mine is None:
        return None, ""
    scale = results.plan_people if row.scale == "plan_people" else results.people
    if goal.at is not None and scale != goal.at:
        return None, f"not judged (goal at {goal.at:,})"
    value = ratio if goal.unit == "x" else mine
    if value is None:
        return None, ""
    met = value <= goal.limit
    return met, "met" if met else "not met"


def _figure(value: float | None, figure: str) -> str:
    if value is None:
        return ""
    if figure == "rss":
        return f"{value / 1024:.2f} GB" if value >= 1024 else f"{value:.0f} MB"
    return f"{value:.2f} s"


def _ratio(r: float | None, ratios: Sequence[float]) -> str:
    if r is None:
        return ""
    spread = f" ({min(ratios):.2f}–{max(ratios):.2f})" if len(ratios) > 1 else ""
    return f"{r:.2f}×{spread}"


# ---------------------------------------------------------------- every process measured


def process_rows(results: Results) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = []
    for key, label in SERIES.items():
        samples = results.series.get(key)
        if not samples:
            continue
        walls = [s.wall for s in samples]
        extra = ""
        writes = [s.detail["writes"] for s in samples if "writes" in s.detail]
        if writes:
            reads = [s.detail.get("reads", 0) for s in samples]
            extra = f"write calls {_span(writes)}, fewest {samples[0].detail['min_writes']}"
            extra += f"; platform reads {_span(reads)}"
        mains = [s.detail["main_cpu"] for s in samples if s.detail.get("main_cpu") is not None]
        if mains:
            extra += f"; main thread CPU {median(mains):.2f} s"
        inputs = [
            s.detail["rss_after_inputs_mb"] for s in samples if "rss_after_inputs_mb" in s.detail
        ]
        if inputs:
            extra = f"inputs alone (before plan()) {median(inputs):.0f} MB"
        rows.append(
            (
                label,
                str(len(samples)),
                f"{median(walls):.2f} s",
                f"{min(walls):.2f}–{max(walls):.2f}",
                f"{median([s.cpu for s in samples]):.2f} s",
                f"{median([s.peak_rss_mb for s in samples]):.0f} MB",
                extra,
            )
        )
    return rows


def _span(values: Sequence[int]) -> str:
    low, high = min(values), max(values)
    return f"{low}" if low == high else f"{low}–{high}"


PROCESS_HEADER = ("process", "n", "wall (median)", "range", "CPU", "peak RSS", "notes")
HEADER = ("work", "syncd", "comparison", "ratio (range)", "goal", "met")


# ---------------------------------------------------------------- renderings


def text(results: Results) -> str:
    """Both tables, aligned for a terminal."""
    return "\n".join(
        [
            _aligned([HEADER, *_cells(results)]),
            "",
            f"Every process measured (medians of {_counts(results)}):",
            _aligned([PROCESS_HEADER, *process_rows(results)]),
            "",
            machine_line(results),
        ]
    )


def _cells(results: Results) -> list[tuple[str, ...]]:
    return [(x.work, x.mine, x.theirs, x.ratio, x.goal, x.verdict) for x in lines(results)]


def _aligned(rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = ["  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    out.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(line.rstrip() for line in out)


def _counts(results: Results) -> str:
    repeat, plan = results.options.get("repeat"), results.options.get("plan_repeat")
    return f"{repeat} repetitions, planning {plan}"


def markdown(results: Results) -> str:
    """The table block for docs/performance.md: the machine, the date, both tables."""
    return "\n".join(
        [
            BEGIN,
            machine_line(results),
            "",
            _pipe_table(HEADER, _cells(results)),
            "",
            f"Every process measured (medians of {_counts(results)}):",
            "",
            _pipe_table(PROCESS_HEADER, process_rows(results)),
            END,
        ]
    )


def _pipe_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

    return "\n".join([line(header), line(["---"] * len(header)), *(line(r) for r in rows)])


def machine_line(results: Results) -> str:
    m = results.machine
    load = m.get("load_average_start", [0.0])[0]
    end = m.get("load_average_end", [0.0])[0]
    when = results.started[:10]
    shared = (
        f" The machine was shared with other work during the run (load average {load:.1f} at "
        f"the start, {end:.1f} at the end on {m.get('nproc')} CPUs): timings are noisy, which "
        "is why each pair is alternated and medians are shown."
        if max(load, end) >= 0.5
        else f" Load average {load:.1f} at the start, {end:.1f} at the end."
    )
    if results.options.get("profile"):
        shared += " Run under cProfile (--profile): the timings are the profiler's, not syncd's."
    return (
        f"Measured {when} on {m.get('nproc')} CPUs ({m.get('cpu_model')}), "
        f"{m.get('memory_gb')} GB RAM, {m.get('os')}, Python {m.get('python')}; code at commit "
        f"`{m.get('commit')}`; `{results.options.get('command', 'benchmarks/run.py')}`, "
        f"{results.seconds / 60:.1f} min.{shared}"
    )


def headline(results: Results) -> str:
    """One line of the main figures, for the README."""
    found = {(row.mine, row.figure): line for row, line in _paired(results)}

    def mine(key: str, figure: str = "wall") -> str:
        line = found.get((key, figure))
        return line.mine if line else ""

    def ratio(key: str) -> str:
        line = found.get((key, "wall"))
        return line.ratio.split()[0] if line and line.ratio else ""

    def theirs(key: str, figure: str = "wall") -> str:
        line = found.get((key, figure))
        return line.theirs.split(" (")[0] if line else ""

    parts = []
    if theirs("resync"):  # the machine's pace: the same work takes longer on a slower one
        parts.append(f"a sync's imports alone {theirs('resync')}")
    if ratio("initial"):
        parts.append(f"initial sync {ratio('initial')} a bare httpx push loop")
    kinds = (
        ("resync", "CSV, files unchanged"),
        ("resync_full", "CSV read and planned"),
        ("ldap_resync", "LDAP"),
        ("ldap_incremental", "incremental LDAP"),
    )
    resyncs = [f"{mine(key)} ({label})" for key, label in kinds if mine(key)]
    if resyncs:
        parts.append("no-change re-sync " + ", ".join(resyncs))
    if ratio("ldap_read"):
        parts.append(f"LDAP read {ratio('ldap_read')} ldapsearch")
    if mine("plan") and mine("plan", "rss"):
        parts.append(
            f"planning {results.plan_people:,} people {mine('plan')}, {mine('plan', 'rss')} "
            f"(csv-diff {theirs('plan')}, {theirs('plan', 'rss')})"
        )
    if mine("initial", "rss"):
        parts.append(f"peak RSS of the initial sync {mine('initial', 'rss')}")
    judged = [line for line in found.values() if line.met is not None]
    met = sum(1 for line in judged if line.met)
    return (
        f"At {results.people:,} people ({results.machine.get('nproc')} CPUs, "
        f"{results.started[:10]}, medians): "
        + "; ".join(parts)
        + f"; goals met: {met} of {len(judged)}."
    )


def _paired(results: Results) -> list[tuple[Row, Line]]:
    measured = [row for row in ROWS if _values(results, row.mine, row.figure)]
    return list(zip(measured, lines(results), strict=True))


# ---------------------------------------------------------------- writing into documents


def write_block(path: Path, block: str, begin: str, end: str) -> None:
    """Put ``block`` (markers included) in place of the marked one in ``path``.

    A new file is the block alone; an existing file must hold both markers.
    """
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(block + "\n", encoding="utf-8")
        return
    current = path.read_text(encoding="utf-8")
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(current):
        raise SystemExit(f"{path}: no {begin} ... {end} block to replace")
    path.write_text(pattern.sub(lambda _: block, current, count=1), encoding="utf-8")


def write_markdown(path: Path, results: Results) -> None:
    write_block(path, markdown(results), BEGIN, END)


def write_headline(path: Path, results: Results) -> None:
    block = f"{HEADLINE_BEGIN}\n{headline(results)}\n{HEADLINE_END}"
    write_block(path, block, HEADLINE_BEGIN, HEADLINE_END)
