"""The initial sync of this checkout's syncd against another's, alternated pair by pair.

    .venv/bin/python -m benchmarks.versus --before DIR [--people 100000] [--pairs 4]
                                          [--resync] [--instructions [--simulate]]

``DIR`` holds another syncd package (``git archive c427ab5 | tar -x -C DIR``). Each run
is an initial sync of the same generated company from CSV into a fresh ``syncd emulator``
(this checkout's) with an empty state directory; the two codes take turns, the order
swapped every pair. Printed: each run's CPU (wait4's user + system, the syncd process
alone) and wall time, then the median of the pairs' CPU and wall ratios (this / before)
with their range. ``--resync``: no-change re-syncs that read the files and plan
(``sync.skip_unchanged = false``) instead, each code against its own emulator and state
after its initial sync and first re-sync. ``--instructions``: each measured run under
valgrind's callgrind, its instructions counted rather than its time taken (the same count
on a loaded machine, so one pair tells; a run takes about 50 times as long: meant for
``--resync``); printed with their ratio. ``--simulate`` (with ``--instructions``): callgrind
also simulates the caches and the branch predictor, and the first-level misses (instruction
and data), last-level misses and mispredicted branches are printed with their ratios too:
what a count of instructions cannot show of two codes' time. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import compileall
import re
import shutil
import statistics
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

from benchmarks.generate import make_company, write_two_files
from benchmarks.harness import (
    READ_EVERY_RUN,
    ROOT,
    Measured,
    Platform,
    compile_bytecode,
    csv_source,
    measure,
    running_emulator,
    write_settings,
)

RUN = "from syncd.cli import main; main()"
# Instructions counted, their output discarded: valgrind reports the total on stderr.
CALLGRIND = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"]
SIMULATED = ["--cache-sim=yes", "--branch-sim=yes"]
# What --simulate prints of callgrind's summary, each its first figure (the total).
EVENTS = {
    "I1 misses": r"I1  misses:\s+([\d,]+)",
    "D1 misses": r"D1  misses:\s+([\d,]+)",
    "LL misses": r"LL misses:\s+([\d,]+)",
    "mispredicts": r"Mispredicts:\s+([\d,]+)",
}


@dataclass
class Code:
    """One syncd package (``folder``) with an emulator and a state of its own."""

    name: str
    folder: Path
    work: Path
    source: str
    prefix: tuple[str, ...] = ()  # what the measured runs run under (CALLGRIND)

    def settings(self, base_url: str) -> Path:
        """Only what every syncd since c427ab5 reads (no guards' table)."""
        return write_settings(
            self.work / f"{self.name}.toml",
            self.work / f"{self.name}-state",
            self.source,
            Platform(base_url, 200, 4),
            removals=None,
        )

    def sync(
        self, settings: Path, run: str, env: dict[str, str] | None = None, measured: bool = True
    ) -> Measured:
        """One run; ``measured`` ones under ``prefix``."""
        # An older syncd may not know --yes (it applied without asking then).
        cli = (self.folder / "syncd" / "cli" / "sync.py").read_text(encoding="utf-8")
        yes = ["--yes"] if "--yes" in cli else []
        command = [sys.executable, "-c", RUN, "sync", "--config", str(settings), *yes]
        result = measure(
            [*(self.prefix if measured else ()), *command],
            self.work / f"{run}.log",
            env={"PYTHONPATH": f"{self.folder}:{ROOT}", **(env or {})},
        )
        if result.exit_code != 0:
            raise SystemExit(f"{run}: exit {result.exit_code}\n{result.output[-2000:]}")
        return result


def initial_syncs(codes: list[Code], pair: int) -> dict[str, Measured]:
    """Each code's initial sync into an emulator of its own, with an empty state."""
    found = {}
    for code in codes:
        shutil.rmtree(code.work / f"{code.name}-state", ignore_errors=True)
        with running_emulator(code.work / f"{pair}-{code.name}-emulator.log") as emulator:
            found[code.name] = code.sync(code.settings(emulator.base_url), f"{pair}-{code.name}")
    return found


def resyncs(codes: list[Code], pairs: int) -> Iterator[dict[str, Measured]]:
    """After each code's initial sync and first re-sync, no-change re-syncs that read the
    files and plan (``sync.skip_unchanged = false``), a pair at a time."""
    with ExitStack() as stack:
        settings = {}
        for code in codes:
            emulator = stack.enter_context(running_emulator(code.work / f"{code.name}-emu.log"))
            settings[code.name] = code.settings(emulator.base_url)
            for run in ("initial", "first"):
                code.sync(settings[code.name], f"{code.name}-{run}", measured=False)
        for pair in range(pairs):
            order = codes if pair % 2 == 0 else codes[::-1]
            yield {
                code.name: code.sync(settings[code.name], f"{pair}-{code.name}", READ_EVERY_RUN)
                for code in order
            }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other syncd's folder")
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument(
        "--resync", action="store_true", help="no-change re-syncs that read the files instead"
    )
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count the instructions of each run under valgrind's callgrind, not its time",
    )
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="with --instructions: simulate the caches and branch predictor too",
    )
    args = parser.parse_args()
    compile_bytecode()  # each code's bytecode compiled first, as pip would
    compileall.compile_dir(args.before / "syncd", quiet=1)
    with tempfile.TemporaryDirectory(prefix="syncd-versus-") as temporary:
        work = Path(temporary)
        employees, departments = write_two_files(make_company(args.people), work / "data")
        source = csv_source(employees, departments)
        prefix = tuple(CALLGRIND + SIMULATED * args.simulate) if args.instructions else ()
        codes = [
            Code("this", ROOT, work, source, prefix),
            Code("before", args.before.resolve(), work, source, prefix),
        ]
        measured = (
            resyncs(codes, args.pairs)
            if args.resync
            else (initial_syncs(codes if n % 2 == 0 else codes[::-1], n) for n in range(args.pairs))
        )
        ratios: dict[str, list[float]] = {}
        for pair, runs in enumerate(measured):
            for name, m in runs.items():
                print(f"pair {pair + 1} {name:6}  cpu {m.cpu:6.2f} s  wall {m.wall:6.2f} s", end="")
                counts = figures(m, args) if args.instructions else {}
                print("".join(f"  {n:,.0f} {what}" for what, n in counts.items()))
            this, before = figures(runs["this"], args), figures(runs["before"], args)
            for what in this:
                ratios.setdefault(what, []).append(this[what] / before[what])
    for what, found in ratios.items():
        print(
            f"{what} this/before: {statistics.median(found):.3f}x "
            f"({min(found):.3f}-{max(found):.3f}), {len(found)} pairs"
        )


def figures(m: Measured, args: argparse.Namespace) -> dict[str, float]:
    """What is compared of a run: its CPU and wall time, or what callgrind counted (its
    instructions, and with ``--simulate`` its misses and mispredicted branches)."""
    if not args.instructions:
        return {"CPU": m.cpu, "wall": m.wall}
    found = {"instructions": float(instructions(m))}
    for what, pattern in EVENTS.items() if args.simulate else ():
        counts = re.findall(pattern, m.output)
        if not counts:
            raise SystemExit(f"no {what} in the run's output:\n{m.output[-2000:]}")
        found[what] = float(counts[-1].replace(",", ""))
    return found


def instructions(m: Measured) -> int:
    """The instructions callgrind counted in a run (its last "Collected" line)."""
    found = re.findall(r"Collected : (\d+)", m.output)
    if not found:
        raise SystemExit(f"no instruction count in the run's output:\n{m.output[-2000:]}")
    return int(found[-1])


if __name__ == "__main__":
    main()
