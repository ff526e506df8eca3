"""Shared fixtures.

``emulator``: the platform emulator (one server for the whole session, on a free
loopback port), reset before each test: no data but the root node, no faults, no
statistics, no tokens. It is a ``syncd.emulator.RunningEmulator``: ``base_url``,
``options``, and helpers ``state()``, ``stats()``, ``set_faults(**rules)``,
``reset(data=True)``, ``issue_token()``, ``token_request()``, ``advance_clock(seconds)``.

``postgres_server``, ``postgres_url``, ``engine_kind``, ``store_url``: a real PostgreSQL
(tests/support/postgres.py), and the tests that run once per state database engine.

Tiers: ``servers`` (slapd, Samba AD, PostgreSQL) and ``slow`` (syncd as processes) are
marked here, from the fixtures a test uses and its folder; ``make check`` runs the rest
(``-m "not slow and not servers"``), ``make test`` everything. ``TEST_TIME_FACTOR=3``
scales every timeout of the tests (tests/support/waiting.py), pytest-timeout's too;
``--hypothesis-profile=check`` (make check) tries a tenth of every property's examples
(tests/support/examples.py).

``--long`` runs the tests marked ``long`` (slow variants: more crash points, bigger
companies); without it they are skipped, so the default suite stays within CI's minutes.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

from tests.support.examples import CHECK, DEEP, FULL, SUITE
from tests.support.postgres import (  # noqa: F401 - fixtures for every test
    engine_kind,
    postgres_server,
    postgres_url,
    store_url,
)
from tests.support.waiting import TIME_FACTOR

if TYPE_CHECKING:
    # Imported by the fixture: fastapi is a second of every pytest process's start, and
    # pytest-xdist's controller, which runs no test, loads this file too.
    from syncd.emulator import RunningEmulator


# No property fails for its time (hypothesis's deadline is a timing assertion: a loaded
# machine breaks it). make check's profile (--hypothesis-profile=check) tries a tenth of
# every property's examples (tests/support/examples.py); the whole suite, every example.
settings.register_profile(SUITE, deadline=None)
settings.register_profile(CHECK, parent=settings.get_profile(SUITE), max_examples=FULL // 10)
settings.register_profile(DEEP, parent=settings.get_profile(SUITE), max_examples=FULL * 20)
settings.load_profile(SUITE)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--long", action="store_true", default=False, help="also run the tests marked long"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """pytest-timeout's limit scaled by TEST_TIME_FACTOR, as every other timeout is."""
    if TIME_FACTOR != 1:
        limit = config.getoption("timeout", None) or config.getini("timeout") or 0
        config.option.timeout = float(limit) * TIME_FACTOR


# The tiers (docs/development.md): a test's marks follow from where it is and what it uses.
# servers: it starts slapd, Samba AD or PostgreSQL (session fixtures; Samba on 389/636),
# the PostgreSQL turn of a test run once per engine included.
# slow: it runs syncd as processes, at pseudo-terminals, or whole histories of runs (the
# folders below; a test elsewhere that starts a process of syncd's is marked so itself).
SERVER_FIXTURES = frozenset({"slapd", "samba_dc", "postgres_server"})
SLOW_FOLDERS = frozenset({"cli", "daemon", "ha", "install", "reliability"})


def on_postgresql(item: pytest.Item) -> bool:
    """A test run once per state database engine, in its PostgreSQL turn: it starts the
    server through ``store_url`` (getfixturevalue), which its fixture names do not show.
    Its SQLite turn stays in the fast tier."""
    callspec = getattr(item, "callspec", None)
    return callspec is not None and callspec.params.get("engine_kind") == "postgresql"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if SERVER_FIXTURES & set(getattr(item, "fixturenames", ())) or on_postgresql(item):
            item.add_marker(pytest.mark.servers)
        if item.path.parent.name in SLOW_FOLDERS or "long" in item.keywords:
            item.add_marker(pytest.mark.slow)
    if config.getoption("--long"):
        return
    skip = pytest.mark.skip(reason="a slow variant: run with --long")
    for item in items:
        if "long" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def emulator_server() -> Iterator[RunningEmulator]:
    from syncd.emulator import EmulatorOptions, serve_in_thread

    with serve_in_thread(EmulatorOptions()) as running:
        yield running


@pytest.fixture
def emulator(emulator_server: RunningEmulator) -> RunningEmulator:
    emulator_server.reset(data=True)
    return emulator_server


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The convergence, identity and forest suites' figures (scenarios, events, ...), when
    they ran."""
    for name, module in list(sys.modules.items()):
        if name.endswith(("test_convergence_suite", "test_identity_suite", "test_ad_forest")):
            for line in module.summary():
                terminalreporter.write_line(line)
