"""Broken settings and an unusable state directory: one clear error, exit 3, nothing half-written.

Each case runs ``syncd sync`` as a process after a good sync, and compares every table
of the state database before and after. The state directory cases mount a tmpfs there
(this machine runs the tests as root, where file modes do not stop writes): remounted
read-only, or filled up in the middle of a run.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from syncd.errors import EXIT_FAILED, EXIT_OK
from tests.engine.company import employee
from tests.support.cli import SYNCD
from tests.support.traffic import requests_to
from tests.support.waiting import wait_until

from .support import DEADLINE, Rig, assert_converged, assert_nothing_twice, clean_env, query, tables


def one_error(stderr: str) -> str:
    """The one error line a failed command prints (no traceback, no internal error)."""
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, stderr
    return errors[0]


def secret_dir(tmp_path: Path) -> Path:
    path = tmp_path / "a-directory"
    path.mkdir()
    return path


def not_utf8(tmp_path: Path) -> Path:
    path = tmp_path / "latin1-secret"
    path.write_bytes("sécret-ÿ".encode("latin-1"))
    return path


SETTINGS_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown key", {"sync": {"max_removal": 5}}, "key sync.max_removal: unknown key"),
    ("wrong type", {"platform": {"batch_size": "lots"}}, "key platform.batch_size"),
    ("out of range", {"sync": {"max_removal_ratio": 2}}, "key sync.max_removal_ratio"),
    ("bad enum", {"sync": {"leaver_policy": "delete"}}, "key sync.leaver_policy"),
    ("missing secret", {"platform": {"client_secret": None}}, "platform.client_secret is not set"),
    (
        "missing secret file",
        {"platform": {"client_secret": None, "client_secret_file": "/nonexistent/secret"}},
        "cannot read secret file /nonexistent/secret: No such file or directory",
    ),
    (
        "unreadable secret file",
        {"platform": {"client_secret": None, "client_secret_file": secret_dir}},
        "Is a directory",
    ),
    (
        "secret file not UTF-8",
        {"platform": {"client_secret": None, "client_secret_file": not_utf8}},
        "latin1-secret",
    ),
    ("state_dir is a file", {"top": {"state_dir": "FILE"}}, "state directory"),
]


@pytest.mark.parametrize(
    ("change", "expected"), [c[1:] for c in SETTINGS_CASES], ids=[c[0] for c in SETTINGS_CASES]
)
def test_broken_settings_are_one_clear_error_and_change_nothing(
    rig: Rig, tmp_path: Path, change: dict[str, Any], expected: str
) -> None:
    assert rig.sync().exit_code == EXIT_OK
    before = tables(rig.database)
    for section, values in change.items():
        for key, value in values.items():
            if callable(value):
                value = str(value(tmp_path))
            if value == "FILE":
                value = str(rig.config)
            target = {"platform": rig.platform_options, "top": rig.top_options}.get(section)
            (target if target is not None else rig.sync_settings)[key] = value
    rig.write_config()

    done = rig.cli("sync", "--yes")

    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    line = one_error(done.stderr)
    assert expected in line, line
    assert str(rig.config) in line or "platform.client_secret" in line or "state" in line
    assert "sécret" not in done.stderr
    assert tables(rig.database) == before


# ---------------------------------------------------------------- the state directory


@pytest.fixture
def tmpfs(rig: Rig) -> Iterator[Path]:
    """A 4 MB tmpfs mounted on the rig's state directory, unmounted at the end."""
    state = rig.folder / "state"
    state.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(state)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a tmpfs is not permitted here: {mounted.stderr.strip()}")
    try:
        yield state
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(state)], capture_output=True, check=False)
        subprocess.run(["umount", "-l", str(state)], capture_output=True, check=False)


def test_a_read_only_state_directory_is_one_clear_error(rig: Rig, tmpfs: Path) -> None:
    rig.company.write(rig.folder)
    rig.write_config()
    assert (
        rig.cli("sync", "--yes").returncode == EXIT_OK
    )  # a process: no file left open for writing
    before = tables(rig.database)
    rig.company.employees.append(employee("E9", "ivy", "D2"))
    rig.company.write(rig.folder)
    subprocess.run(["mount", "-o", "remount,ro", str(tmpfs)], check=True)

    done = rig.cli("sync", "--yes")

    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    line = one_error(done.stderr)
    assert str(tmpfs) in line and "read-only file system" in line, line
    assert "ivy" not in rig.platform().people  # nothing was sent
    subprocess.run(["mount", "-o", "remount,rw", str(tmpfs)], check=True)
    assert tables(rig.database) == before
    assert rig.cli("sync", "--yes").returncode == EXIT_OK
    assert_converged(rig)


def fill(directory: Path) -> Path:
    """Write a file until the file system has no space left; returns it."""
    filler = directory / "filler"
    block = b"\0" * 65536
    with filler.open("wb", buffering=0) as out:
        try:
            while True:
                out.write(block)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    small = block[:512]
    with filler.open("ab", buffering=0) as out:  # the last partial blocks too
        try:
            while True:
                out.write(small)
        except OSError as exc:
            if exc.errno != errno.ENOSPC:
                raise
    return filler


def test_a_disk_that_fills_during_a_run_fails_it_cleanly_and_the_next_run_converges(
    rig: Rig, tmpfs: Path
) -> None:
    """ "Full" here: the state directory's file system runs out of space in mid-apply."""
    assert rig.sync().exit_code == EXIT_OK
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(100, 700)]
    rig.company.write(rig.folder)
    rig.platform_options.update(batch_size=20, concurrency=1)
    rig.write_config()
    rig.emulator.reset(data=False)
    rig.emulator.set_faults(latency_ms=20)
    filled: list[Path] = []
    process = subprocess.Popen(
        [SYNCD, "sync", "--yes", "--config", str(rig.config)],
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_until(lambda: requests_to(rig.emulator, "import-employees") >= 3, "three batches")
        filled.append(fill(tmpfs))
        _, stderr = process.communicate(timeout=DEADLINE)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()

    assert process.returncode == EXIT_FAILED, stderr
    line = one_error(stderr)
    assert "disk is full" in line or "No space left" in line, line
    assert str(tmpfs) in line, line
    rig.emulator.set_faults()
    with closing(sqlite3.connect(rig.database)) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    # Nothing half-applied: every person the snapshot holds is on the platform, with that id.
    on_platform = {e["username"]: e["id"] for e in rig.emulator.state()["employees"]}
    for row in query(rig.database, "SELECT username, employee_id FROM employees"):
        assert on_platform.get(row["username"]) == row["employee_id"], row

    os.unlink(filled[0])
    again = rig.cli("sync", "--yes")
    assert again.returncode == EXIT_OK, again.stdout + again.stderr
    assert_nothing_twice(rig.emulator)
    assert_converged(rig)
    outcomes = [r["outcome"] for r in rig.runs()]
    assert outcomes[0] == "ok" and outcomes[-1] == "ok" and outcomes[1] in ("interrupted", "failed")


def test_a_full_disk_at_start_is_one_clear_error(rig: Rig, tmpfs: Path) -> None:
    assert rig.sync().exit_code == EXIT_OK
    before = tables(rig.database)
    rig.company.employees.append(employee("E9", "ivy", "D2"))
    rig.company.write(rig.folder)
    filler = fill(tmpfs)
    try:
        done = rig.cli("sync", "--yes")
    finally:
        filler.unlink()
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    line = one_error(done.stderr)
    assert str(tmpfs) in line, line
    assert "ivy" not in rig.platform().people
    assert tables(rig.database) == before
