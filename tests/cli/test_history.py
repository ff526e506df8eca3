"""Dry runs in the history: recorded, listed apart by ``status``, and pruned sooner."""

from __future__ import annotations

import sqlite3

from tests.cli.terminal import at_terminal, finish
from tests.daemon.support import EMPLOYEES, Site, write_csv

DAY_MS = 86_400_000


def age(site: Site, days: int, *run_ids: int) -> None:
    with sqlite3.connect(site.state_dir / "syncd.db") as db:
        for run_id in run_ids:
            db.execute(
                "UPDATE runs SET started_at = started_at - ?, finished_at = finished_at - ? "
                "WHERE id = ?",
                (days * DAY_MS, days * DAY_MS, run_id),
            )


def items_of(site: Site, run_id: int) -> int:
    with sqlite3.connect(site.state_dir / "syncd.db") as db:
        (n,) = db.execute("SELECT COUNT(*) FROM run_items WHERE run_id = ?", (run_id,)).fetchone()
        return int(n)


def test_dry_runs_are_kept_for_dry_run_keep_days_real_runs_for_keep_days(site: Site) -> None:
    site.configure(reports={"dry_run_keep_days": 2, "keep_days": 30})
    site.cli("sync", "--check")  # 1: dry
    site.cli("sync", "--yes")  # 2: real
    site.cli("sync", "--dry-run")  # 3: dry, nothing to do
    age(site, 3, 1, 2)
    assert items_of(site, 1) == 9

    site.cli("sync", "--check")  # 4: prunes the dry runs older than 2 days

    assert [(r["id"], r["mode"]) for r in site.runs()] == [
        (2, "apply"),
        (3, "dry_run"),
        (4, "dry_run"),
    ]
    assert items_of(site, 1) == 0


def test_status_lists_real_runs_and_the_last_dry_run_apart(site: Site) -> None:
    site.cli("sync", "--yes")
    for _ in range(6):
        site.cli("sync", "--check")

    status = site.cli("status")

    lines = status.stdout.splitlines()
    runs = lines[lines.index("last runs") + 1 : lines.index("last dry run")]
    assert len(runs) == 1 and runs[0].split()[0] == "1" and " ok " in runs[0]
    assert lines[lines.index("last dry run") + 1].split()[0] == "7"


def test_reports_list_at_80_columns_keeps_what_locks_removes_or_deletes(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0  # 1: creates
    write_csv(site.root, [EMPLOYEES[0], EMPLOYEES[1], EMPLOYEES[4]])  # carol, dave, frank leave
    departments = site.root / "departments.csv"  # and Backend (D3) goes: deleted
    departments.write_text(departments.read_text(encoding="utf-8").replace("D3,Backend,D2\n", ""))
    site.configure(sync={"max_removal_ratio": 1.0, "leaver_policy": "remove"})
    done = site.cli("sync", "--yes")
    assert done.returncode == 0, done.stdout + done.stderr

    code, screen = finish(at_terminal(site, "reports", "list", columns=80))

    assert code == 0, screen
    lines = [line.rstrip() for line in screen.replace("\r", "").split("\n")]
    assert all(len(line) <= 80 for line in lines), screen
    header = next(line.split() for line in lines if line.split()[:1] == ["id"])
    assert {"removed", "locked", "deleted"} <= set(header), screen
    row = next(line.split() for line in lines if line.split()[:1] == ["2"])
    value = dict(zip(header[2:], row[3:], strict=False))  # "started" is two words
    assert (value["removed"], value["deleted"], value["locked"]) == ("3", "1", "0"), screen
