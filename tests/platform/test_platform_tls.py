"""TLS: the emulator served over HTTPS with a self-signed certificate made by openssl."""

from __future__ import annotations

import logging
import shutil
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import uvicorn

import syncd.platform.client as client_module
from syncd.emulator import EmulatorOptions, create_app
from syncd.errors import ConfigError, PlatformUnavailable
from tests.platform.platform_helpers import Connect


@dataclass(frozen=True)
class TlsEmulator:
    base_url: str
    ca_file: Path


class _Server(uvicorn.Server):
    """Says when start-up is over, so the fixture waits on an event, not on time."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.startup_over = threading.Event()

    async def startup(self, sockets: list | None = None) -> None:  # type: ignore[type-arg]
        try:
            await super().startup(sockets=sockets)
        finally:
            self.startup_over.set()


def make_certificate(folder: Path) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed: no certificate for the TLS tests")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            str(key),
            "-out",
            str(cert),
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsEmulator]:
    cert, key = make_certificate(tmp_path_factory.mktemp("tls"))
    config = uvicorn.Config(
        create_app(EmulatorOptions()),
        host="127.0.0.1",
        port=0,
        log_config=None,
        access_log=False,
        log_level="warning",
        ssl_certfile=str(cert),
        ssl_keyfile=str(key),
        http="h11",
        loop="asyncio",
    )
    server = _Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    assert server.startup_over.wait(15) and server.started
    port = server.servers[0].sockets[0].getsockname()[1]
    yield TlsEmulator(f"https://127.0.0.1:{port}", cert)
    server.should_exit = True
    thread.join(15)


def test_unknown_certificate_is_refused_at_once(
    connect: Connect, tls_emulator: TlsEmulator
) -> None:
    client = connect(base_url=tls_emulator.base_url)
    with pytest.raises(PlatformUnavailable) as caught:
        client.root()
    assert "TLS certificate verification failed" in str(caught.value)
    assert "platform.ca_file" in str(caught.value)
    assert client.calls["POST /v1/token"] == 1  # no retry can cure it
    assert client.retries == 0


def test_ca_file_makes_the_certificate_trusted(connect: Connect, tls_emulator: TlsEmulator) -> None:
    client = connect(base_url=tls_emulator.base_url, ca_file=tls_emulator.ca_file)
    assert client.root().name == "Acme"


def test_verification_off_works_and_warns_once(
    connect: Connect,
    tls_emulator: TlsEmulator,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(client_module, "_insecure_warned", False)
    caplog.set_level(logging.WARNING, logger="syncd")
    first = connect(base_url=tls_emulator.base_url, verify_tls=False)
    second = connect(base_url=tls_emulator.base_url, verify_tls=False)
    assert first.root().name == "Acme" and second.root().name == "Acme"
    warnings = [r for r in caplog.records if "VERIFICATION IS OFF" in r.getMessage()]
    assert len(warnings) == 1 and warnings[0].levelno == logging.WARNING


def test_missing_ca_file_is_a_config_error(
    connect: Connect, tls_emulator: TlsEmulator, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"platform\.ca_file"):
        connect(base_url=tls_emulator.base_url, ca_file=tmp_path / "missing.pem")
