"""Servers and commands the tests start: free ports, children that die with the tests,
stopping them, and commands that must succeed.

Used by every harness that starts a process: slapd and Samba (tests/support), the
daemon and reliability tests, and the benchmarks (benchmarks/harness.py).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path

from tests.support.waiting import scaled

STOP_TIMEOUT = scaled(10.0)
_PR_SET_PDEATHSIG = 1


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def port_free(port: int) -> bool:
    """Whether a server could listen on the port: its own connections closing (TIME_WAIT)
    do not count, as servers bind with SO_REUSEADDR (Samba's tests run again at once)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def die_with_parent(sent: signal.Signals = signal.SIGTERM) -> None:
    """In the child, before exec: have the kernel send ``sent`` when our process goes away."""
    with suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sent)


def die_with_parent_in_own_group(sent: signal.Signals = signal.SIGTERM) -> None:
    """``die_with_parent``, in a process group of its own: Ctrl-C in the terminal reaches
    pytest, which then stops the server in order."""
    die_with_parent(sent)
    os.setpgrp()


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a server we started: SIGTERM, then SIGKILL if it lingers past STOP_TIMEOUT."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def wait_until_serving(
    name: str,
    process: subprocess.Popen[bytes],
    probe: Callable[[], str | None],
    *,
    timeout: float,
    tail: Callable[[], str] = str,
    pause: float = 0.02,
) -> int | None:
    """Probe a server we started until it answers: ``probe()`` gives None once it does, else
    what is wrong. None once it serves; its exit status if it ends first. If it does not
    answer within ``timeout`` seconds it is stopped and a RuntimeError names ``name``, the
    last problem and ``tail()`` (its log's end)."""
    deadline = time.monotonic() + timeout
    problem = "not answering yet"
    while time.monotonic() < deadline:
        try:
            process.wait(timeout=pause)  # the pause between probes; notices an early exit
        except subprocess.TimeoutExpired:
            pass
        else:
            return process.returncode
        found = probe()
        if found is None:
            return None
        problem = found
    stop_process(process)
    raise RuntimeError(f"{name} did not answer within {timeout}s ({problem}):\n{tail()}")


def run_checked(command: Sequence[str | Path], *, stdin: bytes | None = None) -> None:
    """Run a command to its end; a RuntimeError with its output if it fails."""
    result = subprocess.run(command, input=stdin, capture_output=True, check=False)
    if result.returncode != 0:
        shown = " ".join(str(part) for part in command)
        output = (result.stdout + result.stderr).decode("utf-8", "replace")
        raise RuntimeError(f"{shown} exited with status {result.returncode}:\n{output}")
