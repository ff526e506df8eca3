"""``--output json``: one document of a stable shape (README, "Output for scripts")."""

from __future__ import annotations

import json
from typing import Any

from tests.daemon.support import Site

RUN_KEYS = {
    "run_id", "dry_run", "outcome", "exit_code", "error", "source", "planned", "changes",
    "departments", "notes", "guards", "applied", "failures", "scheduled",
}  # fmt: skip
CHANGE_KEYS = {"kind", "action", "key", "display", "message", "before", "after"}


def document(site: Site, *args: str) -> tuple[int, dict[str, Any]]:
    result = site.cli(*args, "--output", "json")
    parsed: dict[str, Any] = json.loads(result.stdout)  # stdout holds the document alone
    return result.returncode, parsed


def test_a_dry_run_as_json(site: Site) -> None:
    code, run = document(site, "sync", "--dry-run", "--show", "4")

    assert code == 0
    assert set(run) == RUN_KEYS
    assert run["dry_run"] is True and run["outcome"] == "ok" and run["error"] is None
    assert run["source"] == {"read": "full", "departments": 3, "employees": 6, "rejected": 0}
    assert run["planned"] == {"create": 9}
    assert len(run["changes"]) == 4  # --show limits the list, not the counts
    first = run["changes"][0]
    assert set(first) == CHANGE_KEYS
    assert first["action"] == "create" and first["before"] is None
    assert first["after"]["name"] in ("Sales", "Engineering")
    # Departments keep their source ids in the fields; "departments" names the ones listed.
    backend, alice = run["changes"][2:4]
    assert backend["after"]["parent"] == "D2"
    assert alice["after"]["positions"][0]["department"] == "D1"
    assert run["departments"] == {"D1": "Acme/Sales", "D2": "Acme/Engineering"}
    assert {g["name"] for g in run["guards"]} >= {"max_removals"}
    assert all(g["passed"] for g in run["guards"])
    assert run["applied"] is None and run["failures"] == []


def test_a_sync_with_failures_as_json(site: Site) -> None:
    rule = {"field": "username", "pattern": "^bob$", "message": "rejected by rule"}
    site.emulator.set_faults(reject=[rule])

    code, run = document(site, "sync", "--yes")

    assert code == 1
    assert run["outcome"] == "partial" and run["exit_code"] == 1
    assert run["applied"] == {"failed": {"create": 1}, "ok": {"create": 8}}
    assert run["failures"] == [{"error": "rejected by rule", "count": 1}]


def test_a_failed_run_as_json_carries_its_error(site: Site) -> None:
    site.emulator.set_faults(down=True)
    site.configure(platform={"retry_attempts": 1})

    code, run = document(site, "sync", "--dry-run")

    assert code == 3
    assert run["outcome"] == "failed" and run["planned"] == {} and run["changes"] == []
    assert "unavailable" in run["error"] or "503" in run["error"]


def test_check_as_json(site: Site) -> None:
    with (site.root / "employees.csv").open("a", encoding="utf-8") as employees:
        employees.write("E9,,Nobody,D1\n")  # no username: rejected

    code, found = document(site, "check")

    assert code == 0
    assert found["departments"] == 3 and found["employees"] == 6 and found["departed"] == 0
    assert found["read"] == "full" and found["source"].startswith("csv:")
    (rejected,) = found["rejected"]
    assert rejected["kind"] == "employee" and rejected["where"].endswith("employees.csv:8")
    assert "username" in rejected["reason"]


def test_status_as_json_without_a_daemon(site: Site) -> None:
    site.cli("sync", "--yes")
    site.cli("sync", "--dry-run")

    code, status = document(site, "status")

    assert code == 0  # the timer's set-up: shell syncs, no daemon expected
    assert status["healthy"] is True and status["exit_code"] == 0 and status["problem"] is None
    assert status["daemon_expected"] is False
    assert status["daemon"] is None and status["run_lock"] is None
    (run,) = status["runs"]
    assert run["id"] == 1 and run["outcome"] == "ok" and run["dry_run"] is False
    assert run["started_at"][10] == "T" and run["started_at"][-6] in "+-"  # ISO, with its zone
    assert status["last_dry_run"]["id"] == 2
    assert status["last_success"] == run["finished_at"]
