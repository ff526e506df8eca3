"""Fixtures of the command-line tests: the daemon tests' ``site`` (CSV source, settings,
state directory, the processes it started killed at teardown)."""

from __future__ import annotations

from tests.daemon.conftest import site

__all__ = ["site"]
