"""LDAP fixtures: one real slapd for the session, a fresh base OU for each test.

Every test reads below its own ``ou=test-N,dc=acme,dc=example``, so tests share the
server without seeing each other's entries. Tests that stop a server use ``own_slapd``.
Test modules take everything from fixtures and never import this file (pytest imports
it under a name of its own: a second import would be a second copy).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from syncd.config import LdapSource
from tests.support.samba import BULK_PEOPLE, SambaDC, running_samba, samba_ldif
from tests.support.slapd import Slapd, TlsFiles, make_tls_files, running_slapd

ROOT = Path(__file__).resolve().parents[2]

LDAP_DATA = ROOT / "tests" / "data" / "ldap"
SUFFIX = "dc=acme,dc=example"
LIMITED_DN = f"cn=limited,{SUFFIX}"  # a bind DN the server lets see 3 entries at most
LIMITED_PASSWORD = "limited-Pw-3c9e"
_SESSION_CONFIG = f'limits dn.exact="{LIMITED_DN}" size=3'
_bases = itertools.count(1)


@pytest.fixture(scope="session")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="session")
def slapd(tmp_path_factory: pytest.TempPathFactory, tls_files: TlsFiles) -> Iterator[Slapd]:
    """The session's slapd: ldap:// and ldaps://, the AD-like test schema, a size-limited DN."""
    with running_slapd(
        tmp_path_factory.mktemp("slapd"),
        suffix=SUFFIX,
        tls=tls_files,
        schemas=[LDAP_DATA / "ad-lite.schema"],
        extra_config=_SESSION_CONFIG,
    ) as server:
        server.add_ldif(
            f"dn: {LIMITED_DN}\nobjectClass: person\ncn: limited\nsn: limited\n"
            f"userPassword: {LIMITED_PASSWORD}\n"
        )
        yield server


@pytest.fixture
def own_slapd(tmp_path: Path) -> Iterator[Slapd]:
    """A slapd of this test's own, for tests that stop it."""
    with running_slapd(tmp_path / "own-slapd", suffix=SUFFIX) as server:
        yield server


@pytest.fixture
def ldap_base(slapd: Slapd) -> str:
    """An empty OU of this test's own, below the suffix."""
    name = f"test-{next(_bases)}"
    base = f"ou={name},{SUFFIX}"
    slapd.add_ldif(f"dn: {base}\nobjectClass: organizationalUnit\nou: {name}\n")
    return base


def _load_ldif(server: Slapd, name: str, base: str) -> None:
    text = (LDAP_DATA / name).read_text(encoding="utf-8").replace("{base}", base)
    server.add_ldif(text, relax=True)  # relax: the files set modifyTimestamp


@pytest.fixture
def load_ldif(slapd: Slapd, ldap_base: str) -> Callable[[str], None]:
    """Add a file of tests/data/ldap below this test's base, ``{base}`` replaced."""
    return lambda name: _load_ldif(slapd, name, ldap_base)


@pytest.fixture
def acme(slapd: Slapd, ldap_base: str) -> str:
    """The Acme company of tests/data/ldap/acme.ldif below this test's base; returns the base."""
    _load_ldif(slapd, "acme.ldif", ldap_base)
    return ldap_base


@pytest.fixture
def limited_account() -> tuple[str, str]:
    """DN and password of an account whose searches stop after 3 entries (sizelimit)."""
    return LIMITED_DN, LIMITED_PASSWORD


def _settings(server: Slapd, base: str, **overrides: Any) -> LdapSource:
    values: dict[str, Any] = {
        "urls": [server.url],
        "bind_dn": server.bind_dn,
        "bind_password": SecretStr(server.password),
        "users_base": base,
        "page_size": 50,
        "connect_timeout": 5.0,
        "read_timeout": 10.0,
    }
    values.update(overrides)
    return LdapSource(**values)


@pytest.fixture
def ldap_settings(slapd: Slapd, ldap_base: str) -> Callable[..., LdapSource]:
    """Settings reading this test's base on the session slapd; keywords override any key."""
    return lambda **overrides: _settings(slapd, ldap_base, **overrides)


@pytest.fixture
def settings_on() -> Callable[..., LdapSource]:
    """Settings for any server and base: ``settings_on(server, base, **overrides)``."""
    return _settings


@pytest.fixture(scope="session")
def samba_dc(tmp_path_factory: pytest.TempPathFactory, tls_files: TlsFiles) -> Iterator[SambaDC]:
    """A real Active Directory domain controller (Samba) for the session, with its test data."""
    with running_samba(
        tmp_path_factory.mktemp("samba"), tls_files, ldif=samba_ldif(BULK_PEOPLE)
    ) as dc:
        yield dc
