"""The initial sync of this checkout's syncd against another's, alternated pair by pair.

    .venv/bin/python -m benchmarks.versus --before DIR [--people 100000] [--pairs 4]

``DIR`` holds another syncd package (``git archive c427ab5 | tar -x -C DIR``). Each run
is an initial sync of the same generated company from CSV into a fresh ``syncd emulator``
(this checkout's) with an empty state directory; the two codes take turns, the order
swapped every pair. Printed: each run's CPU (wait4's user + system, the syncd process
alone) and wall time, then the median of the pairs' CPU and wall ratios (this / before)
with their range. Not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import compileall
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.generate import make_company, write_two_files
from benchmarks.harness import (
    ROOT,
    Measured,
    compile_bytecode,
    csv_source,
    measure,
    running_emulator,
)

RUN = "from syncd.cli import main; main()"
# Only what every syncd since c427ab5 knows: an initial sync meets no guard.
PLATFORM = """\
domain_id = "acme"
org_code = "acme"
org_id = "acme"
client_id = "syncd"
client_secret = "demo-secret"
batch_size = 200
concurrency = 4
"""


def initial_sync(code: Path, source: str, folder: Path, run: str) -> Measured:
    """One initial sync by the syncd package in ``code``, into an emulator of its own."""
    with running_emulator(folder / f"{run}-emulator.log") as emulator:
        settings = folder / f"{run}.toml"
        settings.write_text(
            f'state_dir = "{folder / f"{run}-state"}"\n{source}\n[platform]\n'
            f'base_url = "{emulator.base_url}"\n{PLATFORM}',
            encoding="utf-8",
        )
        settings.chmod(0o600)
        # An older syncd may not know --yes (it applied without asking then).
        knows_yes = "--yes" in (code / "syncd" / "cli" / "sync.py").read_text(encoding="utf-8")
        command = [sys.executable, "-c", RUN, "sync", "--config", str(settings)]
        measured = measure(
            [*command, *(["--yes"] if knows_yes else [])],
            folder / f"{run}.log",
            env={"PYTHONPATH": f"{code}:{ROOT}"},
        )
    if measured.exit_code != 0:
        raise SystemExit(f"{run}: exit {measured.exit_code}\n{measured.output[-2000:]}")
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="the other syncd's folder")
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--pairs", type=int, default=4)
    args = parser.parse_args()
    compile_bytecode()  # each code's bytecode compiled first, as pip would
    compileall.compile_dir(args.before / "syncd", quiet=1)
    with tempfile.TemporaryDirectory(prefix="syncd-versus-") as temporary:
        folder = Path(temporary)
        employees, departments = write_two_files(make_company(args.people), folder / "data")
        source = csv_source(employees, departments)
        cpu, wall = [], []
        for pair in range(args.pairs):
            codes = [("this", ROOT), ("before", args.before.resolve())]
            runs = {
                name: initial_sync(code, source, folder, f"{pair}-{name}")
                for name, code in (codes if pair % 2 == 0 else codes[::-1])
            }
            for name, m in runs.items():
                print(f"pair {pair + 1} {name:6}  cpu {m.cpu:6.2f} s  wall {m.wall:6.2f} s")
            cpu.append(runs["this"].cpu / runs["before"].cpu)
            wall.append(runs["this"].wall / runs["before"].wall)
    for what, ratios in (("CPU", cpu), ("wall", wall)):
        print(
            f"{what} this/before: {statistics.median(ratios):.2f}x "
            f"({min(ratios):.2f}-{max(ratios):.2f}), {len(ratios)} pairs"
        )


if __name__ == "__main__":
    main()
