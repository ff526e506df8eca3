"""The LDAP source's errors keep their causes, and the bind password never rides along.

Generated over the real slapd: each way of reaching the server (ldap://, ldaps:// and
StartTLS with a certificate not trusted or trusted, a closed port) with each password
(refused, or right), and a read that then fails (a filter the server cannot take). The
error, formatted with its chain of causes as a traceback prints it, never holds either
password.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from typing import Any

import pytest
from ldap3.core.exceptions import LDAPException
from pydantic import SecretStr

from syncd.config import LdapSource
from syncd.errors import SyncdError
from syncd.sources.ldap import read_ldap
from tests.support.processes import free_port
from tests.support.slapd import Slapd, TlsFiles

SettingsFactory = Callable[..., LdapSource]

WRONG_PASSWORD = "Wrong-Pw-61c2-never-valid"

REACH = ("ldap", "ldaps_untrusted", "start_tls_untrusted", "ldaps_trusted", "closed_port")


def reach(slapd: Slapd, tls_files: TlsFiles, how: str) -> dict[str, Any]:
    if how == "ldaps_untrusted":
        return {"urls": [slapd.ldaps_url]}
    if how == "start_tls_untrusted":
        return {"start_tls": True}
    if how == "ldaps_trusted":
        return {"urls": [slapd.ldaps_url], "ca_file": tls_files.ca_cert}
    if how == "closed_port":
        return {"urls": [f"ldap://127.0.0.1:{free_port()}"]}
    return {}


@pytest.mark.parametrize("bad_filter", [False, True], ids=["read", "bad_filter"])
@pytest.mark.parametrize("password", ["wrong", "right"])
@pytest.mark.parametrize("how", REACH)
def test_no_password_in_an_error_or_its_causes(
    slapd: Slapd,
    acme: str,
    ldap_settings: SettingsFactory,
    tls_files: TlsFiles,
    how: str,
    password: str,
    bad_filter: bool,
) -> None:
    overrides = reach(slapd, tls_files, how)
    if password == "wrong":
        overrides["bind_password"] = SecretStr(WRONG_PASSWORD)
    if bad_filter:
        overrides["users_filter"] = "(uid=alice"
    settings = ldap_settings(**overrides)
    if how in ("ldap", "ldaps_trusted") and password == "right" and not bad_filter:
        assert len(read_ldap(settings).employees) == 8  # the ways that work
        return

    with pytest.raises(SyncdError) as caught:
        read_ldap(settings)

    printed = "".join(traceback.format_exception(caught.value))
    assert WRONG_PASSWORD not in printed and slapd.password not in printed


def test_a_filter_the_server_cannot_take_keeps_ldap3s_error_as_the_cause(
    acme: str, ldap_settings: SettingsFactory
) -> None:
    with pytest.raises(SyncdError, match="invalid filter") as caught:
        read_ldap(ldap_settings(users_filter="(uid=alice"))

    assert isinstance(caught.value.__cause__, LDAPException)
