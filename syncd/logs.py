"""Logging set-up, and the redaction every log line and error text goes through.

The access token travels in the query string (``?access_token=...``), and httpx logs
request URLs, so redaction happens when a log record is made, for every logger and
every handler, and once more on each formatted line (tracebacks included).

Lines are text or JSON (python-json-logger), on stderr. Under journald each carries its
priority (``<4>``) and text lines no time of their own; on a terminal that shows
progress bars they go through the bars' console, which prints them above the bars.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pythonjsonlogger.json import JsonFormatter
from rich.console import Console
from rich.highlighter import NullHighlighter
from rich.logging import RichHandler

MASK = "***"
_TOKEN_PARAM = re.compile(r"(access_token=)[^&\s\"'<>]+")
_secrets: set[str] = set()
_secrets_lock = threading.Lock()
_secret_pattern: re.Pattern[str] | None = None
_installed = False


def register_secret(value: str | None) -> None:
    """Mask this value wherever it would be logged or reported from now on."""
    global _secret_pattern
    if not value or len(value) < 4 or value in _secrets:
        return
    with _secrets_lock:
        _secrets.add(value)
        ordered = sorted(_secrets, key=len, reverse=True)
        _secret_pattern = re.compile("|".join(re.escape(s) for s in ordered))


def redact(text: str) -> str:
    """Text with every known secret and every access_token parameter masked."""
    text = _TOKEN_PARAM.sub(r"\g<1>" + MASK, text)
    pattern = _secret_pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return text


def install_redaction() -> None:
    """Redact every log record as it is made (idempotent)."""
    global _installed
    if _installed:
        return
    _installed = True
    make_record = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = make_record(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not hide the record
            record.msg, record.args = redact(str(record.msg)), None
            return record
        hidden = redact(message)
        if hidden == message:
            return record  # nothing to hide: as made (some formatters read its args)
        # Redacted part by part when that hides it all: uvicorn's access formatter unpacks
        # the arguments. Otherwise (a secret inside a URL object, say) merged into one text.
        if isinstance(record.args, tuple) and isinstance(record.msg, str):
            msg, parts = record.msg, record.args
            record.msg = redact(msg)
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in parts)
            try:
                if record.getMessage() == hidden:
                    return record
            except Exception:  # noqa: S110 - a masked argument broke a %d: merged below
                pass
        record.msg, record.args = hidden, None
        return record

    logging.setLogRecordFactory(factory)


class RedactingFilter(logging.Filter):
    """Redacts a record's format string and string arguments, leaving the rest as it is.

    For handlers of other programs' loggers, e.g. uvicorn's access log, whose formatter
    unpacks the arguments tuple (so they cannot be merged into the message, as
    ``install_redaction`` does).
    """

    def filter(self, record: logging.LogRecord) -> bool:
        if isinstance(record.msg, str):
            record.msg = redact(record.msg)
        if isinstance(record.args, tuple):
            record.args = tuple(redact(a) if isinstance(a, str) else a for a in record.args)
        elif isinstance(record.args, dict):
            record.args = {
                k: redact(v) if isinstance(v, str) else v for k, v in record.args.items()
            }
        return True


class _RedactingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


class _TextFormatter(_RedactingFormatter):
    """A human line with its time, local, in milliseconds and with the zone's offset
    (``2026-11-23 14:35:49.840 +0100``): a pipe or a file may be read far from the host."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s")

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        moment = datetime.fromtimestamp(record.created).astimezone()
        return moment.strftime(f"%Y-%m-%d %H:%M:%S.{int(record.msecs):03d} %z")


class _JsonFormatter(JsonFormatter):
    """One JSON object per line: ``time`` (local, with zone and milliseconds), ``level``,
    ``logger``, ``message``, then any context (``run_id``, ``action``, ``username``,
    ``department``) and ``error`` (a traceback) when there is one."""

    def __init__(self) -> None:
        super().__init__(
            ["asctime", "levelname", "name", "message"],
            rename_fields={
                "asctime": "time",
                "levelname": "level",
                "name": "logger",
                "exc_info": "error",
            },
            json_ensure_ascii=False,
        )

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        moment = datetime.fromtimestamp(record.created).astimezone()
        return moment.isoformat(timespec="milliseconds")

    def process_log_record(self, log_data: dict[str, Any]) -> dict[str, Any]:
        log_data["level"] = str(log_data.get("level", "")).lower()
        return log_data

    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


# ---------------------------------------------------------------- journald

# sd-daemon(3) priorities, written as "<N>" before a line the journal reads from a stream.
_PRIORITIES = ((logging.ERROR, 3), (logging.WARNING, 4), (logging.INFO, 6))
_DEBUG_PRIORITY = 7


def to_journal(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether stderr is a stream to the journal (systemd sets JOURNAL_STREAM to its dev:inode)."""
    expected = environ.get("JOURNAL_STREAM", "")
    try:
        found = os.fstat(sys.stderr.fileno())
    except (OSError, ValueError, AttributeError):  # no stderr, or one that is no file
        return False
    return expected == f"{found.st_dev}:{found.st_ino}"


def journal_prefix(levelno: int) -> str:
    """``<3>`` for an error, ``<4>`` a warning ... when stderr goes to the journal, else ""."""
    return _priority(levelno) if to_journal() else ""


def _priority(levelno: int) -> str:
    priority = next((p for level, p in _PRIORITIES if levelno >= level), _DEBUG_PRIORITY)
    return f"<{priority}>"


class _JournalFormatter(logging.Formatter):
    """Each line with its priority; no time (the journal stamps every line itself)."""

    def __init__(self, inner: logging.Formatter) -> None:
        super().__init__()
        self.inner = inner

    def format(self, record: logging.LogRecord) -> str:
        prefix = _priority(record.levelno)
        # A traceback spans lines: each must carry the priority, or it falls back to info.
        return "\n".join(prefix + line for line in self.inner.format(record).splitlines())


# ---------------------------------------------------------------- context fields

_context: dict[str, Any] = {}


@contextmanager
def log_context(**fields: Any) -> Iterator[None]:
    """Add these fields (``run_id=12``) to every record logged meanwhile, from any thread;
    ``add_log_fields`` adds more until the block ends.

    One run at a time per process (the run lock): the context is process-wide, so the
    threads that send batches carry it too.
    """
    saved = dict(_context)
    _context.update(fields)
    try:
        yield
    finally:
        _context.clear()
        _context.update(saved)


def add_log_fields(**fields: Any) -> None:
    """Fields for the records of the enclosing ``log_context`` from now on (a run's id, once
    it has one)."""
    _context.update(fields)


class _ContextFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name, value in _context.items():
            if not hasattr(record, name):
                setattr(record, name, value)
        return True


# ---------------------------------------------------------------- set-up


_format = "text"  # what setup_logging was last asked for


def log_format() -> str:
    """``text`` or ``json``: the format the logs are written in now. In ``json`` everything
    syncd says on stderr, a fatal error and a settings warning too, is a JSON log line."""
    return _format


def setup_logging(level: str = "INFO", fmt: str = "text", console: Console | None = None) -> None:
    """Send syncd's logs to stderr, as human lines or JSON; quiet the HTTP libraries.

    Under journald each line carries its priority and no time. With ``console`` (a
    terminal showing progress bars), text lines are printed through it, above the bars.
    """
    global _format
    _format = fmt
    install_redaction()
    handler: logging.Handler
    formatter: logging.Formatter = _JsonFormatter() if fmt == "json" else _TextFormatter()
    if to_journal():
        inner = formatter if fmt == "json" else _RedactingFormatter("%(name)s: %(message)s")
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_JournalFormatter(inner))
    elif console is not None and fmt == "text":
        handler = RichHandler(
            console=console,
            show_path=False,
            highlighter=NullHighlighter(),
            keywords=[],
            log_time_format="%H:%M:%S",
        )
        handler.setFormatter(_RedactingFormatter("%(message)s"))
    else:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(formatter)
    handler.addFilter(_ContextFilter())
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_syncd", False):  # replace our own handler, leave others' alone
            root.removeHandler(old)
    setattr(handler, "_syncd", True)  # noqa: B010 - an attribute no handler class declares
    root.addHandler(handler)
    root.setLevel(level)
    # Set both ways: a reload (SIGHUP) to DEBUG must make them speak again.
    quiet = logging.WARNING if level != "DEBUG" else logging.NOTSET
    for noisy in ("httpx", "httpcore", "apscheduler", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(quiet)


class LogProgress:
    """A run's progress as one log line per phase of the apply (the daemon's)."""

    def __init__(self, logger: logging.Logger) -> None:
        self.log = logger

    def step(self, doing: str, read: int | None = None) -> None:
        pass

    def phase(self, name: str, total: int) -> None:
        self.log.info("%s: %d items", name, total)

    def advance(self, n: int) -> None:
        pass
