"""The lowest versions pyproject.toml allows: installed together, syncd imports and syncs.

Every dependency's lower bound is a promise (issue 33: ``sqlalchemy>=2.0`` was declared
while ``snapshot/sql.py`` imported ``TupleAny``, which SQLAlchemy 2.0.36 lacks: syncd
installed and could not import). uv resolves the lowest version of each direct
dependency (``--resolution lowest-direct``) into a fresh virtual environment, outside the
repository, and ``syncd demo`` runs two real syncs against its own emulator there.
uv itself comes from PyPI, into that environment.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.install.test_wheel import REPO, run

INSTALL_S = 600  # resolving and installing ~40 packages, mostly from the cache


@pytest.mark.timeout(3 * INSTALL_S)
def test_the_lowest_allowed_versions_install_and_sync(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    python, syncd, uv = (venv / "bin" / name for name in ("python", "syncd", "uv"))
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"]
    run(*pip, "uv", timeout=INSTALL_S)
    lowest = [str(uv), "pip", "install", "--quiet", "--python", str(python)]
    lowest += ["--resolution", "lowest-direct", f"syncd[emulator] @ {REPO.as_uri()}"]
    run(*lowest, timeout=INSTALL_S)
    work = tmp_path / "work"
    work.mkdir()

    demo = run(str(syncd), "demo", cwd=work, timeout=INSTALL_S)

    assert "run 1: ok (exit 0)" in demo.stdout and "run 2: ok (exit 0)" in demo.stdout
    installed = run(str(uv), "pip", "list", "--python", str(python)).stdout
    found = {tuple(line.lower().split()[:2]) for line in installed.splitlines()}
    for lowest_allowed in ("sqlalchemy 2.0.14", "tenacity 8.3.0", "typer 0.28.0"):
        assert tuple(lowest_allowed.split()) in found, installed
