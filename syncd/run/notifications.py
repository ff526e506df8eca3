"""Telling people about runs: the platform's text message to administrators, an e-mail
(SMTP, STARTTLS by default) and a webhook (a JSON POST, signed when a secret is set).

Each is opt-in and best effort: a run is over and recorded before anyone is told, so a
failure to notify is logged (redacted) and never raised. Dry runs notify nobody.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import smtplib
import ssl
from collections.abc import Callable, Sequence
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from functools import partial
from pathlib import Path

from syncd import report as rpt
from syncd import snapshot as store
from syncd.config import EmailNotification, Settings, WebhookNotification, platform_of
from syncd.logs import redact

log = logging.getLogger("syncd.notifications")

SIGNATURE_HEADER = "X-Syncd-Signature-256"


def wanted(when: Sequence[str], run: rpt.RunInfo) -> bool:
    """Whether a run is one the ``when`` list asks about: failure, block, every_run."""
    if run.mode != "apply" or run.outcome == "running":
        return False
    if "every_run" in when:
        return True
    if run.outcome == "blocked":
        return "block" in when
    return run.outcome in ("partial", "failed") and "failure" in when


def should_notify(run: rpt.RunInfo) -> bool:
    """The platform message: failed items, a failed run or a blocked one."""
    return wanted(("failure", "block"), run)


def notify_all(settings: Settings, state: store.StateStore, run_id: int) -> None:
    """After a run: every notification the settings turn on, each on its own."""
    notify(settings, state, run_id)
    channels: list[tuple[str, bool, Sequence[str], Callable[[rpt.RunReport], None]]] = [
        (
            "e-mail",
            settings.notifications.email.enabled,
            settings.notifications.email.when,
            lambda report: send_email(settings.notifications.email, report),
        ),
        (
            "webhook",
            settings.notifications.webhook.enabled,
            settings.notifications.webhook.when,
            lambda report: send_webhook(settings.notifications.webhook, report),
        ),
    ]
    if not any(enabled for _, enabled, _, _ in channels):
        return
    try:
        from syncd.run.runs import load_report

        report = load_report(state, run_id, failed_only=True, history=0)
    except Exception as exc:
        log.warning("run %d: could not read its report to notify: %s", run_id, _said(exc))
        return
    for name, enabled, when, send in channels:
        if enabled and wanted(when, report.run):
            _attempt(name, run_id, partial(send, report))


def _attempt(name: str, run_id: int, send: Callable[[], None]) -> None:
    try:
        send()
    except Exception as exc:  # the run is over and recorded: nothing here may undo that
        log.warning("run %d: could not send the %s notification: %s", run_id, name, _said(exc))
        return
    log.info("run %d: %s notification sent", run_id, name)


def _said(exc: BaseException) -> str:
    return redact(f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------- the platform's message


def notify(settings: Settings, state: store.StateStore, run_id: int) -> bool:
    """Tell ``reports.notify_usernames`` about a run that needs them; True when sent."""
    recipients = list(settings.reports.notify_usernames)
    if not recipients:
        return False
    try:
        from syncd.run.runs import load_report

        report = load_report(state, run_id, failed_only=True, history=0)
        if not should_notify(report.run):
            return False
        _send_text(settings, state, recipients, rpt.render_notification(report))
    except Exception as exc:  # the run is over and recorded: nothing here may undo that
        log.warning("run %d: could not notify %s: %s", run_id, ", ".join(recipients), _said(exc))
        return False
    log.info("run %d: notified %s", run_id, ", ".join(recipients))
    return True


def _send_text(
    settings: Settings, state: store.StateStore, recipients: Sequence[str], message: str
) -> None:
    from syncd.platform import PlatformClient  # httpx is needed only when there is a message

    with PlatformClient(platform_of(settings), state.tokens) as client:
        client.send_text(recipients, message)


# ---------------------------------------------------------------- e-mail and webhook


def tls_context(verify: bool, ca_file: Path | None, what: str) -> ssl.SSLContext:
    """Certificates verified (against ``ca_file`` when given) unless ``verify`` is off."""
    context = ssl.create_default_context(cafile=str(ca_file) if ca_file else None)
    if not verify:
        log.warning("TLS certificate verification is off for the %s notification", what)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    return context


def email_message(settings: EmailNotification, report: rpt.RunReport) -> EmailMessage:
    message = EmailMessage()
    message["Subject"] = rpt.email_subject(report)
    message["From"] = settings.sender
    message["To"] = ", ".join(settings.to)
    message["Date"] = formatdate(localtime=True)
    message["Message-ID"] = make_msgid(domain="syncd.invalid")
    message.set_content(rpt.email_body(report))
    return message


def send_email(settings: EmailNotification, report: rpt.RunReport) -> None:
    assert settings.host is not None  # the settings make sure of it when e-mail is on
    context = tls_context(settings.verify_tls, settings.ca_file, "e-mail")
    server: smtplib.SMTP
    if settings.security == "tls":
        server = smtplib.SMTP_SSL(
            settings.host, settings.port, timeout=settings.timeout, context=context
        )
    else:
        server = smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout)
    with server:
        if settings.security == "starttls":
            server.starttls(context=context)  # raises when not offered: never sent in clear
        if settings.username is not None:
            password = settings.password.get_secret_value() if settings.password else ""
            server.login(settings.username, password)
        server.send_message(email_message(settings, report))


def signature(secret: str, body: bytes) -> str:
    """``sha256=<hex>``: the HMAC-SHA256 of the body, as GitHub's webhooks sign theirs."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def send_webhook(settings: WebhookNotification, report: rpt.RunReport) -> None:
    import httpx  # only when a webhook is configured

    assert settings.url is not None
    body = json.dumps(rpt.webhook_payload(report), ensure_ascii=False, sort_keys=True)
    data = body.encode("utf-8")
    headers = {"Content-Type": "application/json", "User-Agent": "syncd"}
    if settings.secret is not None:
        headers[SIGNATURE_HEADER] = signature(settings.secret.get_secret_value(), data)
    context = tls_context(settings.verify_tls, settings.ca_file, "webhook")
    with httpx.Client(timeout=settings.timeout, verify=context) as client:
        answer = client.post(settings.url, content=data, headers=headers)
    if answer.status_code >= 300:
        raise RuntimeError(f"the webhook answered HTTP {answer.status_code}")
