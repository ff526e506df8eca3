"""syncd's benchmark, one command: ``make bench`` (or ``.venv/bin/python benchmarks/run.py``).

    benchmarks/run.py [--people 100000] [--plan-people 1000000] [--repeat 5] [--plan-repeat 3]
                      [--quick] [--parts csv,ldap,plan] [--batch-size 200] [--concurrency 4]
                      [--seed 1] [--database sqlite|postgresql|both]
                      [--syncd-source DIR] [--keep] [--profile] [--initial-only]
                      [--markdown FILE] [--headline FILE] [--from RESULTS.json]

Prints issue 14's table: each of syncd's figures next to its comparison's, measured A/B
alternated in the same run, medians of the repetitions, with the ratio and the goal; then
every process measured. Writes benchmarks/out/results-<timestamp>.json (every sample) and,
with --markdown/--headline, the table into docs/performance.md and the one-line headline
into README.md (between their markers). --from re-renders a results file without measuring.
Timings are reported, never asserted: these are measurements, not tests.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run as a script

from benchmarks.harness import compile_bytecode, running_emulator, use_syncd_from
from benchmarks.results import Results, machine
from benchmarks.scenarios import Context, csv_chain, ldap_chain, planning_chain
from benchmarks.table import text, write_headline, write_markdown

OUT = Path(__file__).resolve().parent / "out"
PARTS = ("csv", "ldap", "plan")
DATABASES = ("sqlite", "postgresql", "both")
FULL = {"people": 100_000, "plan_people": 1_000_000, "repeat": 5, "plan_repeat": 3}
QUICK = {**FULL, "people": 10_000, "plan_people": 100_000}


def parse(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="benchmarks/run.py",
        description="syncd's figures next to their comparisons, A/B alternated, medians.",
    )
    parser.add_argument("--people", type=int, help="people in the company (100,000)")
    parser.add_argument("--plan-people", type=int, help="people planned (1,000,000)")
    parser.add_argument("--repeat", type=int, help="repetitions, medians of them (5)")
    parser.add_argument(
        "--plan-repeat", type=int, help="repetitions of planning, a minute each (3)"
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="10,000 people and planning 100,000 unless given: about two minutes",
    )
    parser.add_argument(
        "--parts", default=",".join(PARTS), help=f"comma-separated, of: {', '.join(PARTS)}"
    )
    parser.add_argument("--batch-size", type=int, default=200, help="platform.batch_size")
    parser.add_argument("--concurrency", type=int, default=4, help="platform.concurrency")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--database",
        choices=DATABASES,
        default="sqlite",
        help="the state database of the CSV syncs: sqlite (default), postgresql (a loopback "
        "cluster of the benchmark's own, fsync on), or both, side by side",
    )
    parser.add_argument(
        "--syncd-source",
        type=Path,
        default=None,
        help="run the syncd package in this folder instead (a before/after comparison)",
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the run's data files, not only its logs"
    )
    parser.add_argument(
        "--initial-only",
        action="store_true",
        help="of the CSV chain, only the initial sync and the push loop, alternated",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="run syncd, the LDAP reader and the planner under cProfile (.prof beside the logs;"
        " the timings are then the profiler's)",
    )
    parser.add_argument(
        "--markdown", type=Path, help="write the table into this file (docs/performance.md)"
    )
    parser.add_argument(
        "--headline", type=Path, help="write the one-line headline into this file (README.md)"
    )
    parser.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="render this results file instead of measuring",
    )
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else FULL
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s): {', '.join(unknown)}")
    if min(args.repeat, args.plan_repeat, args.people, args.plan_people) < 1:
        parser.error("--people, --plan-people, --repeat and --plan-repeat must be at least 1")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse(argv)
    if args.source is not None:
        results = Results.load(args.source)
    else:
        results = measure(args, list(sys.argv[1:] if argv is None else argv))
    print()
    print(text(results))
    if args.markdown is not None:
        write_markdown(args.markdown, results)
        print(f"table written into {args.markdown}")
    if args.headline is not None:
        write_headline(args.headline, results)
        print(f"headline written into {args.headline}")
    return 0


def measure(args: argparse.Namespace, argv: list[str]) -> Results:
    if args.syncd_source is not None:
        use_syncd_from(args.syncd_source)
    compile_bytecode()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = OUT / stamp
    out.mkdir(parents=True, exist_ok=True)
    options = {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}
    options["command"] = shlex.join(["benchmarks/run.py", *argv])
    results = Results(args.people, args.plan_people, options, machine())
    path = OUT / f"results-{stamp}.json"
    ctx = Context(
        out,
        results,
        args.batch_size,
        args.concurrency,
        args.seed,
        args.repeat,
        args.plan_repeat,
        lambda line: print(line, flush=True),
        args.profile,
        args.initial_only,
    )
    started = time.perf_counter()
    try:
        if "csv" in args.parts or "ldap" in args.parts:
            with running_emulator(out / "emulator.log") as emulator:
                if "csv" in args.parts:
                    engines = (
                        ("sqlite", "postgresql") if args.database == "both" else (args.database,)
                    )
                    with (
                        running_emulator(out / "push-emulator.log") as push_emulator,
                        (
                            running_emulator(out / "pg-emulator.log")
                            if "postgresql" in engines
                            else contextlib.nullcontext(emulator)
                        ) as pg_emulator,
                        postgres_databases("postgresql" in engines) as new_database,
                    ):
                        # Each engine's syncs have an emulator of their own: both engines'
                        # states stay true to a platform between their steps.
                        own = {"sqlite": emulator, "postgresql": pg_emulator}
                        print(f"CSV syncs of {args.people:,} people", flush=True)
                        csv_chain(ctx, {e: own[e] for e in engines}, push_emulator, new_database)
                    results.save(path)
                if "ldap" in args.parts:
                    print(f"LDAP reads and syncs of {args.people:,} people", flush=True)
                    ldap_chain(ctx, emulator)
                    results.save(path)
        if "plan" in args.parts:
            print(f"planning {args.plan_people:,} people", flush=True)
            planning_chain(ctx)
    finally:
        results.seconds = round(time.perf_counter() - started, 1)
        results.machine["load_average_end"] = [round(x, 2) for x in os.getloadavg()]
        results.save(path)
        if not args.keep:
            _keep_logs_only(out)
    print(f"\nresults: {path}\nlogs:    {out}")
    return results


@contextlib.contextmanager
def postgres_databases(wanted: bool) -> Iterator[Callable[[], str] | None]:
    """With ``wanted``, a PostgreSQL cluster of the benchmark's own on a loopback port, as
    the tests start one (tests/support/postgres.py), but with fsync on; yields a function
    making a fresh database and giving its URL. Stopped (and its files removed) at the end."""
    if not wanted:
        yield None
        return
    from tests.support.postgres import start_server, stop_server

    server = start_server(durable=True)
    try:
        yield lambda: server.url(server.create_database("bench"))
    finally:
        stop_server(server)


def _keep_logs_only(folder: Path) -> None:
    """Remove a run's data (CSV, LDIF, state: hundreds of MB at scale); logs and profiles stay."""
    for entry in folder.iterdir():
        if entry.is_dir():
            _keep_logs_only(entry)
            if not any(entry.iterdir()):
                entry.rmdir()
        elif entry.suffix not in (".log", ".prof"):
            entry.unlink()


if __name__ == "__main__":
    sys.exit(main())
