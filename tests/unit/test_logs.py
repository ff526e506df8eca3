"""Redaction: secrets and access tokens never reach a log line."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from syncd.logs import (
    RedactingFilter,
    add_log_fields,
    install_redaction,
    log_context,
    redact,
    register_secret,
    setup_logging,
)


def test_token_parameters_and_registered_secrets_are_masked() -> None:
    register_secret("hunter2-but-longer")
    text = "GET https://p/v1/x?access_token=abc.DEF-123&skip=0 failed with hunter2-but-longer"
    assert redact(text) == "GET https://p/v1/x?access_token=***&skip=0 failed with ***"


def test_every_logger_and_handler_sees_redacted_records() -> None:
    install_redaction()
    register_secret("the-app-secret-42")
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    logger = logging.getLogger("httpx.test")
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        logger.debug('HTTP Request: POST %s "%s"', "http://h/v1/t?access_token=tok123", "200 OK")
        logger.info("secret is %s", "the-app-secret-42")
    finally:
        logger.removeHandler(handler)
    output = stream.getvalue()
    assert "tok123" not in output and "the-app-secret-42" not in output
    assert output.count("***") == 2


def test_json_lines_are_redacted_too(capsys: pytest.CaptureFixture[str]) -> None:
    register_secret("json-secret-value")
    setup_logging("INFO", "json")
    logging.getLogger("syncd.test").warning("failed with json-secret-value")
    err = capsys.readouterr().err
    assert '"message": "failed with ***"' in err
    assert '"level": "warning"' in err
    setup_logging("INFO", "text")


def test_the_filter_redacts_arguments_and_keeps_them_a_tuple() -> None:
    # uvicorn's access log formatter unpacks record.args: they must stay a tuple.
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s"',
        ("127.0.0.1:5", "GET", "/v1/users?access_token=tok-42&skip=0"),
        None,
    )
    assert RedactingFilter().filter(record)
    assert record.args == ("127.0.0.1:5", "GET", "/v1/users?access_token=***&skip=0")


# ---------------------------------------------------------------- JSON lines

JSON_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d$")
TEXT_TIME = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3} [+-]\d{4} ")


def test_json_lines_carry_zoned_millisecond_times_and_the_run_context(
    capsys: pytest.CaptureFixture[str],
) -> None:
    setup_logging("DEBUG", "json")
    try:
        logger = logging.getLogger("syncd.test")
        with log_context(run_id=12):
            logger.info("read the source")
            add_log_fields(action="create")
            logger.debug("failed", extra={"username": "bob"})
        logger.info("after the run")
    finally:
        setup_logging("INFO", "text")
    first, second, after = (json.loads(line) for line in capsys.readouterr().err.splitlines())
    assert JSON_TIME.match(first["time"]), first["time"]
    assert first["level"] == "info" and first["logger"] == "syncd.test"
    assert first["run_id"] == 12 and "action" not in first
    assert second == {**second, "run_id": 12, "action": "create", "username": "bob"}
    assert "run_id" not in after


def test_a_traceback_goes_under_error(capsys: pytest.CaptureFixture[str]) -> None:
    setup_logging("INFO", "json")
    try:
        try:
            raise ValueError("boom")
        except ValueError:
            logging.getLogger("syncd.test").exception("it broke")
    finally:
        setup_logging("INFO", "text")
    entry = json.loads(capsys.readouterr().err)
    assert entry["message"] == "it broke"
    assert "ValueError: boom" in entry["error"]


# ---------------------------------------------------------------- journald


@contextmanager
def journal(path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """stderr is a file that JOURNAL_STREAM names, as systemd does for a unit's stderr.

    Entered in the test itself: pytest sets its own sys.stderr before each test phase.
    """
    with path.open("w", encoding="utf-8") as stream:
        found = os.fstat(stream.fileno())
        monkeypatch.setenv("JOURNAL_STREAM", f"{found.st_dev}:{found.st_ino}")
        monkeypatch.setattr(sys, "stderr", stream)
        try:
            yield
        finally:
            monkeypatch.undo()
            setup_logging("INFO", "text")


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_under_journald_lines_carry_their_priority_and_no_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fmt: str
) -> None:
    path = tmp_path / "journal"
    with journal(path, monkeypatch):
        setup_logging("DEBUG", fmt)
        logger = logging.getLogger("syncd.test")
        logger.debug("detail")
        logger.info("read 40 people")
        logger.warning("3 items failed")
        logger.error("run 5 failed")

    lines = path.read_text(encoding="utf-8").splitlines()
    assert [line[:3] for line in lines] == ["<7>", "<6>", "<4>", "<3>"]
    if fmt == "text":
        assert lines[2] == "<4>syncd.test: 3 items failed"  # the journal stamps the time
    else:
        assert json.loads(lines[2][3:])["message"] == "3 items failed"


def test_a_stream_that_is_not_the_journal_gets_plain_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("JOURNAL_STREAM", "1:2")  # inherited, but stderr was redirected since
    setup_logging("INFO", "text")
    logging.getLogger("syncd.test").warning("careful")
    line = capsys.readouterr().err
    assert not line.startswith("<") and " WARNING syncd.test: careful" in line
    assert TEXT_TIME.match(line), line  # read anywhere: with milliseconds and the zone
