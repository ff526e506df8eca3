"""The LDAP source's failures: each raises SourceError naming the server and the step.

Never a partial Directory: a read that cannot finish returns nothing at all.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from ldap3.utils.log import EXTENDED, OFF, set_library_log_detail_level
from pydantic import SecretStr

from syncd.cli import run_cli
from syncd.config import LdapSource
from syncd.errors import ConfigError, SourceError
from syncd.sources.ldap import read_ldap
from syncd.sources.ldap import wire as ldap_source
from tests.support.processes import free_port
from tests.support.slapd import Slapd, TlsFiles, synthetic_people_ldif
from tests.support.waiting import scaled

SettingsFactory = Callable[..., LdapSource]

WRONG_PASSWORD = "Wrong-Pw-5e1f-never-valid"


# ---------------------------------------------------------------- TLS


def test_ldaps_verified_with_the_ca_file(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory, tls_files: TlsFiles
) -> None:
    directory = read_ldap(ldap_settings(urls=[slapd.ldaps_url], ca_file=tls_files.ca_cert))

    assert len(directory.employees) == 8


def test_start_tls_verified_with_the_ca_file(
    acme: str, ldap_settings: SettingsFactory, tls_files: TlsFiles
) -> None:
    directory = read_ldap(ldap_settings(start_tls=True, ca_file=tls_files.ca_cert))

    assert len(directory.employees) == 8


@pytest.mark.parametrize("transport", ["ldaps", "start_tls"])
def test_an_untrusted_certificate_is_refused_naming_the_host(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory, transport: str
) -> None:
    if transport == "ldaps":
        settings = ldap_settings(urls=[slapd.ldaps_url])
    else:
        settings = ldap_settings(start_tls=True)

    with pytest.raises(SourceError) as caught:
        read_ldap(settings)

    message = str(caught.value)
    assert "certificate of 127.0.0.1 is not trusted" in message
    assert "ca_file" in message
    assert ("starttls:" if transport == "start_tls" else "connect:") in message


def test_a_ca_file_that_cannot_be_read_is_a_config_error(
    slapd: Slapd, ldap_settings: SettingsFactory, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match=r"source\.ldap\.ca_file"):
        read_ldap(ldap_settings(urls=[slapd.ldaps_url], ca_file=tmp_path / "missing.pem"))


def test_verify_tls_false_reads_but_warns(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="syncd.sources.ldap"):
        directory = read_ldap(ldap_settings(urls=[slapd.ldaps_url], verify_tls=False))

    assert len(directory.employees) == 8
    assert "NOT checked" in caplog.text


# ---------------------------------------------------------------- binding and bases


def test_a_refused_bind_names_the_dn_and_server_never_the_password(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    settings = ldap_settings(bind_password=SecretStr(WRONG_PASSWORD))

    set_library_log_detail_level(EXTENDED)  # ldap3's own logging, at its most detailed
    try:
        with pytest.raises(SourceError) as caught:
            read_ldap(settings)
    finally:
        set_library_log_detail_level(OFF)

    message = str(caught.value)
    assert slapd.bind_dn in message and slapd.url in message
    assert "invalidCredentials" in message
    assert "BIND request" in caplog.text  # ldap3 did log the bind
    for text in (message, repr(caught.value), caplog.text, str(caught.value.__cause__)):
        assert WRONG_PASSWORD not in text


def test_a_base_that_does_not_exist_is_named(slapd: Slapd, ldap_settings: SettingsFactory) -> None:
    missing = f"ou=nowhere,{slapd.suffix}"

    with pytest.raises(SourceError, match=f"the base {missing} does not exist"):
        read_ldap(ldap_settings(users_base=missing))


def test_an_invalid_filter_is_named(acme: str, ldap_settings: SettingsFactory) -> None:
    with pytest.raises(SourceError, match=r"invalid filter '\(uid=alice'"):
        read_ldap(ldap_settings(users_filter="(uid=alice"))


def test_a_size_limit_stops_the_read(
    acme: str, ldap_settings: SettingsFactory, limited_account: tuple[str, str]
) -> None:
    dn, password = limited_account
    settings = ldap_settings(bind_dn=dn, bind_password=SecretStr(password), page_size=2)

    with pytest.raises(SourceError, match=r"sizeLimitExceeded.*limits for the bind DN"):
        read_ldap(settings)


def test_a_referral_inside_the_subtree_fails_the_read(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: ou=Elsewhere,{acme}\nobjectClass: referral\nobjectClass: extensibleObject\n"
        "ou: Elsewhere\nref: ldap://other.example/ou=Elsewhere,dc=other,dc=example\n",
        manage_dsa_it=True,
    )

    with pytest.raises(SourceError, match=r"referral to ldap://other\.example/"):
        read_ldap(ldap_settings())
    with pytest.raises(SourceError, match="is on another server"):
        read_ldap(ldap_settings(users_base=f"ou=Team,ou=Elsewhere,{acme}"))


# ---------------------------------------------------------------- servers


def test_all_servers_down_names_every_server_tried(ldap_settings: SettingsFactory) -> None:
    dead = [f"ldap://127.0.0.1:{free_port()}", f"ldap://127.0.0.1:{free_port()}"]

    with pytest.raises(SourceError) as caught:
        read_ldap(ldap_settings(urls=dead))

    message = str(caught.value)
    for url in dead:
        assert f"{url} (connect: connection refused)" in message


def test_a_host_name_that_does_not_resolve(ldap_settings: SettingsFactory) -> None:
    with pytest.raises(SourceError, match=r"no-such-host\.invalid does not resolve"):
        read_ldap(ldap_settings(urls=["ldap://no-such-host.invalid:389"]))


def test_failover_to_the_next_server(
    slapd: Slapd, acme: str, ldap_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    dead = f"ldap://127.0.0.1:{free_port()}"

    with caplog.at_level(logging.WARNING, logger="syncd.sources.ldap"):
        directory = read_ldap(ldap_settings(urls=[dead, slapd.url]))

    assert len(directory.employees) == 8
    assert slapd.url in directory.source
    assert f"{dead} cannot be used" in caplog.text


def test_check_names_the_server_read_after_failover(
    slapd: Slapd, acme: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dead = f"ldap://127.0.0.1:{free_port()}"
    config = tmp_path / "syncd.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[source]\nkind = "ldap"\n[source.ldap]\n'
        f'urls = ["{dead}", "{slapd.url}"]\nbind_dn = "{slapd.bind_dn}"\n'
        f'bind_password = "{slapd.password}"\nusers_base = "{acme}"\n'
        '[platform]\nbase_url = "http://127.0.0.1:9"\ndomain_id = "acme"\n'
        'org_code = "acme"\norg_id = "acme"\nclient_id = "syncd"\nclient_secret = "unused"\n'
    )
    config.chmod(0o600)

    code = run_cli(["check", "--config", str(config)])

    output = capsys.readouterr().out
    assert code == 0, output
    assert f"source      {slapd.url}/{acme}\n" in output  # the server read, not the list
    assert "employees   8" in output


def test_a_server_that_never_answers_times_out(ldap_settings: SettingsFactory) -> None:
    with silent_server() as url, pytest.raises(SourceError, match=f"{url} \\(bind: timed out"):
        read_ldap(ldap_settings(urls=[url], read_timeout=1.0))


@contextmanager
def silent_server() -> Iterator[str]:
    """A TCP listener whose connections the kernel accepts and nobody ever answers."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield f"ldap://127.0.0.1:{listener.getsockname()[1]}"


def test_a_search_that_gets_no_answer_times_out(ldap_settings: SettingsFactory) -> None:
    with bind_then_silence() as url, pytest.raises(SourceError) as caught:
        read_ldap(ldap_settings(urls=[url], read_timeout=1.0))

    assert f"{url}: search departments under" in str(caught.value)
    assert "page 1: no answer within 1s" in str(caught.value)


@contextmanager
def bind_then_silence() -> Iterator[str]:
    """A server that accepts any bind, then never answers again."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)

        def serve() -> None:
            connection, _ = listener.accept()
            with connection:
                request = connection.recv(4096)  # BindRequest: 30 <length> 02 <n> <id> ...
                start = 2 if request[1] < 0x80 else 2 + (request[1] & 0x7F)
                message_id = request[start : start + 2 + request[start + 1]]  # the INTEGER
                success = bytes([0x61, 0x07, 0x0A, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00])
                body = message_id + success
                connection.sendall(bytes([0x30, len(body)]) + body)
                while connection.recv(4096):  # until the client gives up and closes
                    pass

        server = threading.Thread(target=serve, daemon=True)
        server.start()
        yield f"ldap://127.0.0.1:{listener.getsockname()[1]}"
        server.join(timeout=scaled(10))


def test_a_server_gone_between_pages_fails_the_whole_read(
    own_slapd: Slapd, settings_on: SettingsFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = f"ou=People,{own_slapd.suffix}"
    own_slapd.add_ldif(
        f"dn: {base}\nobjectClass: organizationalUnit\nou: People\n\n"
        + synthetic_people_ldif(base, 30, divisions=1, teams=1)
    )
    settings = settings_on(
        own_slapd,
        base,
        page_size=5,
        departments_from="attribute",  # no OU search: every page request is for people
        department_attribute="departmentNumber",
    )
    send = ldap_source.send_page
    sent = [0]

    def stop_before_the_third_page(*args: Any) -> int:
        sent[0] += 1
        if sent[0] == 3:
            own_slapd.stop()
        return send(*args)

    monkeypatch.setattr(ldap_source, "send_page", stop_before_the_third_page)

    with pytest.raises(SourceError) as caught:
        read_ldap(settings)

    message = str(caught.value)
    assert own_slapd.url in message
    assert f"search users under {base}: page 3: connection lost" in message
