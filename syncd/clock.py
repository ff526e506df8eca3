"""The wall clock as syncd stores it: milliseconds since the epoch (runs, locks, tokens)."""

from __future__ import annotations

import time


def now_ms() -> int:
    return time.time_ns() // 1_000_000
