"""``syncd sync`` at a terminal, through a pseudo-terminal: what the admin sees, in order."""

from __future__ import annotations

import io
import json
import os
import re
from pathlib import Path

import pexpect
import pytest
from rich.cells import cell_len

from syncd.emulator import RunningEmulator
from tests.daemon.support import DEADLINE, EMPLOYEES, Site, write_csv
from tests.support.cli import SYNCD
from tests.support.traffic import requests_to

from .terminal import at_terminal, finish, pieces, shell_at_terminal

BAR = "━"


def test_the_plan_and_the_guards_show_then_it_asks_before_the_apply_starts(site: Site) -> None:
    child = at_terminal(site, "sync")
    child.expect("Enter a value: ")
    asked = pieces(child.logfile_read.getvalue())
    assert not any("create departments" in p for p in asked), asked  # nothing sent yet
    assert site.runs()[0]["outcome"] == "running"
    child.sendline("yes")
    code, screen = finish(child)

    assert code == 0, screen
    read = screen.index("read 6 employees and 3 departments (full read), 0 rows rejected")
    plan = screen.index("plan: 9 to create")
    guard = screen.index("guard max_removals: ok")
    question = screen.index("Apply these changes? Only 'yes' goes ahead")
    bars = screen.index("create departments")  # the first bar (the plan says "department")
    applied = screen.index("applied: 9 create")
    assert read < plan < guard < question < bars < applied
    assert screen.index("run 1: ok (exit 0)") > applied


@pytest.mark.parametrize("answer", ["no", "y", "YES please", "", "\x03", "\x04"])
def test_anything_but_yes_at_the_prompt_sends_nothing(
    site: Site, emulator: RunningEmulator, answer: str
) -> None:
    child = at_terminal(site, "sync")
    child.expect("Enter a value: ")
    if answer in ("\x03", "\x04"):  # Ctrl-C, Ctrl-D
        child.send(answer)
    else:
        child.sendline(answer)
    code, screen = finish(child)

    assert code == 1, screen
    assert "not applied: the plan was declined; nothing was sent" in screen
    assert site.runs()[0]["outcome"] == "interrupted"
    assert requests_to(emulator, "/import-") == 0


def test_yes_applies_without_asking_at_a_terminal_and_through_a_pipe(site: Site) -> None:
    code, screen = finish(at_terminal(site, "sync", "--yes"))
    assert code == 0, screen
    assert "Enter a value" not in screen and "applied: 9 create" in screen

    write_csv(site.root, EMPLOYEES[:5])  # frank leaves: a lock
    site.configure(sync={"max_removal_ratio": 1.0})
    piped = site.cli("sync", "--yes")  # stdout a pipe: --yes, as the timer unit gives it
    assert piped.returncode == 0, piped.stderr
    assert "Enter a value" not in piped.stdout and "applied: 1 lock" in piped.stdout


# Where nobody can be asked, a real sync without --yes refuses (terraform's rule): what a
# person types at a terminal, and what a script or a unit runs without one.
NOBODY_TO_ASK = [
    ('syncd sync --config "$CONFIG" | tee sync.log', "standard output is not a terminal"),
    ('syncd sync --config "$CONFIG" --output json', "--output json asks no question"),
    ('syncd sync --config "$CONFIG" -o json | tee sync.json', "--output json"),
    ('syncd sync --config "$CONFIG" < /dev/null', "standard input is not a terminal"),
    (
        'syncd sync --config "$CONFIG" > sync.log 2>&1; s=$?; cat sync.log; (exit $s)',
        "standard output is not a terminal",
    ),
]


@pytest.mark.parametrize(("line", "why"), NOBODY_TO_ASK)
def test_a_sync_nobody_can_confirm_refuses_without_yes_and_sends_nothing(
    site: Site, emulator: RunningEmulator, line: str, why: str
) -> None:
    code, screen = finish(shell_at_terminal(site, f"{line}; exit $?", columns=80))

    said = " ".join(screen.split())  # the terminal wraps at 80 columns
    assert "not applied: nobody can be asked to confirm" in said, screen
    assert why in said and "give --yes" in said and "--dry-run" in said, screen
    assert "Enter a value" not in screen
    assert site.runs() == []  # not even started: no run recorded, no lock taken
    assert requests_to(emulator, "/import-") == 0
    if "|" not in line:  # a pipeline's status is tee's
        assert code == 3, screen


def test_the_refusal_as_json_is_one_document_and_a_dry_run_needs_no_yes(site: Site) -> None:
    refused = site.cli("sync", "--output", "json")
    assert refused.returncode == 3, refused.stderr
    document = json.loads(refused.stdout)  # stdout holds one document, and only it
    assert document["exit_code"] == 3 and "--yes" in document["error"]
    assert site.runs() == []

    for args in (["--dry-run"], ["--check"], ["--output", "json", "--dry-run"]):
        done = site.cli("sync", *args)
        assert done.returncode in (0, 1), (args, done.stderr)  # --check: 1, changes pending
        assert "nobody can be asked" not in done.stdout + done.stderr


def test_ctrl_c_while_reading_stops_at_once_when_nothing_was_sent(site: Site) -> None:
    write_csv(site.root, [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(150_000)])
    child = at_terminal(site, "sync")
    child.expect("reading the source: 1,000 people read")
    child.sendintr()
    code, screen = finish(child)

    assert code == 1, screen
    assert "plan:" not in screen and "Enter a value" not in screen, screen
    run = site.runs()[0]
    assert run["outcome"] == "interrupted"
    assert "150,000" not in screen  # the read did not go on to the end


def test_a_spinner_tells_what_is_under_way_while_reading_and_planning(
    site: Site, emulator: RunningEmulator
) -> None:
    write_csv(site.root, [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(3000)])
    slow = {"match": "page-orgs", "fault": "latency", "latency_ms": 1500, "count": 1}
    emulator.set_faults(scripted=[slow])
    child = at_terminal(site, "sync", "--dry-run")

    child.expect("reading the platform")  # the platform is slow to answer
    child.expect("reading the source: 3,000 people read")
    code, screen = finish(child)

    assert code == 0, screen
    for count in ("1,000", "2,000", "3,000"):
        assert f"reading the source: {count} people read" in screen
    assert screen.index("reading the platform") < screen.index("reading the source: 1,000")
    assert screen.index("reading the source: 3,000") < screen.index("plan: ")


def test_log_lines_print_above_the_bars_never_through_them(
    site: Site, emulator: RunningEmulator
) -> None:
    people = EMPLOYEES + [(f"X{n}", f"user{n}", f"User {n}", "D1") for n in range(20)]
    write_csv(site.root, people)
    site.configure(platform={"retry_backoff": 0.01, "batch_size": 2})
    # Retried answers log a WARNING each while the people's bar is on the screen.
    failing = {"match": "import-employees", "method": "POST", "fault": "http_500", "count": 3}
    emulator.set_faults(scripted=[failing])

    code, screen = finish(at_terminal(site, "sync", "--yes"))

    assert code == 0, screen
    shown = pieces(screen)
    warnings = [p for p in shown if "WARNING" in p]
    assert len(warnings) == 3, shown
    assert all("import-employees" in w and BAR not in w for w in warnings), warnings
    assert any(BAR in p for p in shown)  # there were bars to tear
    for bar in (p for p in shown if BAR in p):
        assert "WARNING" not in bar and "attempt" not in bar, bar


def test_failed_items_are_one_warning_per_reason_with_its_count(
    site: Site, emulator: RunningEmulator
) -> None:
    rule = {"field": "username", "pattern": "^(alice|bob|carol)$", "message": "rejected by rule"}
    emulator.set_faults(reject=[rule])

    quiet = site.cli("sync", "--yes")
    again = site.cli("sync", "--yes")
    detailed = site.cli("-v", "sync", "--yes")

    for result in (quiet, again):
        assert result.returncode == 1, result.stderr
        lines = [line for line in result.stderr.splitlines() if "rejected by rule" in line]
        assert len(lines) == 1, result.stderr
        assert "WARNING" in lines[0] and "3 items failed: rejected by rule" in lines[0]
        assert "applied: " in result.stdout and "3 failed" in result.stdout
    per_item = [line for line in detailed.stderr.splitlines() if " DEBUG " in line]
    assert any("create employee bob failed: rejected by rule" in line for line in per_item)


def test_the_bars_show_their_rate_and_the_time_left(site: Site, emulator: RunningEmulator) -> None:
    write_csv(site.root, [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(60)])
    # 30 batches of 2 people, each answered in 0.2 s: the bar is on screen for seconds.
    slow = {"match": "import-employees", "fault": "latency", "latency_ms": 200, "count": 30}
    emulator.set_faults(scripted=[slow])

    code, screen = finish(at_terminal(site, "sync", "--yes"))

    assert code == 0, screen
    bars = [p for p in pieces(screen) if p.startswith("create and update employees")]
    assert bars, pieces(screen)
    # Under way: done of total, the rate, and the time left (h:mm:ss), once measured.
    under_way = [b for b in bars if re.search(r" \d+/60 +\d+/s +(?!0:00:00)\d:\d\d:\d\d", b)]
    assert under_way, bars
    assert re.search(r" 60/60 +\d+/s +0:00:00", bars[-1]), bars[-1]


def test_reports_list_keeps_its_id_column_at_80_columns(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    write_csv(site.root, EMPLOYEES[:5])  # frank leaves: a lock, with a long outcome
    site.configure(sync={"max_removal_ratio": 1.0})
    assert site.cli("sync", "--yes").returncode == 0

    code, screen = finish(at_terminal(site, "reports", "list", columns=80))

    assert code == 0, screen
    lines = screen.replace("\r\n", "\n").splitlines()
    assert all(len(line) <= 80 for line in lines), lines
    header = next(line for line in lines if line.split()[:1] == ["id"])
    assert header.split()[:5] == ["id", "started", "mode", "outcome", "counts"]
    rows = [line.split() for line in lines if line[:3].strip().isdigit()]
    assert [row[0] for row in rows] == ["2", "1"]  # every id, whole
    assert [row[5] for row in rows] == ["done", "done"]
    assert all(re.fullmatch(r"[+-]\d{4}", row[2][-5:]) for row in rows)  # the time's zone
    assert "too narrow for:" in " ".join(screen.split())


def test_a_long_plan_lists_every_lock_the_guard_stops_on_before_the_rest(site: Site) -> None:
    people = [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(400)]
    write_csv(site.root, people)
    assert site.cli("sync", "--yes").returncode == 0
    # 300 renamed (updates) and 100 gone (locks): more locks than the guard allows.
    write_csv(site.root, [(i, u, f"{name} Renamed", d) for i, u, name, d in people[:300]])

    code, screen = finish(at_terminal(site, "sync", "--yes", "--show", "200", columns=80))

    assert code == 2, screen  # blocked by max_removals
    lines = pieces(screen)
    locks = [line for line in lines if re.match(r"\s+! lock employee user\d+\b", line)]
    assert len(locks) == 100, screen
    updates = [line for line in lines if re.match(r"\s+~ update employee user\d+\b", line)]
    assert len(updates) == 100, screen  # the rest fills --show 200
    first_update = lines.index(updates[0])
    assert all(lines.index(lock) < first_update for lock in locks)
    assert any("... and 200 more" in line for line in lines), screen


HELP_COMMANDS = [
    ["sync", "--yes"],
    ["apply"],
    ["check"],
    ["run"],
    ["status"],
    ["reports", "list"],
    ["reports", "show"],
    ["reports", "person"],
    ["reports", "prune"],
]  # the commands that take --config, which at_terminal gives


def test_help_at_80_columns_names_values_as_words_and_gives_descriptions_room(site: Site) -> None:
    for command in HELP_COMMANDS:
        code, screen = finish(at_terminal(site, *command, "--help", columns=80))
        lines = screen.replace("\r\n", "\n").splitlines()

        assert code == 0, screen
        assert all(len(line) <= 80 for line in lines), screen
        # No Python types as placeholders (<bool>, <int range>, <list[str]>, <path>, ...).
        assert not re.search(r"<(bool|int|float|str|path|file|list)", screen), screen
        # Descriptions start in one column at most 36 characters in, never squeezed to 13.
        described = [re.match(r"(  -.*?\S {2,})\S", line) for line in lines]
        starts = {len(m.group(1)) for m in described if m is not None}
        assert starts and max(starts) <= 36, (command, screen)


def test_reports_show_lists_up_to_its_limit_and_prune_asks_then_gives_space_back(
    site: Site,
) -> None:
    people = [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(3000)]
    write_csv(site.root, people)
    assert site.cli("sync", "--yes").returncode == 0  # run 1: 3,003 creates
    write_csv(site.root, [(i, u, f"{name} Jr", d) for i, u, name, d in people])
    assert (
        site.cli("sync", "--yes", "--allow-updates", "3000").returncode == 0
    )  # run 2: 3,000 updates

    shown = site.cli("reports", "show", "1").stdout
    assert len(shown.splitlines()) < 120, shown  # 20,000 lines for a big run, before
    assert "  create (3,003)\n" in shown
    assert "    … and 2,953 more (--limit 0 lists all; --output csv for a sheet)\n" in shown
    everything = site.cli("reports", "show", "1", "--limit", "0").stdout
    assert everything.count("\n    + create employee ") == 3000

    dry = site.cli("reports", "prune", "--keep-days", "0", "--dry-run")
    assert "would prune 1 runs started more than 0 days ago (3,003 items" in dry.stdout
    assert [run["id"] for run in site.runs()] == [1, 2]

    child = at_terminal(site, "reports", "prune", "--keep-days", "0", columns=80)
    child.expect("Enter a value: ")
    child.sendline("no")
    code, screen = finish(child)
    assert code == 0 and "not pruned: nothing was deleted" in screen, screen
    assert [run["id"] for run in site.runs()] == [1, 2]

    database = site.state_dir / "syncd.db"
    before = database.stat().st_size
    child = at_terminal(site, "reports", "prune", "--keep-days", "0", columns=80)
    child.expect(r"Delete 1 runs started more than 0 days ago \(3,003 items, 0 rejected rows\)\?")
    child.expect("Enter a value: ")
    child.sendline("yes")
    code, screen = finish(child)
    assert code == 0, screen
    assert re.search(r"pruned 1 runs .*; [\d.]+ MB given back", " ".join(screen.split())), screen
    assert [run["id"] for run in site.runs()] == [2]
    assert database.stat().st_size < before  # the deleted rows' pages went back to the disk


def test_the_demo_at_80_columns_wraps_between_words_never_past_the_edge(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="40")
    child = pexpect.spawn(
        str(SYNCD),
        ["demo", "--folder", str(tmp_path / "demo")],
        env=env,
        encoding="utf-8",
        dimensions=(40, 80),
        timeout=DEADLINE,
    )
    child.logfile_read = io.StringIO()
    code, screen = finish(child)

    assert code == 0, screen
    lines = screen.replace("\r\n", "\n").splitlines()
    # Nothing reaches past the edge, where the terminal would cut it mid-word.
    assert all(cell_len(line) <= 80 for line in lines), [ln for ln in lines if cell_len(ln) > 80]
    # The preview (the demo's first screen) gives each field its value, and where it came
    # from on the line below, whole: the rule's words are not cut.
    preview = screen.replace("\r\n", "\n")[: screen.index("1. first sync")]
    assert re.search(r"\n  en_name +Wang Jianguo *\n", preview), preview
    assert "from en_name | replace '^(\\S+) (\\S+)$' with '\\2 \\1'" in preview, preview
    # The report's long lines go on under their own start, broken between words.
    report = screen[screen.index("4. the report of run 2") :].replace("\r\n", "\n")
    lock = "! lock employee chenzhiqiang: missing from the source (removed after 30 days) — ok"
    assert lock in " ".join(report.split()), report
    start = report.index("! lock employee chenzhiqiang")
    second = report[start:].split("\n")[1]
    assert second.startswith("    ") and second.split() == ["days)", "—", "ok"], report


def test_an_overridden_guard_says_it_was_overridden_not_how_to_override_it(site: Site) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    write_csv(site.root, EMPLOYEES[:3])  # three leave: three locks
    site.configure(sync={"max_removals": 1, "max_removal_ratio": 0.1})
    blocked = site.cli("sync", "--yes")
    assert blocked.returncode == 2, blocked.stdout + blocked.stderr
    assert "BLOCKED" in blocked.stdout and "rerun with --allow-removals 3" in blocked.stdout

    code, screen = finish(at_terminal(site, "sync", "--yes", "--allow-removals", "3", columns=80))

    said = " ".join(screen.split())  # lines wrap at 80 columns
    assert code == 0, screen
    assert "guard max_removals: ok (overridden) 3 " in said, screen
    assert "rerun with" not in said, screen
    report = " ".join(site.cli("reports", "show", "latest").stdout.split())
    assert "max_removals: passed (overridden)" in report and "rerun with" not in report, report
    html = site.root / "report.html"
    site.cli("reports", "show", "latest", "-o", "html", "--file", str(html))
    assert "rerun with" not in html.read_text(encoding="utf-8")


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root: it plays the admin's sudo")
def test_a_root_dry_run_in_the_service_users_state_warns_and_names_every_file_it_left(
    site: Site,
) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    nobody = 65534  # the service user's state directory: every file in it is its own
    for path in [site.state_dir, *site.state_dir.iterdir()]:
        os.chown(path, nobody, nobody)

    code, screen = finish(at_terminal(site, "sync", "--dry-run", columns=80))

    said = " ".join(screen.split())  # wrapped at 80 columns
    assert code == 0, screen
    before = f"running as root in {site.state_dir}, which belongs to nobody: the files"
    assert before in said, screen
    for name in ("syncd.db", "run.lock", "token.lock", "last-run"):
        assert name in said[said.index(before) :], (name, screen)
    assert "sudo -u nobody syncd" in said
    left = sorted(p for p in site.state_dir.iterdir() if p.lstat().st_uid != nobody)
    assert left, "the dry run wrote nothing as root: nothing to check"
    after = said[said.index("now belong to root, not nobody: ") :]
    assert ", ".join(p.name for p in left) in after, screen
    advice = after[after.index("sudo chown nobody: ") :]
    for path in left:  # every one of them in the chown, not only the database's
        assert str(path) in advice.replace(" ", ""), (path, screen)


def test_an_update_held_as_another_person_is_told_whole_at_80_columns(site: Site) -> None:
    """Bob's HR number and username given to a new hire while syncd did not run: the run
    renames nobody, locks Bob as a leaver and says why, wrapped within 80 columns."""
    site.configure(sync={"max_removal_ratio": 1.0})  # one lock in two people: let it through
    header = "id,username,name,department,mobile"
    bob = ["E1,alice,Alice,D1,13800000001", "E2,bob,Bob Stone,D2,13800000002"]
    employees = site.root / "employees.csv"
    write_csv(site.root, [])
    employees.write_text("\n".join([header, *bob]) + "\n", encoding="utf-8")
    assert site.cli("sync", "--yes").returncode == 0
    dan = ["E1,alice,Alice,D1,13800000001", "E2,bob,Dan New,D3,13900000009"]
    employees.write_text("\n".join([header, *dan]) + "\n", encoding="utf-8")

    code, screen = finish(at_terminal(site, "sync", "--yes", columns=80))

    assert code == 0, screen
    shown = screen[screen.index("plan: 1 to lock") :].replace("\r\n", "\n")  # after the spinner
    plan = shown[: shown.index("\x1b")]  # up to the bars
    assert all(cell_len(line) <= 80 for line in plan.splitlines()), plan
    told = " ".join(shown.split())
    assert "conflict: bob: the source's record under E2 shows another person" in told, shown
    assert "(the name and the mobile differ)" in told and "add 'E2' to sync.same_person" in told
    assert "! lock employee bob: their source id now names another person" in told, shown
    assert "(1 of them held as another person's, not applied)" in told, shown
    assert "applied: 1 lock" in told, shown
    people = site.emulator.state()["employees"]
    assert [(p["name"], p["locked"]) for p in people if p["username"] == "bob"] == [
        ("Bob Stone", True)
    ]
