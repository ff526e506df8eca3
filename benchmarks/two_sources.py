"""Several sources against one: a no-change re-sync of the same company, side by side.

    .venv/bin/python -m benchmarks.two_sources [--people 100000] [--repeat 3] [--keep]

The generated company (benchmarks/generate.py) is synced from its HR export alone
(``[source]``), and from the same export joined on the work number with a directory export
of everyone's account (username, e-mail, mobile: ``[[sources]]``), each into an emulator of
its own. After each initial sync and a first re-sync, no-change re-syncs are measured in
turn (A/B, then B/A): with the unchanged-source memo (the default), and reading every run
(``sync.skip_unchanged = false``). The issue's bar: two sources cost at most 1.5x one.
Not part of ``make bench``; figures in docs/performance.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.generate import Person, make_company, write_two_files
from benchmarks.harness import (
    READ_EVERY_RUN,
    SYNCD,
    Emulator,
    Measured,
    Platform,
    compile_bytecode,
    csv_source,
    last_run_items,
    measure,
    running_emulator,
    write_calls,
    write_settings,
)


def directory_export(company_people: dict[str, Person], path: Path) -> Path:
    """Everyone's directory account: objectGUID-like id, username, mail, mobile, work number."""
    with path.open("w", encoding="utf-8", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(("guid", "login", "display", "mail", "mobile", "employeeID", "ou"))
        for p in company_people.values():
            number = p.sn[1:]
            writer.writerow(
                (
                    f"9b2e{number}-0000-4000-8000-000000000000",
                    p.username,
                    p.name,
                    p.email,
                    p.mobile,
                    p.sn,
                    "",
                )
            )
    return path


def two_sources(employees: Path, departments: Path, directory: Path) -> str:
    return f"""\
[[sources]]
name = "hr"
kind = "csv"
[sources.csv]
employees = "{employees}"
departments = "{departments}"
departed_values = ["departed"]

[[sources]]
name = "directory"
kind = "csv"
[sources.csv]
layout = "paths"
employees = "{directory}"
[sources.csv.columns]
id = "guid"
username = "login"
name = "display"
email = "mail"
sn = "employeeID"
department = "ou"

[join]
key = "sn"
missing = "wait"
[join.precedence]
name = ["hr"]
department = ["hr"]
job_title = ["hr"]
status = ["hr"]
username = ["directory"]
email = ["directory"]
mobile = ["directory"]
"""


def sync(settings: Path, emulator: Emulator, log: Path, env: dict[str, str] | None) -> Measured:
    emulator.reset(data=False)
    run = measure([SYNCD, "sync", "--yes", "--config", settings], log, env=env)
    if run.exit_code != 0:
        raise RuntimeError(f"syncd exited {run.exit_code}:\n{run.output[-3000:]}")
    failed = {k: n for k, n in last_run_items(settings.parent / "state").items() if "failed" in k}
    writes = write_calls(emulator.requests())
    if failed or (env is not None and writes):
        raise RuntimeError(f"{settings}: not a clean no-change re-sync: {failed} {writes}")
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the folder of files")
    args = parser.parse_args()
    compile_bytecode()
    folder = Path(tempfile.mkdtemp(prefix="syncd-two-sources-"))
    company = make_company(args.people, 7)
    employees, departments = write_two_files(company, folder / "data")
    directory = directory_export(company.people, folder / "data" / "directory.csv")
    times: dict[str, list[Measured]] = {}
    try:
        with (
            running_emulator(folder / "one-emulator.log") as one_platform,
            running_emulator(folder / "two-emulator.log") as two_platform,
        ):
            configs = {
                "one": write_settings(
                    folder / "one" / "syncd.toml",
                    folder / "one" / "state",
                    csv_source(employees, departments).replace(
                        "[source.csv]", '[source.csv]\ndeparted_values = ["departed"]'
                    ),
                    Platform(one_platform.base_url, 500, 4),
                    args.people,
                ),
                "two": write_settings(
                    folder / "two" / "syncd.toml",
                    folder / "two" / "state",
                    two_sources(employees, departments, directory),
                    Platform(two_platform.base_url, 500, 4),
                    args.people,
                ),
            }
            platforms = {"one": one_platform, "two": two_platform}
            for name, settings in configs.items():
                print(f"initial sync, {name} source(s)", file=sys.stderr)
                sync(settings, platforms[name], folder / f"{name}-initial.log", None)
                sync(settings, platforms[name], folder / f"{name}-first.log", None)
            for i in range(args.repeat):
                order = ["one", "two"] if i % 2 == 0 else ["two", "one"]
                for mode, env in (("memo", {}), ("read", READ_EVERY_RUN)):
                    for name in order:
                        key = f"{name}_{mode}"
                        log = folder / f"{key}-{i}.log"
                        run = sync(configs[name], platforms[name], log, env)
                        times.setdefault(key, []).append(run)
                        print(
                            f"  {key:<10} {run.wall:7.2f} s  cpu {run.cpu:6.2f} s", file=sys.stderr
                        )
    finally:
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    # Wall time on a shared machine follows its load; CPU time (wait4's, the process's
    # own) much less: both are given, each as medians and as the median of the pairs' ratios
    # (each pair measured back to back).
    result: dict[str, object] = {"people": args.people, "repeat": args.repeat}
    for measure_of in ("wall", "cpu"):
        medians = {
            k: statistics.median(getattr(m, measure_of) for m in v) for k, v in times.items()
        }
        result[f"median_{measure_of}_seconds"] = {k: round(v, 2) for k, v in medians.items()}
        for mode in ("memo", "read"):
            pairs = [
                getattr(two, measure_of) / getattr(one, measure_of)
                for one, two in zip(times[f"one_{mode}"], times[f"two_{mode}"], strict=True)
            ]
            result[f"ratio_{mode}_{measure_of}"] = {
                "median": round(statistics.median(pairs), 2),
                "range": [round(min(pairs), 2), round(max(pairs), 2)],
            }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
