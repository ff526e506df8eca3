"""The wall clock as syncd stores it: milliseconds since the epoch (runs, locks, tokens)."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000


class Stopwatch:
    """How long each step of a run took, in ms by this host's monotonic clock (a step
    laps when it ends: the time since the last lap is its own; a step timed twice adds up)."""

    def __init__(self) -> None:
        self._last = time.monotonic_ns()
        self.taken: dict[str, int] = {}  # step -> ms, in the order the steps first ended

    def lap(self, step: str) -> None:
        now = time.monotonic_ns()
        self.taken[step] = self.taken.get(step, 0) + (now - self._last) // 1_000_000
        self._last = now
