"""Connecting to an LDAP server: LDAPS or StartTLS with certificate checks, the simple bind.

The servers in ``urls`` are tried in order until one can be used; a Session names its
server in every error raised while it is used.
"""

from __future__ import annotations

import logging
import math
import re
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import ldap3
from ldap3.core.exceptions import LDAPCertificateError, LDAPException
from ldap3.core.results import RESULT_CODES
from ldap3.utils.log import set_library_log_hide_sensitive_data

from syncd.config import LdapSource
from syncd.errors import ConfigError, SourceError
from syncd.logs import redact
from syncd.sources.ldap.wire import Wire

log = logging.getLogger(__name__)
set_library_log_hide_sensitive_data(True)  # should anyone turn ldap3's own logging on


class _Unreachable(Exception):
    """This server could not be used (network, TLS): the next one in ``urls`` may be."""


@dataclass
class Session:
    """A connection to one server, named in every error raised while it is used."""

    url: str
    connection: ldap3.Connection
    read_timeout: float
    wire: Wire = field(init=False)

    def __post_init__(self) -> None:
        self.wire = Wire(self)

    def close(self) -> None:
        try:
            self.connection.unbind()
        except (LDAPException, OSError) as exc:  # already gone: nothing left to release
            log.debug("unbind from %s: %s", self.url, exc)

    def fail(self, step: str, problem: str) -> SourceError:
        return SourceError(redact(f"LDAP server {self.url}: {step}: {problem}"))


def connect(settings: LdapSource, password: str | None) -> Session:
    """A bound session on the first server of ``urls`` that can be reached."""
    tls = _tls(settings)
    tried: list[str] = []
    for url in settings.urls:
        try:
            return _open(url, settings, password, tls)
        except _Unreachable as exc:
            log.warning("LDAP server %s cannot be used: %s", url, exc)
            tried.append(f"{url} ({exc})")
    raise SourceError(redact("no LDAP server could be used; tried " + "; ".join(tried)))


def _tls(settings: LdapSource) -> ldap3.Tls:
    if not settings.verify_tls:
        log.warning(
            "source.ldap.verify_tls is false: the LDAP server's certificate is NOT checked; "
            "anyone on the network path can read the bind password and the directory"
        )
        return ldap3.Tls(validate=ssl.CERT_NONE)
    ca_file = str(settings.ca_file) if settings.ca_file else None
    if settings.ca_file is not None and not settings.ca_file.exists():
        raise ConfigError(f"source.ldap.ca_file: {ca_file} does not exist")
    # A name the certificate may carry besides the URL's host (an IP address, an alias).
    names = [settings.tls_server_name] if settings.tls_server_name else None
    try:
        return ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=ca_file, valid_names=names)
    except LDAPException as exc:
        raise ConfigError(f"source.ldap.ca_file: {ca_file} cannot be used ({exc})") from exc


def _open(url: str, settings: LdapSource, password: str | None, tls: ldap3.Tls) -> Session:
    secure = url.lower().startswith("ldaps://") or settings.start_tls
    if settings.bind_dn and not secure:
        log.warning(
            "LDAP %s: the bind password is sent unencrypted (use ldaps:// or start_tls)", url
        )
    try:
        server = ldap3.Server(
            url, get_info=ldap3.NONE, tls=tls, connect_timeout=settings.connect_timeout
        )
    except LDAPException as exc:
        raise _Unreachable(f"not a usable LDAP URL: {exc}") from exc
    connection = ldap3.Connection(
        server,
        user=settings.bind_dn,
        password=password,
        authentication=ldap3.SIMPLE if settings.bind_dn else ldap3.ANONYMOUS,
        client_strategy=ldap3.SYNC,
        auto_referrals=False,
        raise_exceptions=False,
        read_only=True,
        check_names=False,
        # ldap3 packs it into SO_RCVTIMEO as a whole number; the exact value is set below.
        receive_timeout=max(1, math.ceil(settings.read_timeout)),
    )
    session = Session(url, connection, settings.read_timeout)
    _step(session, "connect", lambda: connection.open(read_server_info=False))
    wants_start_tls = settings.start_tls and not url.lower().startswith("ldaps://")
    if wants_start_tls and not _step(
        session, "starttls", lambda: connection.start_tls(read_server_info=False)
    ):
        session.close()
        raise _Unreachable(f"starttls: refused: {_result_text(connection.result)}")
    if settings.bind_dn:
        _bind(session, settings.bind_dn)
    connection.socket.settimeout(settings.read_timeout)
    return session


def _step(session: Session, step: str, action: Callable[[], Any]) -> Any:
    """Run a connect-phase action; network and TLS failures make the server unreachable."""
    try:
        return action()
    except (LDAPException, OSError) as exc:
        session.close()
        raise _Unreachable(f"{step}: {_describe_connect_error(exc, session.url)}") from exc


def _bind(session: Session, bind_dn: str) -> None:
    connection = session.connection
    if _step(session, "bind", lambda: connection.bind(read_server_info=False)):
        return
    result = connection.result or {}
    session.close()
    if result.get("result") in (51, 52):  # busy, unavailable: another server may do
        raise _Unreachable(f"bind: {_result_text(result)}")
    # Refused credentials are not retried elsewhere: that could lock the account out.
    raise session.fail(f"bind as {bind_dn}", f"refused: {_result_text(result)}")


def _describe_connect_error(exc: BaseException, url: str) -> str:
    text = str(exc)
    host = urlsplit(url).hostname or url
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            f"TLS: the certificate of {host} is not trusted ({_ssl_reason(text)}); "
            "set source.ldap.ca_file to the CA that signed it"
        )
    if isinstance(exc, LDAPCertificateError) or "doesn't match any name" in text:
        return _name_mismatch(text, host)
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return f"timed out ({text})"
    if "refused" in text.lower():
        return "connection refused"
    if "invalid server address" in text:
        return f"the host name {host} does not resolve"
    return text


# ldap3's mismatch message holds the certificate as ssl.getpeercert() gives it: its names
# are ('DNS', 'name') and ('IP Address', 'ip') pairs, else its subject's commonName (the
# first one: the issuer's comes after).
_CERTIFICATE_NAMES = re.compile(r"\('(?:DNS|IP Address)', '([^']+)'\)")
_COMMON_NAME = re.compile(r"\('commonName', '([^']+)'\)")


def _name_mismatch(text: str, host: str) -> str:
    names = _CERTIFICATE_NAMES.findall(text) or _COMMON_NAME.findall(text)[:1]
    named = (
        f"names {', '.join(dict.fromkeys(names))}, not {host}" if names else f"does not name {host}"
    )
    return (
        f"TLS: the certificate {named}; connect by a name it carries, or set "
        "source.ldap.tls_server_name to it (verification stays on)"
    )


def _ssl_reason(text: str) -> str:
    match = re.search(r"certificate verify failed: ([^(\]']+)", text)
    return match.group(1).strip() if match else text


def _result_text(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "no answer"
    code = result.get("result")
    name = result.get("description") or RESULT_CODES.get(code or 0, f"result {code}")
    message = result.get("message")
    return f"{name}" + (f" ({message})" if message else "")
