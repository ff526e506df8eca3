"""Where the initial sync's wall time goes: who uses the CPUs, before the first send and after.

    .venv/bin/python -m benchmarks.cpu_timeline [--people 100000] [--every 0.25]

An initial sync of a generated company from CSV into an empty ``syncd emulator``, then the
bare push loop of the same bodies into an emptied one (``benchmarks.push_loop``). While
each runs, the CPU time of the measured process and of the emulator is read from
``/proc/<pid>/stat`` every ``--every`` seconds. Printed for each: its wall time; how long
it ran before the emulator got busy (the first interval in which the emulator used more
than a fifth of a CPU: for syncd, reading, planning and journaling the plan); and, from
then on, the share of a CPU each process used. The sync's main thread's CPU is printed
too (``benchmarks.main_thread``), and its steps as its run recorded them (the summary's
``steps_ms``: reading, planning, journaling the plan, sending, reading back). A sampling
interval's shares are a busy process's (1.0: a whole CPU), the machine's CPUs shared by
both.

Last, the whole run's CPU, the process's (``wait4``) and the emulator's, and what it
implies: both together on this machine's CPUs cannot take less wall time than their sum
divided by the number of CPUs, however well the work overlaps. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from benchmarks import main_thread
from benchmarks.generate import make_company, write_two_files
from benchmarks.harness import (
    Emulator,
    Platform,
    app_token,
    compile_bytecode,
    csv_source,
    python_child,
    running_emulator,
    spawn,
    write_settings,
)
from benchmarks.push_loop import bodies
from benchmarks.results import cpus

TICKS = os.sysconf("SC_CLK_TCK")
BUSY = 0.2  # the emulator is busy once it uses more than this share of a CPU
STEPS = ("recover", "read", "plan", "journal", "send", "read back")  # a run's, in order
PLATFORM = Platform("", 200, 4)  # batch size and concurrency, the benchmark's defaults


def _cpu(pid: int) -> float:
    """The CPU seconds a process used so far (user + system, every thread)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


@dataclass
class Timeline:
    """What one measured process and the emulator used, interval by interval."""

    wall: float
    shares: list[tuple[float, float]]  # (the process's, the emulator's) share of a CPU
    every: float
    cpu: tuple[float, float]  # the whole run's CPU seconds: the process's, the emulator's

    def report(self, name: str) -> str:
        first = next((i for i, (_, emu) in enumerate(self.shares) if emu > BUSY), len(self.shares))
        after = self.shares[first:] or [(0.0, 0.0)]
        mine, theirs = (sum(column) / len(after) for column in zip(*after, strict=True))
        alone = first * self.every
        used, n = sum(self.cpu), cpus()
        return (
            f"{name}: {self.wall:.2f} s; {alone:.2f} s before the emulator got busy; "
            f"then {mine:.2f} of a CPU for it, {theirs:.2f} for the emulator\n"
            f"  CPU: {self.cpu[0]:.2f} s for it, {self.cpu[1]:.2f} s for the emulator: "
            f"on {n} CPUs, no less than {used / n:.2f} s of wall time"
        )


def _follow(command: Sequence[str | Path], emulator: Emulator, log: Path, every: float) -> Timeline:
    """Run ``command`` to its end, sampling its CPU and the emulator's."""
    started = time.perf_counter()
    process = spawn(command, log)
    emulator_before = _cpu(emulator.process.pid)
    mine, theirs = 0.0, emulator_before
    shares: list[tuple[float, float]] = []
    while True:
        time.sleep(every)  # the sampling interval itself, not a wait for an event
        ended, status, usage = os.wait4(process.pid, os.WNOHANG)
        now_theirs = _cpu(emulator.process.pid)
        if ended:  # during the interval: its last one is not counted
            break
        now_mine = _cpu(process.pid)
        shares.append(((now_mine - mine) / every, (now_theirs - theirs) / every))
        mine, theirs = now_mine, now_theirs
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{command[0]} exited {process.returncode}: see {log}")
    cpu = (usage.ru_utime + usage.ru_stime, now_theirs - emulator_before)
    return Timeline(wall, shares, every, cpu)


def _steps(settings: Path) -> str:
    """Where the sync's wall time went, step by step: ``stats.steps_ms`` of ``syncd reports
    show latest --output json`` (``--failed-only``: not the 100,000 items it applied)."""
    command = [sys.executable, "-c", "from syncd.cli import main; main()", "reports", "show"]
    command += ["latest", "--output", "json", "--failed-only", "--config", str(settings)]
    shown = subprocess.run(command, capture_output=True, check=True, text=True).stdout
    taken = json.loads(shown)["stats"].get("steps_ms") or {}  # keys sorted, as all its JSON
    ordered = sorted(taken.items(), key=lambda step: STEPS.index(step[0]))
    return ", ".join(f"{step} {ms / 1000:.2f} s" for step, ms in ordered)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--every", type=float, default=0.25, help="seconds between samples")
    args = parser.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory(prefix="syncd-timeline-") as scratch:
        work = Path(scratch)
        company = make_company(args.people, 1)
        write_two_files(company, work / "data")
        pushed = work / "bodies.json"
        pushed.write_text(json.dumps(bodies(company), ensure_ascii=False), encoding="utf-8")
        source = csv_source(work / "data" / "employees.csv", work / "data" / "departments.csv")
        with running_emulator(work / "emulator.log") as emulator:
            settings = write_settings(
                work / "syncd.toml", work / "state", source,
                replace(PLATFORM, base_url=emulator.base_url), removals=args.people,
            )  # fmt: skip
            sync = [*python_child("benchmarks.main_thread"), "sync", "--yes", "--config"]
            synced = _follow([*sync, settings], emulator, work / "sync.log", args.every)
            told = main_thread.found((work / "sync.log").read_text(encoding="utf-8"))
            steps = _steps(settings)
            emulator.reset(data=True)
            push = python_child(
                "benchmarks.push_loop", emulator.base_url, app_token(emulator.client),
                str(pushed), str(PLATFORM.batch_size), str(PLATFORM.concurrency),
            )  # fmt: skip
            pushed_run = _follow(push, emulator, work / "push.log", args.every)
    print(synced.report("syncd sync, initial"))
    print(f"  its main thread's CPU: {told:.2f} s" if told is not None else "  (main thread: ?)")
    print(f"  its steps, as its run recorded them: {steps}")
    print(pushed_run.report("push loop (whole process: loading its bodies too)"))


if __name__ == "__main__":
    main()
