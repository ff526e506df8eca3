"""Exclusive file locks that say who holds them: the run lock, and the daemon's own lock.

The lock is an ``flock`` (released by the kernel when its holder dies, even by kill -9);
the file's content, JSON, tells others who holds it: pid, host, since, and a purpose.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from syncd.clock import now_ms
from syncd.errors import LockHeld, StateError

POLL_SECONDS = 0.2


def holder(path: Path) -> dict[str, Any] | None:
    """Who holds the lock at ``path`` (pid, host, since, ...), or None when it is free."""
    try:
        with path.open("r", encoding="utf-8") as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                content = handle.read()
                held: dict[str, Any] = json.loads(content) if content else {}
                return held
            fcntl.flock(handle, fcntl.LOCK_UN)
            return None
    except (OSError, ValueError):
        return None


def describe(held: dict[str, Any] | None) -> str:
    """'shell sync, pid 42 on host, since 2026-11-22 10:02:00', from what a holder wrote."""
    held = held or {}
    since = held.get("since")
    started = (
        time.strftime("%Y-%m-%d %H:%M:%S %z", time.localtime(since / 1000))
        if isinstance(since, int | float)
        else "?"
    )
    purpose = f"{held['purpose']}, " if held.get("purpose") else ""
    return f"{purpose}pid {held.get('pid', '?')} on {held.get('host', '?')}, since {started}"


class FileLock:
    """An exclusive lock on ``path``; ``busy`` says who holds it, given ``{holder}``."""

    def __init__(self, path: Path, busy: str, purpose: str | None = None) -> None:
        self.path = path
        self.busy = busy  # e.g. "another syncd process is running ({holder})"
        self.purpose = purpose
        self._file: IO[str] | None = None

    def acquire(self, wait_seconds: float = 0.0) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = self.path.open("a+", encoding="utf-8")
        except OSError as exc:
            raise StateError(f"lock {self.path}: {exc.strerror}") from exc
        deadline = time.monotonic() + wait_seconds
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError as exc:
                if time.monotonic() >= deadline:
                    handle.close()
                    raise LockHeld(self.busy.format(holder=describe(holder(self.path)))) from exc
                time.sleep(POLL_SECONDS)  # another process holds it: poll until the deadline
        about = {"pid": os.getpid(), "host": socket.gethostname(), "since": now_ms()}
        if self.purpose:
            about["purpose"] = self.purpose
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(json.dumps(about))
            handle.flush()
        except OSError as exc:  # a full disk: give the lock back and say so
            fcntl.flock(handle, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):  # closed all the same; the rest is moot
                handle.close()
            raise StateError(f"lock {self.path}: cannot write it: {exc.strerror}") from exc
        self._file = handle

    def release(self) -> None:
        if self._file is not None:
            self._file.seek(0)
            self._file.truncate()
            fcntl.flock(self._file, fcntl.LOCK_UN)
            self._file.close()
            self._file = None


RUN_LOCK = "run.lock"


def lock_holder(state_dir: Path) -> dict[str, Any] | None:
    """Who holds the run lock, or None when it is free."""
    return holder(state_dir / RUN_LOCK)


@contextmanager
def run_lock(state_dir: Path, purpose: str, wait_seconds: float = 0.0) -> Iterator[None]:
    lock = FileLock(
        state_dir / RUN_LOCK,
        "another syncd process is running ({holder}); try again when it has finished",
        purpose,
    )
    lock.acquire(wait_seconds)
    try:
        yield
    finally:
        lock.release()
