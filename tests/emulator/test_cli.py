"""``syncd emulator``: serves in the foreground and saves its state when stopped."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from syncd.emulator import EmulatorOptions
from tests.support.payloads import dept
from tests.support.waiting import scaled

from .support import ORG

STARTED = "Application startup complete."


@pytest.mark.slow  # the emulator command as a process
def test_the_command_serves_and_saves_on_sigterm(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    command = [
        str(Path(sys.executable).parent / "syncd"),
        "emulator",
        "--port",
        "0",
        "--state-file",
        str(state_file),
        "--api-version",
        "v3",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stderr is not None and process.stdout is not None
        lines = []
        for line in process.stderr:  # wait for uvicorn to say it is ready
            lines.append(line)
            if STARTED in line:
                break
        found = re.search(r"http://127\.0\.0\.1:\d+", "".join(lines))
        assert found, lines
        with httpx.Client(base_url=found.group(0)) as client:
            body = EmulatorOptions().token_request()  # the defaults `syncd emulator` serves
            token = client.post("/v1/token", json=body).json()["result"]["access_token"]
            answer = client.post(
                f"{ORG}/import-orgs", params={"access_token": token}, json=[dept("R&D")]
            ).json()
            assert answer["result"]["successes"]
            disable = client.post(f"{ORG}/employees/1/disable", params={"access_token": token})
            assert disable.status_code == 404  # --api-version v3
        process.send_signal(signal.SIGTERM)
        # uvicorn shuts down cleanly, then re-raises the signal it caught.
        assert process.wait(timeout=scaled(30)) in (0, -signal.SIGTERM)
        log = "".join(lines) + process.stderr.read() + process.stdout.read()
        # One access line per request, the token masked (never a logging traceback).
        assert "Logging error" not in log
        assert re.search(r'"POST /v1/\S+/import-orgs\?access_token=\*\*\* HTTP/1.1" 200', log)
        assert token not in log
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    saved = json.loads(state_file.read_text())
    assert [n["name"] for n in saved["nodes"]] == ["Acme", "R&D"]
