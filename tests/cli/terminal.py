"""``syncd`` at a terminal: a pseudo-terminal, and what its screen received."""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

import pexpect

from tests.daemon.support import DEADLINE, Site
from tests.support.cli import SYNCD

COLUMNS, ROWS = 100, 40
# Colours and styles; every other escape (cursor moves, line erases) ends a piece of line.
_STYLE = re.compile(r"\x1b\[[0-9;]*m")
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\r\n]")


def at_terminal(site: Site, *args: str, columns: int = COLUMNS) -> pexpect.spawn:
    """``syncd ARGS --config ...`` on a pseudo-terminal of 100 (or ``columns``) x 40,
    stdout and stderr both."""
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
    env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(ROWS))
    env.pop("JOURNAL_STREAM", None)
    child = pexpect.spawn(
        str(SYNCD),
        [*args, "--config", str(site.config)],
        env=env,
        encoding="utf-8",
        dimensions=(ROWS, columns),
        timeout=DEADLINE,
    )
    child.logfile_read = io.StringIO()  # everything the screen received
    return child


def shell_at_terminal(site: Site, command: str, columns: int = COLUMNS) -> pexpect.spawn:
    """A shell line typed at a pseudo-terminal, as a person types it (``syncd sync |
    tee sync.log``): ``syncd`` is this environment's, ``$CONFIG`` the site's settings."""
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
    env.update(TERM="xterm-256color", COLUMNS=str(columns), LINES=str(ROWS))
    env.update(PATH=f"{Path(SYNCD).parent}:{env.get('PATH', '')}", CONFIG=str(site.config))
    env.pop("JOURNAL_STREAM", None)
    child = pexpect.spawn(
        "/bin/sh",
        ["-c", command],
        env=env,
        cwd=str(site.root),
        encoding="utf-8",
        dimensions=(ROWS, columns),
        timeout=DEADLINE,
    )
    child.logfile_read = io.StringIO()
    return child


def finish(child: pexpect.spawn) -> tuple[int, str]:
    """Wait for the command to exit: its exit code and everything it wrote to the screen,
    colours and styles left out (cursor controls kept: ``pieces`` splits at them)."""
    child.expect(pexpect.EOF)
    child.close()
    assert isinstance(child.logfile_read, io.StringIO)
    return child.exitstatus or 0, _STYLE.sub("", child.logfile_read.getvalue())


def pieces(screen: str) -> list[str]:
    """The text between cursor controls, styles removed: what one write put on one line."""
    return [p for p in _CONTROL.split(screen) if p.strip()]
