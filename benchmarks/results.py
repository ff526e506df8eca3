"""What one benchmark run measured: samples by series, the machine, and the JSON they are kept in.

A series is every repetition of one measured process (``initial``, ``push_loop``, ...), in the
order taken. Two series measured A/B alternated have the same length, and their i-th samples
were taken back to back: ratios are taken pair by pair, and their median reported.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Sample:
    """One measured run: seconds, CPU seconds and peak RSS of the process (or of its timed part)."""

    wall: float
    cpu: float
    peak_rss_mb: float
    detail: dict[str, Any] = field(default_factory=dict)


@dataclass
class Results:
    people: int
    plan_people: int
    options: dict[str, Any]
    machine: dict[str, Any] = field(default_factory=dict)
    series: dict[str, list[Sample]] = field(default_factory=dict)
    started: str = field(default_factory=lambda: time.strftime("%Y-%m-%dT%H:%M:%S%z"))
    seconds: float = 0.0

    def add(self, key: str, sample: Sample) -> Sample:
        self.series.setdefault(key, []).append(sample)
        return sample

    def walls(self, key: str) -> list[float]:
        return [s.wall for s in self.series.get(key, [])]

    def rss(self, key: str) -> list[float]:
        return [s.peak_rss_mb for s in self.series.get(key, [])]

    def save(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(asdict(self), indent=1, ensure_ascii=False), encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> Results:
        raw = json.loads(path.read_text(encoding="utf-8"))
        series = {k: [Sample(**s) for s in v] for k, v in raw.pop("series").items()}
        return cls(**raw, series=series)


def median(values: Sequence[float]) -> float | None:
    return statistics.median(values) if values else None


def pair_ratios(mine: Sequence[float], theirs: Sequence[float]) -> list[float]:
    """mine[i] / theirs[i] for each pair taken back to back."""
    return [a / b for a, b in zip(mine, theirs, strict=False) if b > 0]


# ---------------------------------------------------------------- the machine


def cpus() -> int:
    """The CPUs this process and its children may run on (``nproc``'s count)."""
    return len(os.sched_getaffinity(0))


def machine() -> dict[str, Any]:
    """What the figures were measured on: CPUs, their model, memory, load, the code's commit."""
    return {
        "nproc": cpus(),
        "cpu_model": _cpu_model(),
        "memory_gb": round(_mem_total_kb() / 1024 / 1024, 1),
        "os": platform.platform(),
        "python": platform.python_version(),
        "load_average_start": [round(x, 2) for x in os.getloadavg()],
        "commit": _commit(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _mem_total_kb() -> int:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


def _commit() -> str:
    """The worktree's commit, with ``+changes`` when files differ from it."""

    def git(*args: str) -> str:
        done = subprocess.run(
            ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
        )
        return done.stdout.strip()

    head = git("rev-parse", "--short", "HEAD") or "unknown"
    return head + ("+changes" if git("status", "--porcelain", "--", "syncd") else "")
