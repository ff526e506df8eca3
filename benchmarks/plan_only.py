"""Child process: planning alone, source and snapshot in memory; prints JSON.

    python -m benchmarks.plan_only --people 1000000 [--seed 1] [--churn 0.01]

Builds the company's Directory, a Snapshot and platform view that say it was synced
as it was, then the Directory after 1% churn, and times ``plan()`` on it (and, apart,
the journal rows the runner makes of the plan). Run as its own process so the parent
can read this process's peak RSS.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import json
import resource
import tempfile
import time
from pathlib import Path

from sqlalchemy import Engine

from benchmarks.generate import Company, make_company
from benchmarks.mutate import churn
from syncd import snapshot as store
from syncd.executor import item_rows
from syncd.model import Department, Directory, Employee, Position, State, build_directory
from syncd.plan import (
    PlatformNode,
    PlatformView,
    Policy,
    Snapshot,
    department_fields,
    department_hash,
    draft,
    employee_fields,
    employee_hash,
    finish,
)

ROOT_ID = 1
ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)  # as the journal writes fields
ROOT_NAME = "Acme"
GENDERS = {"male": "MALE", "female": "FEMALE"}


def directory_of(company: Company) -> Directory:
    """The Directory the CSV source would read from this company's files."""
    primary: dict[tuple[str, str], Position] = {}
    secondary: dict[str, Position] = {}
    departments = [
        ("departments.csv", Department(u.id, u.name, u.parent, u.sort_order))
        for u in company.ordered_units()
    ]
    employees = []
    for p in company.people.values():
        first = primary.get((p.department, p.job_title))
        if first is None:
            first = primary[(p.department, p.job_title)] = Position(
                p.department, p.job_title, primary=True
            )
        positions: tuple[Position, ...] = (first,)
        if p.second:
            positions += (secondary.setdefault(p.second, Position(p.second)),)
        employee = Employee(
            id=p.id,
            username=p.username,
            name=p.name,
            positions=positions,
            en_name=p.en_name or None,
            email=p.email,
            mobile=p.mobile,
            sn=p.sn,
            gender=GENDERS[p.gender],
            job_title=p.job_title,
            state=State.DEPARTED if p.departed else State.ACTIVE,
        )
        employees.append(("employees.csv", employee))
    return build_directory(departments, employees, source="memory")


def synced(directory: Directory, state: Path) -> tuple[Snapshot, PlatformView, Engine]:
    """A state database and a full platform listing that say ``directory`` was synced as it
    is; the snapshot is loaded from that database as a sync loads it (field values, which
    planning asks for the records that changed, are read from SQLite)."""
    node_ids = {d: ROOT_ID + 1 + i for i, d in enumerate(directory.departments)}
    engine = store.open_engine(state / "syncd.db")
    with store.write(engine) as conn:
        store.upsert_departments(
            conn,
            [
                {
                    "source_id": d.id,
                    "node_id": node_ids[d.id],
                    "name_path": "/".join((ROOT_NAME, *directory.path(d.id))),
                    "fields": ENCODER.encode(department_fields(d)),
                    "hash": department_hash(d),
                    "adopted": False,
                }
                for d in directory.departments.values()
            ],
        )
        store.upsert_employees(
            conn,
            [
                {
                    "source_id": e.id,
                    "username": e.username,
                    "employee_id": 10_000_000 + i,
                    "fields": ENCODER.encode(employee_fields(e, {})),
                    "hash": employee_hash(e, {}),
                    "adopted": False,
                    "locked": e.state is State.DEPARTED,
                    "lock_reason": "departed" if e.state is State.DEPARTED else None,
                    "locked_since": None,
                }
                for i, e in enumerate(directory.employees.values())
            ],
        )
    nodes = {
        node_ids[d.id]: PlatformNode(
            node_ids[d.id],
            d.name,
            ROOT_ID if d.parent_id is None else node_ids[d.parent_id],
            d.id,
            d.sort_order,
            1,
        )
        for d in directory.departments.values()
    }
    snapshot = store.load_snapshot(engine)  # everyone, as a sync of a whole read loads
    return snapshot, PlatformView(ROOT_ID, ROOT_NAME, nodes, complete_listing=True), engine


def rss_mb() -> float:
    """The process's peak RSS since it started or since forget_generation_peak."""
    with contextlib.suppress(OSError), open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--people", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--churn", type=float, default=0.01)
    args = parser.parse_args()

    began = time.perf_counter()
    company = make_company(args.people, args.seed)
    changed, _ = churn(company, args.churn)
    with tempfile.TemporaryDirectory(prefix="syncd-plan-") as state:
        before = directory_of(company)
        del company
        snapshot, view, engine = synced(before, Path(state))
        del before  # as in a sync, the snapshot stands for what was written before
        after = directory_of(changed)
        del changed
        built = time.perf_counter() - began
        forget_generation_peak()
        rss_inputs = rss_mb()
        measure(args, after, snapshot, view, engine, built, rss_inputs)


def forget_generation_peak() -> None:
    """Free what generating the company left, and reset the process's peak RSS (Linux:
    /proc/self/clear_refs), so the peak read afterwards, here and by GNU time, is what
    planning holds: the directory, the snapshot, the platform view and the plan."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6").malloc_trim(0)  # glibc: give freed memory back to the OS
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as refs:
        refs.write("5")


def measure(
    args: argparse.Namespace,
    after: Directory,
    snapshot: Snapshot,
    view: PlatformView,
    engine: Engine,
    built: float,
    rss_inputs: float,
) -> None:
    """Plan as a sync does (the fields planning weighs, the draft, the fields its changes
    show, the plan), make the journal rows, and print the figures as JSON."""

    started, cpu = time.perf_counter(), time.process_time()
    snapshot = store.weighed_fields(engine, snapshot, after, view)
    drafted = draft(after, snapshot, view, Policy(leaver_policy="lock_then_remove"), 10**13)
    result = finish(drafted, store.written_fields(engine, drafted.unwritten()))
    planned, plan_cpu = time.perf_counter() - started, time.process_time() - cpu
    rss_plan = rss_mb()

    started = time.perf_counter()
    rows = sum(1 for _ in item_rows(result.changes))
    journal = time.perf_counter() - started

    counts = {f"{k.value} {a.value}": n for (k, a), n in sorted(result.counts().items())}
    print(
        json.dumps(
            {
                "people": args.people,
                "departments": len(after.departments),
                "build_seconds": built,
                "plan_seconds": planned,
                "plan_cpu_seconds": plan_cpu,
                "item_rows_seconds": journal,
                "changes": len(result.changes),
                "rows": rows,
                "counts": counts,
                "rss_after_inputs_mb": rss_inputs,
                "rss_after_plan_mb": rss_plan,
            }
        )
    )


if __name__ == "__main__":
    main()
