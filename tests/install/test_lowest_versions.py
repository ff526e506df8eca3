"""The oldest releases pyproject.toml allows, installed into a clean environment, sync for real.

constraints.txt holds the newest releases, which every other test runs on; an administrator
whose host already has older ones gets whatever the lower bounds allow. So: the wheel, with
its emulator extra, installed by ``uv pip install --resolution lowest-direct`` (each of
syncd's own dependencies at the lowest release its bound allows, theirs at the newest), and
a real ``syncd sync --yes`` of the packaged sample company, logged as JSON lines, into an
emulator served by that same environment on loopback (and the daemon's modules imported).
Every lower bound must be the version installed: a bound that no resolution can reach
(another dependency asks for more) is a bound nobody tested.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from packaging.requirements import Requirement
from packaging.version import Version

from syncd.emulator import EmulatorOptions
from syncd.setup.demo import prepare
from tests.install.test_wheel import REPO, build_wheel, run

STARTED = "Application startup complete."
UV = Path(sys.executable).parent / "uv"


@pytest.mark.timeout(600)  # a wheel built, an environment resolved and installed: not quick
def test_the_lowest_allowed_versions_install_and_sync_the_sample(tmp_path: Path) -> None:
    assert not tmp_path.is_relative_to(REPO)
    (wheel,) = build_wheel(tmp_path / "dist")
    venv = tmp_path / "venv"
    try:
        install_and_sync(wheel, venv, tmp_path / "work")
    finally:
        shutil.rmtree(venv, ignore_errors=True)  # the emulator has stopped: nothing of it kept


def install_and_sync(wheel: Path, venv: Path, work: Path) -> None:
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python, syncd = venv / "bin" / "python", venv / "bin" / "syncd"
    # The wheel's own dependencies count as direct only when named on the command line.
    run(str(UV), "pip", "install", "--quiet", "--python", str(python),
        "--resolution", "lowest-direct", f"syncd[emulator] @ {wheel.as_uri()}",
        *requirements())  # fmt: skip

    bounds, installed = lower_bounds(), installed_versions(python)
    unreached = {
        name: f"{installed[name]} installed" for name in bounds if installed[name] != bounds[name]
    }
    assert not unreached, f"lower bounds no resolution reaches (raise them): {unreached}"
    # What the sync below does not import: the daemon and its scheduler (apscheduler).
    run(str(python), "-c", "import syncd.service.daemon, syncd.config.cron", cwd=work.parent)
    with emulator(syncd) as base_url:
        # The demo's settings: the packaged sample company, synced into the emulator.
        settings = prepare(work / "sample", base_url, EmulatorOptions().client_secret)
        # Logged as JSON lines (python-json-logger), as a service's journal takes them.
        text = settings.read_text(encoding="utf-8")
        settings.write_text(f'log_format = "json"\n{text}', encoding="utf-8")
        sync = run(str(syncd), "sync", "--yes", "--config", str(settings), cwd=work)
        with httpx.Client(base_url=base_url, timeout=30) as client:
            state = client.get("/_emulator/state").json()["result"]
    assert sync.returncode == 0
    logged = [json.loads(line) for line in sync.stderr.splitlines()]
    assert logged and all(line["level"] and line["message"] for line in logged)
    platform = {e["username"] for e in state["employees"] if not e["locked"]}
    assert platform == sample_people(work / "sample" / "employees.csv")


def requirements() -> list[str]:
    """syncd's runtime and emulator dependencies, as pyproject.toml declares them."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["emulator"]]


def lower_bounds() -> dict[str, Version]:
    """Each runtime and emulator dependency's lower bound (``>=``), by package name."""
    bounds: dict[str, Version] = {}
    for line in requirements():
        requirement = Requirement(line)
        (lowest,) = [s.version for s in requirement.specifier if s.operator == ">="]
        bounds[canonical(requirement.name)] = Version(lowest)
    return bounds


def installed_versions(python: Path) -> dict[str, Version]:
    """The versions the environment holds of the packages ``lower_bounds`` names."""
    names = sorted(lower_bounds())
    script = "import json, sys; from importlib.metadata import version; "
    script += "print(json.dumps({n: version(n) for n in sys.argv[1:]}))"
    found = json.loads(run(str(python), "-c", script, *names).stdout)
    return {name: Version(v) for name, v in found.items()}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def sample_people(employees: Path) -> set[str]:
    """The usernames of the people the sample lists as employed (在职)."""
    lines = employees.read_text(encoding="utf-8").splitlines()
    header = lines[0].split(",")
    rows = [dict(zip(header, line.split(","), strict=True)) for line in lines[1:]]
    people = {row["username"] for row in rows if row["status"] == "在职"}
    assert len(people) == 39  # the sample company, less the one who left before any sync
    return people


@contextmanager
def emulator(syncd: Path) -> Iterator[str]:
    """``syncd emulator`` of the environment under test on a free loopback port: its URL.
    Stopped (and waited for) on the way out, whatever happened."""
    process = subprocess.Popen(
        [str(syncd), "emulator", "--port", "0"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        lines = []
        for line in process.stderr:  # uvicorn says when it is ready
            lines.append(line)
            if STARTED in line:
                break
        found = re.search(r"http://127\.0\.0\.1:\d+", "".join(lines))
        assert found, "".join(lines)
        # Its access log, read to the end so that a full pipe never stalls it.
        threading.Thread(target=process.stderr.read, daemon=True).start()
        yield found.group(0)
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
