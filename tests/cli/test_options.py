"""The command line's options: values checked, --version, -v/-q, completion, --long."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from syncd.cli import run_cli
from syncd.emulator import RunningEmulator
from syncd.snapshot import SCHEMA_VERSION
from tests.cli.terminal import finish
from tests.daemon.support import DEADLINE, EMPLOYEES, Site, write_csv
from tests.support.admin import AnotherAdmin
from tests.support.cli import SYNCD

# The syncd command as its console script starts it, in a Python given -X importtime.
STARTS_SYNCD = "import sys; sys.argv[0] = 'syncd'; from syncd.cli import main; main()"


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (["sync", "--wait", "nan"], "'--wait': must be a finite number"),
        (["sync", "--wait", "inf"], "'--wait': must be a finite number"),
        (["sync", "--wait", "-1"], "'--wait': must be 0 or more"),
        (["sync", "--allow-removals", "-5"], "--allow-removals"),
        (["sync", "--show", "-1"], "--show"),
        (["sync", "--config", ""], "--config"),
        (["check", "--config", ""], "--config"),
        (["-v", "-q", "status"], "-v/-q"),
        (["reports", "list", "-o", "xml"], "'xml' is not one of 'text', 'json'"),
    ],
)
def test_bad_values_are_usage_errors_before_anything_runs(
    site: Site, capsys: pytest.CaptureFixture[str], args: list[str], complaint: str
) -> None:
    config = [] if "--config" in args else ["--config", str(site.config)]

    code = run_cli([*args, *config])

    output = " ".join(capsys.readouterr().err.split())  # the usage box may wrap a message
    assert code == 3, output
    assert "Invalid value" in output and complaint in output, output
    assert site.runs() == []


USAGE_ERRORS_AS_JSON = [
    ["sync", "--output", "json", "--bogus"],
    ["sync", "-o", "json", "--wait", "nan"],
    ["status", "--output=json", "extra-argument"],
    ["check", "--format", "json", "--allow-removals", "3"],
    ["reports", "list", "-o", "json", "--since", "yesterday-ish"],
    ["sync", "--output", "json", "--show", "-1"],
]


@pytest.mark.parametrize("args", USAGE_ERRORS_AS_JSON)
def test_a_usage_error_with_json_output_is_one_json_object_on_stdout(
    site: Site, args: list[str]
) -> None:
    done = site.cli(*args)  # a script's view: stdout and stderr, both pipes

    assert done.returncode == 3, done.stdout + done.stderr
    assert done.stderr == ""  # nothing else is told: the object is the whole answer
    told = json.loads(done.stdout)  # one document, and nothing around it
    assert isinstance(told, dict) and told["exit_code"] == 3, told
    assert told["error"].startswith("usage: "), told
    assert told["usage"].startswith(f"Usage: syncd {args[0]}"), told
    assert told["help"].endswith(" --help"), told
    assert site.runs() == []


def test_version() -> None:
    result = subprocess.run(
        [str(SYNCD), "--version"], capture_output=True, text=True, timeout=DEADLINE
    )
    assert result.returncode == 0
    assert result.stdout.strip() == f"syncd 0.2.0 (state database schema {SCHEMA_VERSION})"


def test_shell_completion_completes_commands_and_options() -> None:
    def complete(words: str) -> list[str]:
        env = {
            **os.environ,
            "_SYNCD_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(len(words.split()) - (0 if words.endswith(" ") else 1)),
        }
        result = subprocess.run(
            [str(SYNCD)], env=env, capture_output=True, text=True, timeout=DEADLINE
        )
        return result.stdout.split()

    assert complete("syncd stat") == ["status", "state"]
    assert complete("syncd statu") == ["status"]
    assert "--dry-run" in complete("syncd sync --d")


def test_quiet_logs_warnings_only_and_verbose_every_detail(site: Site) -> None:
    quiet = site.cli("-q", "sync", "--yes")
    verbose = site.cli("-v", "sync", "--dry-run")

    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stderr == ""  # no token line, no phase lines
    assert "applied: 9 create" in quiet.stdout
    assert " DEBUG " in verbose.stderr


def test_counts_come_in_the_order_changes_are_applied(site: Site) -> None:
    site.configure(sync={"max_removal_ratio": 1.0})  # one lock of 9 records
    assert site.cli("sync", "--yes").returncode == 0
    people = [p for p in EMPLOYEES if p[1] != "frank"]  # missing: locked
    people[0] = ("E1", "alice", "Alice Renamed", "D1")  # an update
    people.append(("E7", "grace", "Grace", "D3"))  # a create, listed last
    write_csv(site.root, people)

    result = site.cli("sync", "--dry-run", "--long")

    assert result.returncode == 0, result.stderr
    assert "plan: 1 to create, 1 to update, 1 to lock\n" in result.stdout
    lines = result.stdout.splitlines()
    update = lines.index("  ~ update employee alice (name 'Alice' → 'Alice Renamed')")
    assert lines[update + 1] == "      name: Alice → Alice Renamed"
    create = lines.index("  + create employee grace")
    assert lines[create + 1 : create + 3] == ["      username: grace", "      name: Grace"]
    # Positions read as people read them: the department's name path, not its source id.
    assert "      positions: Acme/Engineering/Backend" in lines[create + 3 : create + 6]


def test_counts_are_written_with_thousands_separators(site: Site) -> None:
    write_csv(site.root, [(f"E{n}", f"user{n}", f"User {n}", "D1") for n in range(1200)])

    result = site.cli("sync", "--dry-run", "--show", "1")

    assert result.returncode == 0, result.stderr
    assert "read 1,200 employees and 3 departments (full read), 0 rows rejected\n" in (
        result.stdout
    )
    assert "plan: 1,203 to create\n" in result.stdout
    assert "  ... and 1,202 more: syncd reports show 1\n" in result.stdout


def test_check_reads_the_source_without_the_platform_secret(site: Site) -> None:
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text(text.replace('client_secret = "demo-secret"\n', ""))

    check = site.cli("check")
    sync = site.cli("sync", "--dry-run")

    assert check.returncode == 0, check.stderr
    assert "employees   6" in check.stdout
    assert sync.returncode == 3
    assert "platform.client_secret is not set" in sync.stderr


def test_check_and_its_preview_need_no_platform_section_sync_and_run_do(site: Site) -> None:
    text = site.config.read_text(encoding="utf-8")
    site.config.write_text(re.sub(r"(?ms)^\[platform\]\n.*?(?=^\[|\Z)", "", text))
    assert "[platform]" not in site.config.read_text(encoding="utf-8")

    check = site.cli("check")
    preview = site.cli("check", "--preview", "alice")

    assert check.returncode == 0, check.stderr
    assert "employees   6" in check.stdout
    assert preview.returncode == 0, preview.stderr
    assert "alice" in preview.stdout and "username" in preview.stdout
    for command in (["sync", "--dry-run"], ["sync"], ["run"]):
        refused = site.cli(*command)
        assert refused.returncode == 3, (command, refused.stdout, refused.stderr)
        assert f"{site.config}: invalid settings: key platform: required key is missing" in (
            refused.stderr
        ), command


def test_under_journald_warnings_and_errors_carry_their_priority(site: Site) -> None:
    site.config.chmod(0o644)  # holds the secret: a warning
    journal = site.root / "journal"
    with journal.open("w", encoding="utf-8") as stream:
        found = os.fstat(stream.fileno())
        env = {k: v for k, v in os.environ.items() if not k.startswith("SYNCD_")}
        env["JOURNAL_STREAM"] = f"{found.st_dev}:{found.st_ino}"
        for args in (["check"], ["sync", "--yes", "--show", "1"], ["reports", "show", "99"]):
            subprocess.run(
                [str(SYNCD), *args, "--config", str(site.config)],
                stdout=subprocess.DEVNULL,
                stderr=stream,
                env=env,
                timeout=DEADLINE,
            )

    lines = journal.read_text(encoding="utf-8").splitlines()
    assert lines[0].startswith(f"<4>warning: {site.config} holds a secret"), lines
    assert any(line.startswith("<6>syncd.platform: obtained a new access token") for line in lines)
    assert lines[-1] == "<3>error: no run 99 is recorded: see `syncd reports list`"
    assert all(line[:1] == "<" and line[2:3] == ">" for line in lines), lines


@pytest.mark.parametrize(
    "args",
    [
        ["status", "-v", "--config", "{config}"],  # -v after the command
        ["-v", "status", "--config", "{config}"],
        ["--config", "{config}", "status", "-q"],  # --config before the command
        ["-c", "{config}", "reports", "list", "--verbose"],
        ["reports", "list", "--format", "json", "--config", "{config}"],  # --format everywhere
        ["status", "--format", "json", "-c", "{config}"],
        ["reports", "person", "alice", "--format", "json", "--config", "{config}"],
    ],
)
def test_verbosity_config_and_format_work_in_every_position(site: Site, args: list[str]) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "SYNCD_CONFIG")}
    command = [str(SYNCD), *(a.format(config=site.config) for a in args)]

    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=DEADLINE)

    assert result.returncode == 0, result.stderr
    assert "No such option" not in result.stderr
    if "--format" in args:
        json.loads(result.stdout)


def test_each_drift_repair_is_said_once_in_the_plan(site: Site, emulator: RunningEmulator) -> None:
    assert site.cli("sync", "--yes").returncode == 0
    admin = AnotherAdmin(emulator)
    admin.edit("bob", name="Robert")  # EMPLOYEES: bob
    admin.lock("carol")

    result = site.cli("sync", "--dry-run")

    assert result.returncode == 0, result.stderr
    said = result.stdout.splitlines()
    assert sum("bob" in line for line in said) == 1, result.stdout  # was twice: change and note
    assert sum("carol" in line for line in said) == 1, result.stdout
    assert any("changed on the platform" in line and "bob" in line for line in said)
    assert any("locked on the platform" in line and "carol" in line for line in said)


def test_the_completion_script_for_everyone_is_what_readme_installs(tmp_path: Path) -> None:
    # The docs: syncd completion bash | sudo tee /usr/share/bash-completion/completions/syncd,
    # typed in any shell: here sh, where Typer's --show-completion refuses ("Shell sh not
    # supported"), since it guesses the shell from the process that started syncd.
    script = subprocess.run(
        ["sh", "-c", f"{SYNCD} completion bash"], capture_output=True, text=True, timeout=DEADLINE
    )
    assert script.returncode == 0, script.stderr
    target = tmp_path / "syncd"
    target.write_text(script.stdout, encoding="utf-8")
    # Sourced by a bash that has never seen syncd: syncd's words complete.
    probe = (
        f"source {target}; COMP_WORDS=(syncd sta); COMP_CWORD=1; "
        f"PATH={Path(SYNCD).parent}:$PATH _syncd_completion syncd; "
        f"printf '%s\\n' \"${{COMPREPLY[@]}}\""
    )
    found = subprocess.run(["bash", "--norc", "-c", probe], capture_output=True, text=True)
    assert "status" in found.stdout.split(), found.stdout + found.stderr


def test_a_bare_status_without_settings_says_what_to_give(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("SYNCD_")}
    env.update(TERM="xterm-256color", COLUMNS="80", LINES="40")
    child = pexpect.spawn(
        str(SYNCD),
        ["status"],
        env=env,
        cwd=str(tmp_path),
        encoding="utf-8",
        dimensions=(40, 80),
        timeout=DEADLINE,
    )
    child.logfile_read = io.StringIO()

    _, screen = finish(child)

    said = " ".join(screen.split())  # wrapped at 80 columns
    assert "BROKEN" not in said, screen  # nothing is broken: nothing was given
    assert "settings none given: " in said, screen
    assert "--config" in said and "SYNCD_CONFIG=FILE" in said, screen
    assert "/etc/syncd/syncd.toml" in said and "default state directory" in said, screen


@pytest.mark.parametrize(
    ("args", "completing"),
    [(["--version"], False), (["--help"], False), (["sync", "--help"], False), ([], True)],
)
def test_what_loads_no_settings_imports_no_settings_models(
    args: list[str], completing: bool
) -> None:
    """--version, --help and each Tab of completion load no settings: the pydantic models
    of syncd.config (most of a command's start) are not imported for them."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SYNCD_", "_SYNCD_"))}
    if completing:
        env.update(_SYNCD_COMPLETE="complete_bash", COMP_WORDS="syncd stat", COMP_CWORD="1")
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", STARTS_SYNCD, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=DEADLINE,
    )

    assert done.returncode == 0, done.stderr[-2000:]
    imported = {
        line.rpartition("|")[2].strip()
        for line in done.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert "syncd.cli" in imported  # the list is read right
    assert not {"syncd.config", "pydantic_settings", "sqlmodel"} & imported
