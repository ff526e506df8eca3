"""Planning 100,000 synced people with effective dates, beside the same people without.

    .venv/bin/python benchmarks/dates_plan.py [--people N]

Three companies of the same people, all in step with the snapshot (nothing to change):
no dates; start dates in the past for all and end dates ahead for 1 in 20 (what HR
exports look like); start and end dates for everyone (every one of them scheduled).
Prints the best of three plans for each, warm (zone arithmetic is cached by date).
"""

from __future__ import annotations

import argparse
import datetime as dt
import time
from collections.abc import Iterator

from syncd.model import Department, Employee, Position, build_directory
from syncd.plan import (
    DatePolicy,
    PlatformNode,
    PlatformView,
    Policy,
    Snapshot,
    SyncedDepartment,
    SyncedEmployee,
    employee_hash,
    plan,
)

NOW = int(dt.datetime(2026, 11, 26, tzinfo=dt.UTC).timestamp() * 1000)
POLICY = Policy(dates=DatePolicy("Europe/Paris", 7, "locked"))


def people(n: int, how: str) -> Iterator[tuple[str, Employee]]:
    for i in range(n):
        start = end = None
        if how != "none":
            start = (dt.date(2015, 1, 1) + dt.timedelta(days=i % 3000)).isoformat()
        if how == "all" or (how == "some" and i % 20 == 0):
            end = (dt.date(2027, 1, 1) + dt.timedelta(days=i % 700)).isoformat()
        person = Employee(
            f"e{i}",
            f"u{i}",
            f"U {i}",
            (Position("rd", primary=True),),
            start_date=start,
            end_date=end,
        )
        yield f"employees.csv:{i + 2}", person


def best_plan(n: int, how: str) -> tuple[float, int]:
    rows = list(people(n, how))
    directory = build_directory([("departments.csv:2", Department("rd", "R&D"))], rows)
    held = {
        e.id: SyncedEmployee(e.id, e.username, k, employee_hash(e, {}))
        for k, (_, e) in enumerate(rows)
    }
    ends = {e.id: e.end_date for _, e in rows if e.end_date}
    snapshot = Snapshot({"rd": SyncedDepartment("rd", 100, "Acme/R&D", "")}, held, end_dates=ends)
    nodes = {1: PlatformNode(1, "Acme", None), 100: PlatformNode(100, "R&D", 1, "rd")}
    view = PlatformView(1, "Acme", nodes, True)
    times, scheduled = [], 0
    for _ in range(3):
        started = time.perf_counter()
        made = plan(directory, snapshot, view, POLICY, NOW)
        times.append(time.perf_counter() - started)
        scheduled = len(made.scheduled)
    return min(times), scheduled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=100_000)
    args = parser.parse_args()
    for how in ("none", "some", "all"):
        seconds, scheduled = best_plan(args.people, how)
        print(f"dates {how:>4}: plan {seconds:.3f} s, {scheduled:,} scheduled")


if __name__ == "__main__":
    main()
