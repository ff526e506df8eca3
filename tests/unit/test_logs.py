"""Redaction: secrets and access tokens never reach a log line."""

from __future__ import annotations

import io
import logging

from syncd.logs import (
    RedactingFilter,
    install_redaction,
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


def test_json_lines_are_redacted_too(capsys: object) -> None:
    register_secret("json-secret-value")
    setup_logging("INFO", "json")
    logging.getLogger("syncd.test").warning("failed with json-secret-value")
    err = capsys.readouterr().err  # type: ignore[attr-defined]
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
