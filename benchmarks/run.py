"""syncd's benchmarks, one command: ``make bench`` (or ``.venv/bin/python benchmarks/run.py``).

    benchmarks/run.py [--sizes 10000,100000] [--scenarios initial,resync,churn,floor,ldap,plan]
                      [--plan-people 1000000] [--repeat N] [--batch-size 200]
                      [--concurrency 4] [--quick] [--syncd-source DIR]

syncd runs as its own process (``syncd sync``), against ``syncd emulator`` in another,
both on loopback; each row's wall time, CPU time and peak RSS are the measured process's
own (os.wait4). Prints a table, writes benchmarks/out/results-<timestamp>.json, and keeps
each run's files (settings, CSV, logs, state) in benchmarks/out/<timestamp>/.
Timings are reported, never asserted: these are measurements, not tests.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.harness import Platform, running_emulator, use_syncd_from
from benchmarks.scenarios import (
    SYNC_SCENARIOS,
    Context,
    Result,
    csv_syncs,
    floor,
    ldap_read,
    planning,
)

OUT = Path(__file__).resolve().parent / "out"
ALL = (*SYNC_SCENARIOS, "floor", "ldap", "plan")
BIG = 100_000


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py", description="syncd benchmarks at enterprise scale."
    )
    parser.add_argument(
        "--sizes", default="10000,100000", help="people per company, comma-separated"
    )
    parser.add_argument(
        "--scenarios", default=",".join(ALL), help=f"comma-separated, of: {', '.join(ALL)}"
    )
    parser.add_argument("--plan-people", type=int, default=1_000_000, help="people for 'plan'")
    parser.add_argument(
        "--repeat",
        type=int,
        default=None,
        help="repetitions, best kept (default 3; 1 above 10,000)",
    )
    parser.add_argument("--batch-size", type=int, default=200, help="platform.batch_size")
    parser.add_argument("--concurrency", type=int, default=4, help="platform.concurrency")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--syncd-source",
        type=Path,
        default=None,
        help="run the syncd package in this folder instead (a before/after comparison)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smoke run: 2,000 people, planning 100,000, once"
    )
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.plan_people, args.repeat = "2000", 100_000, 1
    args.sizes = [int(s.replace("_", "")) for s in args.sizes.split(",") if s.strip()]
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = sorted(set(args.scenarios) - set(ALL))
    if unknown:
        parser.error(f"unknown scenario(s): {', '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.syncd_source is not None:
        use_syncd_from(args.syncd_source)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = OUT / stamp
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    results = run_all(args, out)
    print()
    print(table(results))
    path = OUT / f"results-{stamp}.json"
    path.write_text(json.dumps(report(args, results, time.perf_counter() - started), indent=2))
    print(f"\nresults: {path}\nfiles:   {out}")
    return 0


def run_all(args: argparse.Namespace, out: Path) -> list[Result]:
    # The LDAP and planning scenarios never call the platform, but settings need its URL:
    # the discard port on loopback, where nothing answers.
    platform_settings = Platform("http://127.0.0.1:9", args.batch_size, args.concurrency)
    results: list[Result] = []

    def repeat(people: int) -> int:
        return int(args.repeat or (3 if people <= 10_000 else 1))

    def log(line: str) -> None:
        print(line, flush=True)

    wanted_syncs = [s for s in SYNC_SCENARIOS if s in args.scenarios]
    if wanted_syncs or "floor" in args.scenarios:
        with running_emulator(out / "emulator.log") as emulator:
            ctx = Context(
                out,
                emulator,
                Platform(emulator.base_url, args.batch_size, args.concurrency),
                args.seed,
                repeat,
                log,
            )
            for people in args.sizes:
                if wanted_syncs:
                    log(f"CSV syncs of {people:,} people")
                    results += csv_syncs(people, wanted_syncs, ctx)
                if "floor" in args.scenarios:
                    log(f"platform floor for {people:,} people")
                    results.append(floor(people, ctx))
    ctx = Context(out, None, platform_settings, args.seed, repeat, log)
    if "ldap" in args.scenarios:
        for people in args.sizes:
            log(f"LDAP read of {people:,} people")
            results.append(ldap_read(people, ctx))
    if "plan" in args.scenarios:
        log(f"planning {args.plan_people:,} people")
        results.append(planning(args.plan_people, ctx))
    for result in results:
        judge(result)
    return results


# ---------------------------------------------------------------- targets


def judge(r: Result) -> None:
    """Set the row's target and whether it was met (targets are for 100,000 people and up)."""
    name = r.scenario
    if name.startswith("planning"):
        r.target = "< 20 s, < 2 GB" if r.people >= 1_000_000 else ""
        r.met = r.wall < 20 and (r.peak_rss_mb or 0) < 2048 if r.target else None
        return
    if r.people < BIG:
        return
    if name.startswith("initial"):
        r.target, r.met = "< 30 s, < 400 MB", r.wall < 30 and (r.peak_rss_mb or 0) < 400
    elif name.startswith("no-change"):
        r.target, r.met = "< 3 s, 0 writes", r.wall < 3 and r.writes == 0
    elif name.startswith("1% churn"):
        r.target = "< 5 s, writes <= min"
        r.met = r.wall < 5 and (r.writes or 0) <= (r.min_writes or 0)
    elif name.startswith("LDAP"):
        r.target, r.met = "< 3x ldapsearch", r.detail["ratio"] < 3


# ---------------------------------------------------------------- output


def table(results: Sequence[Result]) -> str:
    header = (
        "scenario", "N", "wall s", "CPU s", "peak RSS MB", "writes (min)", "items sent",
        "target", "met",
    )  # fmt: skip
    rows = [header]
    for r in results:
        writes = "" if r.writes is None else f"{r.writes}"
        if r.min_writes is not None:
            writes += f" ({r.min_writes})"
        rows.append(
            (
                r.scenario,
                f"{r.people:,}",
                f"{r.wall:.2f}",
                "" if r.cpu is None else f"{r.cpu:.2f}",
                "" if r.peak_rss_mb is None else f"{r.peak_rss_mb:.0f}",
                writes,
                "" if r.items_sent is None else f"{r.items_sent:,}",
                r.target,
                {True: "yes", False: "NO", None: ""}[r.met],
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [" | ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)) for row in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines += ["", *notes(results)]
    return "\n".join(lines)


def notes(results: Sequence[Result]) -> list[str]:
    """What a row cannot say: calls by endpoint, the LDAP ratios, the floor, repetitions."""
    out = []
    for r in results:
        label = f"{r.scenario}, {r.people:,}:"
        if r.calls and not r.scenario.startswith("platform floor"):
            calls = ", ".join(f"{k} {n}" for k, n in sorted(r.calls.items()))
            out.append(f"{label} calls {calls}")
        if r.scenario.startswith("LDAP"):
            d = r.detail
            out.append(
                f"{label} ldapsearch {d['ldapsearch_seconds']:.2f} s; read_ldap "
                f"{r.wall:.2f} s = {d['ratio']}x; syncd check {d['syncd_check_seconds']:.2f} s "
                f"= {d['syncd_check_ratio']}x (peak RSS {d['syncd_check_rss_mb']:.0f} MB); "
                f"plain ldap3 paged_search {d['plain_ldap3_seconds']:.2f} s "
                f"= {d['plain_ldap3_ratio']}x"
            )
        if r.scenario.startswith(("platform floor", "planning")):
            out.append(f"{label} {r.detail}")
        if len(r.runs) > 1:
            out.append(f"{label} wall of each repetition {r.runs}")
    syncs = {(r.scenario, r.people): r for r in results}
    for (name, people), r in syncs.items():
        if name.startswith("platform floor") and ("initial sync (CSV)", people) in syncs:
            initial = syncs[("initial sync (CSV)", people)]
            out.append(
                f"initial sync {people:,}: syncd {initial.wall:.2f} s against the platform's "
                f"floor {r.wall:.2f} s: syncd's own share {initial.wall - r.wall:.2f} s"
            )
    return out


def report(
    args: argparse.Namespace, results: Sequence[Result], seconds: float
) -> dict[str, object]:
    return {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "python": platform.python_version(),
            "load_average": os.getloadavg(),
        },
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "seconds": round(seconds, 1),
        "results": [asdict(r) for r in results],
    }


if __name__ == "__main__":
    sys.exit(main())
