"""The wheel, installed into a clean virtual environment outside the repository.

What an administrator does with a release: build it, `pip install` it into a new virtual
environment, and run syncd from some other folder. Without the emulator extra `syncd demo`
says what to install; with it, the demo syncs the packaged sample company into its own
emulator; `syncd init` writes settings and the unit files from the package's own data.
Dependencies come from PyPI (pip's cache, mostly) at the versions of constraints.txt. For
speed, the environment gets no pip of its own (this one's installs into it, `pip --python`)
and no bytecode at install time (Python writes what it imports).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from syncd.setup.init import UNITS_START
from tests.support.waiting import scaled

REPO = Path(__file__).resolve().parents[2]
CONSTRAINTS = REPO / "constraints.txt"


def test_the_wheel_runs_the_demo_and_init_from_a_clean_environment(tmp_path: Path) -> None:
    assert not tmp_path.is_relative_to(REPO)
    (wheel,) = build_wheel(tmp_path / "dist")
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python, syncd = venv / "bin" / "python", venv / "bin" / "syncd"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    pip += ["--no-compile", "--constraint", str(CONSTRAINTS)]
    work = tmp_path / "work"
    work.mkdir()

    run(*pip, str(wheel))
    imported = run(str(python), "-c", "import syncd; print(syncd.__file__)", cwd=work)
    assert Path(imported.stdout.strip()).is_relative_to(venv)

    without_extra = run(str(syncd), "demo", cwd=work, check=False)
    assert without_extra.returncode == 3
    assert without_extra.stderr.strip().splitlines() == [
        "error: syncd demo needs the platform emulator, which is not installed (fastapi, "
        "uvicorn missing): install syncd's emulator extra from the wheel or checkout syncd "
        f"came from: pip install '{wheel}[emulator]'"  # the very wheel, not a name on an index
    ]
    assert not (work / ".syncd").exists()

    run(*pip, f"syncd[emulator] @ {wheel.as_uri()}")
    demo = run(str(syncd), "demo", cwd=work)
    assert "run 1: ok (exit 0)" in demo.stdout and "run 2: ok (exit 0)" in demo.stdout
    assert (work / ".syncd" / "demo" / "report.html").is_file()

    # Settings for HR exports, checked against the demo's copy of the sample company.
    hr = work / "hr"
    hr.mkdir()
    run(str(syncd), "init", "--source", "csv", "hr/syncd.toml", cwd=work)
    settings = hr / "syncd.toml"
    assert settings.stat().st_mode & 0o777 == 0o600
    for name in ("employees.csv", "departments.csv"):
        (hr / name).write_bytes((work / ".syncd" / "demo" / name).read_bytes())
    check = run(str(syncd), "check", "--config", str(settings), cwd=work)
    assert "employees   40" in check.stdout and "rejected    0" in check.stdout

    again = run(str(syncd), "init", "hr/syncd.toml", cwd=work, check=False)
    assert again.returncode == 3
    assert "already exists: syncd init never overwrites a file" in again.stderr

    units = work / "units"
    units.mkdir()
    run(str(syncd), "init", "--units", str(units), cwd=work)
    shipped = sorted((REPO / "systemd").iterdir())
    assert [u.name for u in sorted(units.iterdir())] == [u.name for u in shipped]
    # The shipped units, each starting this environment's syncd.
    for unit in shipped:
        expected = unit.read_text(encoding="utf-8").replace(f"={UNITS_START} ", f"={syncd} ")
        assert (units / unit.name).read_text(encoding="utf-8") == expected


def build_wheel(dist: Path) -> list[Path]:
    """The sdist, and the wheel built from it: a file the sdist lacks is missing from both."""
    run(sys.executable, "-m", "build", "--outdir", str(dist), str(REPO))
    return sorted(dist.glob("syncd-*.whl"))


def run(
    *command: str, cwd: Path | None = None, check: bool = True, timeout: float = 240
) -> subprocess.CompletedProcess[str]:
    """A command in an environment that names neither this checkout nor its settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SYNCD_") and k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")
    }
    done = subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=scaled(timeout),
        check=False,
    )
    if check:
        assert done.returncode == 0, (
            f"{command}: exit {done.returncode}\n{done.stdout}{done.stderr}"
        )
    return done
