"""``syncd`` as its console script runs it, telling at exit the CPU its main thread used.

    .venv/bin/python -m benchmarks.main_thread sync --yes --config FILE

The benchmark runs every measured sync this way (``scenarios.sync``). The main thread reads
the source, plans, and prepares and settles every batch; the journal writer and the
senders are threads of their own, and the platform a process of its own. One thread runs
on one CPU at a time, so its CPU time is a floor under the sync's wall time that no overlap
with the other threads or with the platform can lower: the figure that says how far a
change to the sending path alone can take the initial sync (docs/performance.md).

Printed last on standard error, as ``main thread cpu: 6.125 s`` (``time.thread_time`` at
exit, in the main thread: the interpreter's shutdown after it is not counted).
"""

from __future__ import annotations

import atexit
import re
import sys
import time

PREFIX = "main thread cpu:"
_FOUND = re.compile(rf"^{PREFIX} ([0-9.]+) s$", re.MULTILINE)


def _tell() -> None:
    print(f"{PREFIX} {time.thread_time():.3f} s", file=sys.stderr, flush=True)


def found(output: str) -> float | None:
    """The main thread's CPU seconds a run printed, or None."""
    told = _FOUND.findall(output)
    return float(told[-1]) if told else None


def main() -> None:
    from syncd.cli import main as syncd

    atexit.register(_tell)  # atexit handlers run in the main thread
    sys.argv[0] = "syncd"
    syncd()


if __name__ == "__main__":
    main()
