"""TLS: the emulator served over HTTPS with a self-signed certificate made by openssl."""

from __future__ import annotations

import logging
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import syncd.platform.client as client_module
from syncd.errors import ConfigError, PlatformUnavailable
from tests.platform.platform_helpers import Connect
from tests.support.https_emulator import serving_https
from tests.support.waiting import scaled


@dataclass(frozen=True)
class TlsEmulator:
    base_url: str
    ca_file: Path


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
        timeout=scaled(60),
    )
    return cert, key


@pytest.fixture(scope="module")
def tls_emulator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsEmulator]:
    cert, key = make_certificate(tmp_path_factory.mktemp("tls"))
    with serving_https(cert, key) as url:
        yield TlsEmulator(url, cert)


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
