"""Secrets stay secret; TLS is verified unless loudly turned off; servers bind to loopback;
a settings file others can read is warned about; the HTML report injects nothing.
"""

from __future__ import annotations

import html.parser
import logging
import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import ldap3.utils.log as ldap3_log
import pytest

import syncd.emulator.tokens as emulator_tokens
import syncd.sources.ldap.wire as ldap_source
from syncd.cli import run_cli
from syncd.emulator import EmulatorOptions, RunningEmulator
from syncd.errors import EXIT_FAILED, EXIT_OK
from syncd.service.metrics import RunMetrics
from tests.engine.company import employee, small_company
from tests.support.cli import SYNCD
from tests.support.https_emulator import serving_https
from tests.support.processes import free_port
from tests.support.slapd import Slapd, TlsFiles, synthetic_people_ldif
from tests.support.waiting import wait_until

from .support import DEADLINE, TABLES, Rig, clean_env, query, when_requests
from .test_ldap_failures import ldap_lines

WRONG_SECRET = "wrong-app-secret-5c1d"
WRONG_LDAP_PASSWORD = "wrong-ldap-pw-93be"
FORMATS = ("text", "json", "csv", "html")


class Collect(logging.Handler):
    """Every log record of every logger, formatted plainly (tracebacks included)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.loggers: set[str] = set()
        self.setFormatter(logging.Formatter("%(name)s %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))
        self.loggers.add(record.name.split(".")[0])


@dataclass
class Seen:
    """Everything a secret could leak into, and the secrets themselves."""

    capsys: pytest.CaptureFixture[str]
    texts: list[str] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)

    def cli(self, *args: str) -> int:
        code = run_cli(list(args))
        captured = self.capsys.readouterr()
        self.texts += [captured.out, captured.err]
        return code

    def sync(self, config: Path) -> int:
        return self.cli("sync", "--yes", "--config", str(config))


@pytest.fixture
def issued(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every access token the emulator (in this process) issues during the test."""
    tokens: list[str] = []
    issue = emulator_tokens.TokenBook.issue

    def recording(self: Any, *args: Any, **kwargs: Any) -> Any:
        token = issue(self, *args, **kwargs)
        tokens.append(token.access_token)
        return token

    monkeypatch.setattr(emulator_tokens.TokenBook, "issue", recording)
    return tokens


@pytest.fixture
def debug_everywhere() -> Iterator[Collect]:
    """DEBUG for every logger (syncd, httpx, httpcore, ldap3 at its most detailed)."""
    collect = Collect()
    root = logging.getLogger()
    root.addHandler(collect)
    saved = (ldap3_log.get_library_log_activation_lavel(), ldap3_log.get_library_log_detail_level())
    ldap3_log.set_library_log_activation_level(logging.DEBUG)
    ldap3_log.set_library_log_detail_level(ldap3_log.EXTENDED)
    try:
        yield collect
    finally:
        ldap3_log.set_library_log_activation_level(saved[0])
        ldap3_log.set_library_log_detail_level(saved[1])
        root.removeHandler(collect)


def database_text(database: Path) -> tuple[str, str]:
    """Every value of every table but ``tokens``, and the ``tokens`` table."""
    others: list[str] = []
    for table in TABLES:
        rows = query(database, f"SELECT * FROM {table}")  # noqa: S608 - table names
        (others if table != "tokens" else []).append(repr(rows))
    return "\n".join(others), repr(query(database, "SELECT * FROM tokens"))


def test_no_secret_in_any_log_line_report_error_or_table(
    tmp_path: Path,
    emulator: RunningEmulator,
    ldap: Slapd,
    issued: list[str],
    debug_everywhere: Collect,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = Seen(capsys)
    csv_rig = csv_site(tmp_path, emulator)
    sync_csv_with_retries_and_a_renewed_token(seen, csv_rig, emulator, issued)
    sync_csv_rejected_refused_and_down(seen, csv_rig, emulator, issued)
    ldap_rig = ldap_site(tmp_path, emulator, ldap)
    sync_ldap_refused_and_gone_mid_read(seen, ldap_rig, ldap, monkeypatch)
    show_every_report(seen, csv_rig, ldap_rig)

    secrets = [*issued, "demo-secret", WRONG_SECRET, ldap.password, WRONG_LDAP_PASSWORD]
    assert len(set(issued)) >= 4  # syncd's first, the two taken away, a renewal
    tables = [database_text(rig.database) for rig in (csv_rig, ldap_rig)]
    everything = {
        "log lines": "\n".join(debug_everywhere.lines),
        "command output": "\n".join(seen.texts),
        "tables": "\n".join(others for others, _ in tables),
    }
    assert {"syncd", "httpx", "httpcore", "ldap3"} <= debug_everywhere.loggers
    assert "access_token=***" in everything["log lines"]  # the token was there, masked
    for where, text in everything.items():
        for secret in secrets:
            assert secret not in text, f"a secret in the {where}"
    # The tokens table is the one place the current token is kept.
    assert any(token in tables[0][1] for token in issued)


def csv_site(tmp_path: Path, emulator: RunningEmulator) -> Rig:
    """A CSV site logging at DEBUG, with retries enough for the faults to come."""
    rig = Rig(tmp_path / "csv", emulator, small_company())
    rig.folder.mkdir()
    rig.top_options["log_level"] = "DEBUG"
    rig.platform_options.update(retry_attempts=10, concurrency=2)
    rig.sync_settings.update(max_removal_ratio=1.0)
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D3") for n in range(10, 40)]
    rig.company.write(rig.folder)
    rig.write_config()
    return rig


def sync_csv_with_retries_and_a_renewed_token(
    seen: Seen, rig: Rig, emulator: RunningEmulator, issued: list[str]
) -> None:
    # Retries: HTTP 500, 429, answers lost after the platform acted.
    emulator.set_faults(seed=2, http_500_rate=0.15, http_429_rate=0.1, drop_after_rate=0.1)
    assert seen.sync(rig.config) == EXIT_OK
    # A token taken by another program mid-run: renewed.
    rig.company.employees += [employee(f"E{n}", f"user{n}", "D2") for n in range(40, 60)]
    rig.company.write(rig.folder)
    emulator.set_faults(latency_ms=10)
    with when_requests(
        emulator, "import-employees", 1, lambda: issued.append(emulator.issue_token())
    ):
        assert seen.sync(rig.config) == EXIT_OK


def sync_csv_rejected_refused_and_down(
    seen: Seen, rig: Rig, emulator: RunningEmulator, issued: list[str]
) -> None:
    # Rejected items, with the platform's text.
    rig.company.person("ann")["name"] = "Ann Again"
    rig.company.write(rig.folder)
    emulator.set_faults(reject=[{"field": "username", "pattern": "^ann$", "message": "nope"}])
    assert seen.sync(rig.config) == 1
    # A wrong application secret, after the stored token was replaced: refused.
    issued.append(emulator.issue_token())
    emulator.set_faults()
    rig.platform_options["client_secret"] = WRONG_SECRET
    rig.write_config()
    assert seen.sync(rig.config) == EXIT_FAILED
    # The platform down.
    rig.platform_options["client_secret"] = "demo-secret"
    rig.platform_options["retry_attempts"] = 2
    rig.write_config()
    emulator.set_faults(down=True)
    assert seen.sync(rig.config) == EXIT_FAILED
    emulator.set_faults()


def ldap_site(tmp_path: Path, emulator: RunningEmulator, ldap: Slapd) -> Rig:
    """An LDAP site logging at DEBUG, reading 12 people of their own in pages of 5."""
    ldap.add_ldif(
        f"dn: ou=secrets,{ldap.suffix}\nobjectClass: organizationalUnit\nou: secrets\n\n"
        + synthetic_people_ldif(f"ou=secrets,{ldap.suffix}", 12, divisions=1, teams=2)
    )
    rig = Rig(tmp_path / "ldap", emulator, small_company())
    rig.folder.mkdir()
    rig.top_options["log_level"] = "DEBUG"
    rig.source_lines = ldap_lines(ldap, f"ou=secrets,{ldap.suffix}", page_size=5)
    rig.write_config()
    return rig


def sync_ldap_refused_and_gone_mid_read(
    seen: Seen, rig: Rig, ldap: Slapd, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LDAP: a good read, a refused bind, a server gone mid-read."""
    # The CSV site's people are on the platform, unknown to this new state database and
    # to its source: they are another syncd's, to be left alone (README, "Backup and upgrade").
    assert seen.cli("state", "accept", "--config", str(rig.config)) == EXIT_OK
    assert seen.sync(rig.config) == EXIT_OK
    rig.source_lines = ldap_lines(
        ldap, f"ou=secrets,{ldap.suffix}", bind_password=WRONG_LDAP_PASSWORD
    )
    rig.write_config()
    assert seen.sync(rig.config) == EXIT_FAILED
    rig.source_lines = ldap_lines(ldap, f"ou=secrets,{ldap.suffix}", page_size=5)
    rig.write_config()
    send = ldap_source.send_page
    pages = [0]

    def stop_mid_read(*args: Any) -> int:
        pages[0] += 1
        if pages[0] == 3:
            ldap.stop()
        return send(*args)

    monkeypatch.setattr(ldap_source, "send_page", stop_mid_read)
    assert seen.sync(rig.config) == EXIT_FAILED
    monkeypatch.undo()
    ldap.start()


def show_every_report(seen: Seen, *rigs: Rig) -> None:
    """Every report of every run, in every format, and the list of them."""
    for rig in rigs:
        config = str(rig.config)
        for run in rig.runs():
            for fmt in FORMATS:
                code = seen.cli(
                    "reports", "show", str(run["id"]), "--format", fmt, "--config", config
                )
                assert code == EXIT_OK
        assert seen.cli("reports", "list", "--config", config) == EXIT_OK


# ---------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def https_emulator(reliability_tls: TlsFiles) -> Iterator[str]:
    """The emulator over HTTPS with a certificate of a CA nobody trusts by default."""
    with serving_https(reliability_tls.cert, reliability_tls.key) as url:
        yield url


def test_an_untrusted_platform_certificate_stops_the_sync(rig: Rig, https_emulator: str) -> None:
    rig.platform_options["base_url"] = https_emulator
    rig.company.write(rig.folder)
    rig.write_config()
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    assert "TLS certificate verification failed" in done.stderr
    assert "platform.ca_file" in done.stderr


def test_platform_verification_off_is_a_logged_warning(rig: Rig, https_emulator: str) -> None:
    rig.platform_options.update(base_url=https_emulator, verify_tls=False)
    rig.company.write(rig.folder)
    rig.write_config()
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    warnings = [line for line in done.stderr.splitlines() if "VERIFICATION IS OFF" in line]
    assert len(warnings) == 1 and " WARNING " in warnings[0]


def test_the_platform_ca_file_makes_it_trusted(
    rig: Rig, https_emulator: str, reliability_tls: TlsFiles
) -> None:
    rig.platform_options.update(base_url=https_emulator, ca_file=str(reliability_tls.ca_cert))
    rig.company.write(rig.folder)
    rig.write_config()
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    assert "VERIFICATION IS OFF" not in done.stderr


def test_an_untrusted_ldap_certificate_stops_the_sync(rig: Rig, ldap: Slapd) -> None:
    rig.source_lines = ldap_lines(ldap, ldap.suffix, urls=[ldap.ldaps_url])
    rig.write_config()
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_FAILED, done.stdout + done.stderr
    assert ldap.ldaps_url in done.stderr and "certificate" in done.stderr.lower()
    assert rig.emulator.state()["employees"] == []


def test_ldap_verification_off_is_a_logged_warning(rig: Rig, ldap: Slapd) -> None:
    base = f"ou=tls,{ldap.suffix}"
    ldap.add_ldif(
        f"dn: {base}\nobjectClass: organizationalUnit\nou: tls\n\n"
        + synthetic_people_ldif(base, 3, divisions=1, teams=1)
    )
    rig.source_lines = ldap_lines(ldap, base, urls=[ldap.ldaps_url], verify_tls=False)
    rig.write_config()
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stdout + done.stderr
    warnings = [line for line in done.stderr.splitlines() if "verify_tls is false" in line]
    assert warnings and all(" WARNING " in line for line in warnings)


# ---------------------------------------------------------------- loopback


def listening(pid: int) -> set[tuple[str, int]]:
    """(address, port) of every TCP socket process ``pid`` listens on."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table, width in (("tcp", 8), ("tcp6", 32)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            parts = line.split()
            local, state, inode = parts[1], parts[3], parts[9]
            if state == "0A" and inode in inodes:  # 0A: LISTEN
                address, port = local.split(":")
                found.add((_address(address, width), int(port, 16)))
    return found


def _address(hexed: str, width: int) -> str:
    raw = bytes.fromhex(hexed)
    if width == 8:
        return socket.inet_ntop(socket.AF_INET, raw[::-1])
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
    return socket.inet_ntop(socket.AF_INET6, words)


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
        process.wait(DEADLINE)


def answers(port: int) -> bool:
    with closing(socket.socket()) as probe:
        probe.settimeout(0.2)
        return probe.connect_ex(("127.0.0.1", port)) == 0


def test_the_emulator_binds_to_loopback_by_default(
    processes: list[subprocess.Popen[bytes]],
) -> None:
    assert EmulatorOptions().host == "127.0.0.1"
    port = free_port()
    process = subprocess.Popen(
        [SYNCD, "emulator", "--port", str(port)],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(process)
    wait_until(lambda: answers(port), "the emulator listening")
    assert listening(process.pid) == {("127.0.0.1", port)}


def test_the_metrics_endpoint_binds_to_loopback_by_default(
    rig: Rig, processes: list[subprocess.Popen[bytes]]
) -> None:
    port = free_port()
    rig.sections["metrics"] = {"enabled": True, "port": port}
    rig.sections["schedule"] = {"interval_seconds": 3600, "jitter_seconds": 0}
    rig.company.write(rig.folder)
    rig.write_config()
    process = subprocess.Popen(
        [SYNCD, "run", "--config", str(rig.config)],
        env=clean_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    processes.append(process)
    wait_until(lambda: answers(port), "the metrics endpoint listening")
    assert listening(process.pid) == {("127.0.0.1", port)}
    metrics = RunMetrics()
    try:  # and the class itself, given the default host
        from syncd.config import MetricsSettings

        own = free_port()
        metrics.serve(MetricsSettings().host, own)
        assert ("127.0.0.1", own) in listening(os.getpid())
    finally:
        metrics.close()


# ---------------------------------------------------------------- settings file modes


@pytest.mark.parametrize(("mode", "warned"), [(0o644, True), (0o640, True), (0o600, False)])
def test_a_settings_file_others_can_read_with_a_secret_is_warned_about(
    rig: Rig, mode: int, warned: bool
) -> None:
    rig.company.write(rig.folder)
    rig.write_config()
    rig.config.chmod(mode)
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stderr
    said = "holds a secret and is readable by other users" in done.stderr
    assert said is warned, done.stderr


def test_a_readable_settings_file_without_a_secret_is_not_warned_about(rig: Rig) -> None:
    secret = rig.folder / "client_secret"
    secret.write_text("demo-secret\n")
    secret.chmod(0o600)
    rig.platform_options.update(client_secret=None, client_secret_file=str(secret))
    rig.company.write(rig.folder)
    rig.write_config()
    rig.config.chmod(0o644)
    done = rig.cli("sync", "--yes")
    assert done.returncode == EXIT_OK, done.stderr
    assert "readable by other users" not in done.stderr


def test_the_state_database_holding_the_token_is_for_this_user_alone(rig: Rig) -> None:
    rig.company.write(rig.folder)
    rig.write_config()
    before = os.umask(0o022)  # the usual umask, under which files are world-readable
    try:
        done = rig.cli("sync", "--yes")
    finally:
        os.umask(before)
    assert done.returncode == EXIT_OK, done.stderr
    assert query(rig.database, "SELECT count(*) AS n FROM tokens")[0]["n"] == 1
    assert rig.database.parent.stat().st_mode & 0o777 == 0o700
    for name in (rig.database.name, f"{rig.database.name}-wal", f"{rig.database.name}-shm"):
        found = rig.database.parent / name
        if found.exists():
            assert found.stat().st_mode & 0o777 == 0o600, name


# ---------------------------------------------------------------- the HTML report


class Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>']


def test_the_html_report_shows_hostile_names_as_text(rig: Rig) -> None:
    rig.company.person("ann")["name"] = HOSTILE[0]
    rig.company.person("bob")["name"] = HOSTILE[1]
    rig.company.unit("D4")["name"] = "<b onmouseover=alert(1)>Sales"  # (no '/': allowed)
    rig.emulator.set_faults(
        reject=[{"field": "username", "pattern": "^cat$", "message": "<svg onload=alert(1)>"}]
    )
    result = rig.sync()
    assert (result.run_id, result.outcome) == (1, "partial")
    assert rig.platform().people["ann"][0] == HOSTILE[0]  # carried as it is
    done = rig.cli("reports", "show", "1", "--format", "html")
    assert done.returncode == 0, done.stderr
    page = Page()
    page.feed(done.stdout)
    page.close()
    tags = {tag for tag, _ in page.tags}
    assert not tags & {"img", "iframe", "object", "embed"}, tags  # (svg: the chart)
    # Its own two scripts only (the search and its data, allowed by hash): none from a value.
    scripts = [dict(attrs) for tag, attrs in page.tags if tag == "script"]
    assert scripts == [{"type": "application/json", "id": "changes-data"}, {}], scripts
    handlers = [name for _, attrs in page.tags for name, _ in attrs if name.startswith("on")]
    assert handlers == []
    text = "".join(page.text)
    for value in [*HOSTILE, "<b onmouseover=alert(1)>Sales", "<svg onload=alert(1)>"]:
        assert value in text, value


def test_listening_finds_a_socket_of_this_process() -> None:
    """The helper the loopback tests rely on sees a socket this process listens on."""
    with closing(socket.socket()) as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert ("127.0.0.1", port) in listening(os.getpid())
