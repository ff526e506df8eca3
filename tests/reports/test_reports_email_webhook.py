"""E-mail (a local aiosmtpd server, STARTTLS and a login) and a webhook (a local HTTP
receiver), sent after real syncs against the emulator; both bound to 127.0.0.1 and stopped
by their fixtures."""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email import message_from_bytes
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from syncd.config import Settings, load_settings
from syncd.run.notifications import SIGNATURE_HEADER
from syncd.run.runner import RunRequest, run_sync
from tests.engine.company import World
from tests.support.processes import free_port
from tests.support.slapd import TlsFiles, make_tls_files

SMTP_USER = "syncd@acme.example"
SMTP_PASSWORD = "smtp-Pa55word-for-tests"
HOOK_SECRET = "hook-s3cret-for-tests"
REJECT = [{"field": "username", "pattern": "^(bad1|bad2)$", "message": "reason A"}]


# ---------------------------------------------------------------- the servers


@dataclass
class Mailbox:
    """What the SMTP server accepted, and the logins it saw."""

    messages: list[Message] = field(default_factory=list)
    logins: list[tuple[str, bool]] = field(default_factory=list)
    tls: list[bool] = field(default_factory=list)

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(message_from_bytes(envelope.content))
        self.tls.append(session.ssl is not None)
        return "250 OK"

    def __call__(
        self, server: Any, session: Any, envelope: Any, mechanism: str, data: Any
    ) -> AuthResult:
        assert isinstance(data, LoginPassword)
        ok = data.login.decode() == SMTP_USER and data.password.decode() == SMTP_PASSWORD
        self.logins.append((data.login.decode(), ok))
        return AuthResult(success=ok, handled=False)


@dataclass
class SmtpServer:
    port: int
    mailbox: Mailbox
    tls: TlsFiles


@pytest.fixture
def smtp(tmp_path: Path) -> Iterator[SmtpServer]:
    import ssl

    tls = make_tls_files(tmp_path / "smtp-tls", dns_names=("localhost",))
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(tls.cert, tls.key)
    mailbox = Mailbox()
    controller = Controller(
        mailbox,
        hostname="127.0.0.1",
        port=free_port(),
        tls_context=context,
        require_starttls=True,
        authenticator=mailbox,
        auth_require_tls=True,
    )
    # aiosmtpd logs each command from its own thread, even after the test that caused it:
    # quiet, so that it never writes to a stream a finished test closed.
    server_log = logging.getLogger("mail.log")
    level = server_log.level
    server_log.setLevel(logging.WARNING)
    controller.start()
    try:
        yield SmtpServer(controller.port, mailbox, tls)
    finally:
        controller.stop()
        server_log.setLevel(level)


@dataclass
class Hook:
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    status: int = 204
    url: str = ""


@pytest.fixture
def webhook() -> Iterator[Hook]:
    hook = Hook()

    class Receiver(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            hook.received.append(({k.lower(): v for k, v in self.headers.items()}, body))
            self.send_response(hook.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    hook.url = f"http://127.0.0.1:{server.server_address[1]}/hooks/syncd"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield hook
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


# ---------------------------------------------------------------- settings and runs


@pytest.fixture
def configure(world: World, tmp_path: Path) -> Callable[[str], Settings]:
    """Settings with extra TOML appended (the world's own, written first)."""

    def make(extra: str) -> Settings:
        world.settings()
        path = world.folder / "syncd.toml"
        path.write_text(path.read_text() + extra)
        return load_settings(path)

    return make


def email_toml(smtp: SmtpServer, tmp_path: Path, **keys: Any) -> str:
    password = tmp_path / "smtp.pw"
    password.write_text(SMTP_PASSWORD + "\n")
    values = {
        "to": ["it-ops@acme.example", "dan@acme.example"],
        "sender": SMTP_USER,
        "host": "localhost",
        "port": smtp.port,
        "ca_file": str(smtp.tls.ca_cert),
        "username": SMTP_USER,
        "password_file": str(password),
        **keys,
    }
    return "[notifications.email]\n" + "".join(
        f"{k} = {json.dumps(v)}\n" for k, v in values.items()
    )


def sync(world: World, settings: Settings, **request: Any) -> int:
    world.company.write(world.folder)
    return run_sync(settings, RunRequest(**request)).run_id  # after_run notifies


# ---------------------------------------------------------------- e-mail


def test_a_partial_run_is_mailed_over_starttls_with_a_login(
    world: World, smtp: SmtpServer, configure: Callable[[str], Settings], tmp_path: Path
) -> None:
    settings = configure(email_toml(smtp, tmp_path))
    world.emulator.set_faults(reject=REJECT)
    run_id = sync(world, settings)
    (mail,) = smtp.mailbox.messages
    assert smtp.mailbox.tls == [True] and smtp.mailbox.logins == [(SMTP_USER, True)]
    assert mail["Subject"].endswith(f"run {run_id}: partial (exit 1)")
    assert mail["To"] == "it-ops@acme.example, dan@acme.example" and mail["From"] == SMTP_USER
    payload = mail.get_payload(decode=True)
    assert isinstance(payload, bytes)
    body = payload.decode()
    assert "2 × reason A" in body and "employee bad1" in body and "employee bad2" in body
    assert f"report: syncd reports show {run_id}" in body
    world.emulator.set_faults()
    sync(world, settings)  # ok: not asked for by the default when = failure, block
    assert len(smtp.mailbox.messages) == 1


def test_every_run_mails_each_real_run_but_no_dry_run(
    world: World, smtp: SmtpServer, configure: Callable[[str], Settings], tmp_path: Path
) -> None:
    settings = configure(email_toml(smtp, tmp_path, when=["every_run"]))
    ok = sync(world, settings)
    sync(world, settings, dry_run=True)
    assert [m["Subject"].rsplit(": ", 1)[-1] for m in smtp.mailbox.messages] == ["ok (exit 0)"]
    assert f"run {ok}:" in smtp.mailbox.messages[0]["Subject"]


def test_a_refused_login_is_logged_without_the_password(
    world: World,
    smtp: SmtpServer,
    configure: Callable[[str], Settings],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = configure(email_toml(smtp, tmp_path, username="someone@acme.example"))
    world.emulator.set_faults(reject=REJECT)
    with caplog.at_level(logging.DEBUG):
        run_id = sync(world, settings)
    assert smtp.mailbox.messages == []
    assert set(smtp.mailbox.logins) == {("someone@acme.example", False)}  # each mechanism tried
    assert f"run {run_id}: could not send the e-mail notification: SMTPAuthenticationError" in (
        caplog.text
    )
    assert SMTP_PASSWORD not in caplog.text


def test_a_server_without_starttls_gets_nothing(
    world: World, configure: Callable[[str], Settings], caplog: pytest.LogCaptureFixture
) -> None:
    plain = Mailbox()
    controller = Controller(plain, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        extra = (
            "[notifications.email]\n"
            f'to = ["a@acme.example"]\nsender = "s@acme.example"\nhost = "127.0.0.1"\n'
            f"port = {controller.port}\n"
        )
        settings = configure(extra)
        world.emulator.set_faults(reject=REJECT)
        with caplog.at_level(logging.WARNING, logger="syncd.notifications"):
            sync(world, settings)
    finally:
        controller.stop()
    assert plain.messages == []  # never sent in clear
    assert "could not send the e-mail notification: SMTPNotSupportedError" in caplog.text


def test_email_settings_are_checked(configure: Callable[[str], Settings]) -> None:
    from syncd.errors import ConfigError

    with pytest.raises(ConfigError, match="needs host and sender"):
        configure('[notifications.email]\nto = ["a@acme.example"]\n')
    with pytest.raises(ConfigError, match="not an e-mail address"):
        configure('[notifications.email]\nto = ["nobody"]\nsender = "s@x.example"\nhost = "h"\n')
    with pytest.raises(ConfigError, match="unencrypted"):
        configure(
            '[notifications.email]\nto = ["a@x.example"]\nsender = "s@x.example"\n'
            'host = "smtp.x.example"\nsecurity = "none"\nusername = "u"\npassword = "p4ssword"\n'
        )


# ---------------------------------------------------------------- webhook


def test_a_blocked_run_posts_signed_json_with_the_secret_from_a_credential(
    world: World,
    webhook: Hook,
    configure: Callable[[str], Settings],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    credentials = tmp_path / "credentials"
    credentials.mkdir()
    (credentials / "webhook_secret").write_text(HOOK_SECRET)
    monkeypatch.setenv("CREDENTIALS_DIRECTORY", str(credentials))
    settings = configure(f'[notifications.webhook]\nurl = "{webhook.url}"\nwhen = ["block"]\n')
    assert HOOK_SECRET in settings.secret_values()  # so it is redacted everywhere
    world.emulator.set_faults(reject=REJECT)
    sync(world, settings)  # partial: not asked for
    assert webhook.received == []
    world.emulator.set_faults()
    world.company.employees = world.company.employees[:2]
    run_id = sync(world, settings)
    ((headers, body),) = webhook.received
    expected = hmac.new(HOOK_SECRET.encode(), body, hashlib.sha256).hexdigest()
    assert headers[SIGNATURE_HEADER.lower()] == f"sha256={expected}"
    assert headers["content-type"] == "application/json"
    payload = json.loads(body)
    assert payload["schema"] == 1 and payload["event"] == "syncd.run"
    assert payload["run"]["id"] == run_id and payload["run"]["outcome"] == "blocked"
    assert payload["run"]["started"].endswith(("+00:00", "Z")) or "+" in payload["run"]["started"]
    assert payload["blocked_by"][0]["name"] == "max_removals"
    assert payload["report_command"] == f"syncd reports show {run_id}"
    assert HOOK_SECRET.encode() not in body


def test_a_webhook_that_fails_is_logged_and_the_run_stands(
    world: World,
    webhook: Hook,
    configure: Callable[[str], Settings],
    caplog: pytest.LogCaptureFixture,
) -> None:
    webhook.status = 500
    settings = configure(f'[notifications.webhook]\nurl = "{webhook.url}"\n')
    world.emulator.set_faults(reject=REJECT)
    world.company.write(world.folder)
    with caplog.at_level(logging.WARNING, logger="syncd.notifications"):
        result = run_sync(settings, RunRequest())
    assert (result.outcome, result.exit_code) == ("partial", 1)
    assert len(webhook.received) == 1
    payload = json.loads(webhook.received[0][1])
    assert payload["failures"] == [{"count": 2, "error": "reason A"}]
    assert SIGNATURE_HEADER.lower() not in webhook.received[0][0]  # no secret: unsigned
    assert (
        "could not send the webhook notification: RuntimeError: the webhook answered HTTP 500"
        in (caplog.text)
    )


def test_the_example_settings_state_the_notification_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from syncd.config import NotificationSettings

    secret = tmp_path / "client_secret"
    secret.write_text("from-a-file\n")
    monkeypatch.setenv("SYNCD_PLATFORM__CLIENT_SECRET_FILE", str(secret))
    example = Path(__file__).parents[2] / "config" / "syncd.example.toml"
    notifications = load_settings(example).notifications
    assert notifications == NotificationSettings()
    assert not notifications.email.enabled and not notifications.webhook.enabled
