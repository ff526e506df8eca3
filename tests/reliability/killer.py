"""Run the syncd command line, and SIGKILL this very process at a chosen SQL statement.

Test instrumentation only (production code has no hook for it): the state database's
engine is wrapped so that a SQLAlchemy cursor listener counts the statements that start
with ``$KILL_SQL``; at the ``$KILL_NTH`` one it kills the process, ``before`` the
statement runs or ``after`` it ran but before its transaction commits (``$KILL_WHEN``).
On either engine: ``$KILL_SQL`` is written with ``?`` placeholders, PostgreSQL's ``%s``
read as ``?`` (the COPY that loads run items on PostgreSQL goes to the driver's own
cursor and is not seen; write kill points as the statements SQLite runs).

    KILL_SQL="UPDATE run_items SET outcome = ?" KILL_NTH=3 KILL_WHEN=after \\
        python killer.py sync --config syncd.toml
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, event

import syncd.snapshot
import syncd.snapshot.engine


def arm(prefix: str, nth: int, when: str) -> None:
    real_open = syncd.snapshot.open_engine
    seen = 0

    def open_engine(path: Path, *args: Any, **kwargs: Any) -> Engine:
        engine = real_open(path, *args, **kwargs)  # whatever else the real one takes

        def count(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
            nonlocal seen
            if statement.lstrip().replace("%s", "?").startswith(prefix):
                seen += 1
                if seen == nth:
                    os.kill(os.getpid(), signal.SIGKILL)

        event.listen(engine, f"{when}_cursor_execute", count)
        return engine

    # The StateStore opens its engine through the engine module; the package re-exports it.
    syncd.snapshot.open_engine = syncd.snapshot.engine.open_engine = open_engine


def main() -> None:
    arm(os.environ["KILL_SQL"], int(os.environ["KILL_NTH"]), os.environ.get("KILL_WHEN", "after"))
    from syncd.cli import run_cli

    sys.exit(run_cli(sys.argv[1:]))


if __name__ == "__main__":
    main()
