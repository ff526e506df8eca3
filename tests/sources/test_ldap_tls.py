"""LDAP over TLS when the URL does not name the server as its certificate does.

A server reached by IP address or by an alias: one readable line says which names the
certificate carries, and ``tls_server_name`` keeps verification on against that name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from syncd.config import LdapSource
from syncd.errors import ConfigError, SourceError
from syncd.sources.ldap import read_ldap
from tests.support.slapd import Slapd, TlsFiles, make_tls_files, running_slapd

SettingsFactory = Callable[..., LdapSource]
CERTIFICATE_NAME = "ldap.acme.example"


@pytest.fixture(scope="module")
def named_tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    """A certificate for ldap.acme.example only: not for 127.0.0.1, where the server is."""
    return make_tls_files(
        tmp_path_factory.mktemp("named-tls"), dns_names=(CERTIFICATE_NAME,), ips=()
    )


@pytest.fixture(scope="module")
def named_slapd(tmp_path_factory: pytest.TempPathFactory, named_tls: TlsFiles) -> Iterator[Slapd]:
    with running_slapd(tmp_path_factory.mktemp("named-slapd"), tls=named_tls) as server:
        server.add_ldif(
            f"dn: ou=People,{server.suffix}\nobjectClass: organizationalUnit\nou: People\n\n"
            f"dn: uid=alice,ou=People,{server.suffix}\nobjectClass: inetOrgPerson\n"
            "uid: alice\ncn: Alice\nsn: A\n"
        )
        yield server


def test_a_certificate_that_does_not_name_the_host_is_one_readable_line(
    named_slapd: Slapd, named_tls: TlsFiles, settings_on: SettingsFactory
) -> None:
    base = f"ou=People,{named_slapd.suffix}"
    settings = settings_on(
        named_slapd, base, urls=[named_slapd.ldaps_url], ca_file=named_tls.ca_cert
    )

    with pytest.raises(SourceError) as caught:
        read_ldap(settings)

    message = str(caught.value)
    assert f"TLS: the certificate names {CERTIFICATE_NAME}, not 127.0.0.1;" in message
    assert "source.ldap.tls_server_name" in message
    assert "subject" not in message and "notAfter" not in message  # no certificate dump
    assert "\n" not in message


@pytest.mark.parametrize("transport", ["ldaps", "start_tls"])
def test_the_expected_server_name_keeps_verification_on(
    named_slapd: Slapd, named_tls: TlsFiles, settings_on: SettingsFactory, transport: str
) -> None:
    base = f"ou=People,{named_slapd.suffix}"
    url = named_slapd.ldaps_url if transport == "ldaps" else named_slapd.url
    right = settings_on(
        named_slapd,
        base,
        urls=[url],
        start_tls=transport == "start_tls",
        ca_file=named_tls.ca_cert,
        tls_server_name=CERTIFICATE_NAME,
    )
    wrong = right.model_copy(update={"tls_server_name": "other.acme.example"})
    untrusted = right.model_copy(update={"ca_file": None})

    assert [e.username for e in read_ldap(right).employees.values()] == ["alice"]
    with pytest.raises(SourceError, match=f"the certificate names {CERTIFICATE_NAME}, not"):
        read_ldap(wrong)
    with pytest.raises(SourceError, match="is not trusted"):
        read_ldap(untrusted)  # the name matches, but the chain is still checked


def test_a_missing_ca_file_says_it_does_not_exist(
    named_slapd: Slapd, settings_on: SettingsFactory, tmp_path: Path
) -> None:
    missing = tmp_path / "acme-ca.pem"
    settings = settings_on(
        named_slapd, named_slapd.suffix, urls=[named_slapd.ldaps_url], ca_file=missing
    )

    with pytest.raises(ConfigError) as caught:
        read_ldap(settings)

    assert str(caught.value) == f"source.ldap.ca_file: {missing} does not exist"
