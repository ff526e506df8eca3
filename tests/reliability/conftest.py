"""Fixtures of the reliability tests: a configurable site on the shared emulator, a slapd.

Test modules take what they need from fixtures and ``.support``; the slapd here is this
directory's own (module-scoped where a test stops it, session-scoped otherwise).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from syncd.emulator import RunningEmulator
from syncd.errors import EXIT_OK
from tests.engine.company import small_company
from tests.support.admin import AnotherAdmin
from tests.support.runs import plan_of
from tests.support.slapd import Slapd, TlsFiles, make_tls_files, running_slapd

from .support import Rig

SUFFIX = "dc=acme,dc=example"


@pytest.fixture
def rig(tmp_path: Path, emulator: RunningEmulator) -> Rig:
    return Rig(tmp_path, emulator, small_company())


@pytest.fixture(scope="session")
def reliability_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("reliability-tls"))


@pytest.fixture(scope="session")
def ldap_server(
    tmp_path_factory: pytest.TempPathFactory, reliability_tls: TlsFiles
) -> Iterator[Slapd]:
    """This directory's slapd (ldap:// and ldaps://); tests that stop it start it again."""
    with running_slapd(
        tmp_path_factory.mktemp("reliability-slapd"), suffix=SUFFIX, tls=reliability_tls
    ) as server:
        yield server


@pytest.fixture
def ldap(ldap_server: Slapd) -> Iterator[Slapd]:
    """The slapd, running again after the test whatever the test did to it."""
    yield ldap_server
    ldap_server.start()


@pytest.fixture(autouse=True)
def _syncd_logging_restored() -> Iterator[None]:
    """The command line run in-process installs its own log handler: take it away after."""
    root = logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if getattr(handler, "_syncd", False):
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture
def synced(rig: Rig) -> Rig:
    """The small company synced, and verified by a second run with nothing to do (a test
    module may shape its own ``synced``)."""
    rig.sync_settings.update(max_removal_ratio=1.0)
    assert rig.sync().exit_code == EXIT_OK
    assert plan_of(rig.sync()).changes == ()
    return rig


@pytest.fixture
def admin(rig: Rig) -> AnotherAdmin:
    """Another administrator, changing the platform behind syncd's back."""
    return AnotherAdmin(rig.emulator)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The identity campaign's figures (histories, runs, events, violations), when it ran."""
    for name, module in list(sys.modules.items()):
        if name.endswith("test_identity_campaign"):
            for line in module.summary():
                terminalreporter.write_line(line)
