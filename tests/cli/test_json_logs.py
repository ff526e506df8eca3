"""JSON logs as a log shipper reads them: every line on stderr parsed as JSON, the fatal
error and a daemon that cannot start included; failures name who failed; status times
carry their zone."""

from __future__ import annotations

import json
import re
from typing import Any

from syncd.emulator import RunningEmulator
from tests.daemon.support import Site

# A date and time anywhere in a value: it must say its zone (+0100, +01:00 or Z).
MOMENT = re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d(\.\d+)?)?(?P<zone> ?[+-]\d\d:?\d\d|Z)?")


def json_lines(stderr: str) -> list[dict[str, Any]]:
    """Every line of stderr as JSON: a line that is not fails the test, naming it."""
    lines = []
    for line in stderr.splitlines():
        try:
            lines.append(json.loads(line))
        except json.JSONDecodeError:
            raise AssertionError(f"not a JSON line: {line!r}") from None
    return lines


def test_a_broken_settings_file_is_told_as_json_by_sync_and_by_the_daemon(site: Site) -> None:
    site.configure(log_format="json", sync={"max_removalz": 3})  # a typo: the file is invalid

    for command in ("sync", "run"):
        result = site.cli(command)

        assert result.returncode == 3, result.stderr
        errors = [line for line in json_lines(result.stderr) if line["level"] == "error"]
        assert len(errors) == 1, result.stderr
        assert str(site.config) in errors[0]["message"]
        assert "max_removalz" in errors[0]["message"]
        if command == "run":
            assert "syncd daemon cannot start" in errors[0]["message"]
        else:
            assert errors[0]["problem"] == "error" and errors[0]["exit_code"] == 3


def test_the_warning_about_failed_items_names_who_failed(
    site: Site, emulator: RunningEmulator
) -> None:
    rule = {"field": "username", "pattern": "^(alice|bob|carol)$", "message": "rejected by rule"}
    emulator.set_faults(reject=[rule])
    site.configure(log_format="json")

    result = site.cli("sync", "--yes")

    assert result.returncode == 1, result.stderr
    (warning,) = [
        line
        for line in json_lines(result.stderr)
        if line["level"] == "warning" and "rejected by rule" in line["message"]
    ]
    assert warning["count"] == 3 and warning["reason"] == "rejected by rule"
    assert [name.split()[0] for name in warning["failed"]] == ["alice", "bob", "carol"]
    assert all(name in warning["message"] for name in ("alice", "bob", "carol"))


def test_every_time_status_shows_carries_its_zone(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    service = site.start()
    service.ready()
    service.notify.status("next run")

    status = site.cli("status", "--output", "json")
    service.stop()

    found = json.loads(status.stdout)
    moments: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)
        elif isinstance(value, str):
            moments.extend(m.group(0) for m in MOMENT.finditer(value))
            if any(m.group("zone") is None for m in MOMENT.finditer(value)):
                raise AssertionError(f"a time without its zone: {value!r}")

    walk(found)
    assert "next run " in found["daemon"]["status"], found  # a time in words
    assert len(moments) >= 4, moments  # started_at, next_run, the runs' times, the status
