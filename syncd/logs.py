"""Logging set-up, and the redaction every log line and error text goes through.

The access token travels in the query string (``?access_token=...``), and httpx logs
request URLs, so redaction happens when a log record is made, for every logger and
every handler, and once more on each formatted line (tracebacks included).
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
from typing import Any

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
            message = str(record.msg)
        record.msg, record.args = redact(message), None
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


class _JsonFormatter(logging.Formatter):
    """One JSON object per line, for journald and log shippers."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        run_id = getattr(record, "run_id", None)
        if run_id is not None:
            entry["run_id"] = run_id
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, ensure_ascii=False))


def setup_logging(level: str = "INFO", fmt: str = "text") -> None:
    """Send syncd's logs to stderr, as human lines or JSON; quiet the HTTP libraries."""
    install_redaction()
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_JsonFormatter())
    else:
        handler.setFormatter(
            _RedactingFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s")
        )
    root = logging.getLogger()
    for old in list(root.handlers):
        if getattr(old, "_syncd", False):  # replace our own handler, leave others' alone
            root.removeHandler(old)
    handler._syncd = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level)
    # Set both ways: a reload (SIGHUP) to DEBUG must make them speak again.
    quiet = logging.WARNING if level != "DEBUG" else logging.NOTSET
    for noisy in ("httpx", "httpcore", "apscheduler", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(quiet)
