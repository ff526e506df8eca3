"""The active_directory flavor against a real domain controller (Samba AD, on loopback).

What the AD-like slapd cannot show: objectCategory expansion in the default filter,
server-maintained uSNChanged and highestCommittedUSN, objectGUIDs the server makes,
accountExpires, paging beyond the 1,000-entry cap, the continuation references a search
of the domain root returns (to CN=Configuration, and to the child domain of
tests/support/samba.py), and the Global Catalog port reading that child domain.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import syncd.sources.ldap
from syncd.cli import run_cli
from syncd.config import LdapSource, PhotoSettings, SourceSettings
from syncd.emulator import RunningEmulator
from syncd.model import Directory, Employee, Kind, State
from syncd.sources import active_directory as ad
from syncd.sources.ldap import read_ldap
from syncd.sources.ldap import wire as ldap_wire
from syncd.sources.photos import PhotoReader
from tests.support.admin import AnotherAdmin
from tests.support.images import jpeg
from tests.support.samba import BASE, BULK_PEOPLE, CHILD, SambaDC, ad_source
from tests.support.slapd import TlsFiles

ACME = f"OU=Acme,{BASE}"


@pytest.fixture
def ad_settings(samba_dc: SambaDC, tls_files: TlsFiles) -> Callable[..., LdapSource]:
    return functools.partial(ad_source, samba_dc, tls_files, users_base=ACME, page_size=1000)


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


def test_a_domain_read_with_server_made_ids_states_and_mark(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    usn_before = samba_dc.highest_committed_usn()

    directory = read_ldap(ad_settings())

    everyone = people(directory)
    assert set(everyone) == {"alice", "bob", "carol", "dave"}  # PC01$ is a computer
    alice = everyone["alice"]
    assert str(uuid.UUID(alice.id)) == alice.id  # the objectGUID Samba made, as AD shows it
    assert (alice.name, alice.email, alice.sn) == ("Alice L.", "alice@acme.test", "1001")
    assert directory.path(alice.positions[0].department_id or "") == ("Engineering",)
    assert everyone["bob"].state is State.DEPARTED  # ACCOUNTDISABLE
    assert everyone["carol"].state is State.DEPARTED  # accountExpires in 2020
    assert everyone["dave"].state is State.ACTIVE  # accountExpires 0: never
    assert alice.state is State.ACTIVE
    assert directory.warnings == ()
    assert directory.cursor is not None
    mark = ad.UsnMark.parse(directory.cursor)
    assert mark.usn >= usn_before and mark.controller.endswith(".acme.test")
    assert mark.checked is not None


def test_paging_past_the_thousand_entry_cap(
    ad_settings: Callable[..., LdapSource], monkeypatch: pytest.MonkeyPatch
) -> None:
    pages: list[int] = []
    send = ldap_wire.send_page

    def counting(connection: Any, request: Any, page_size: int, cookie: bytes) -> int:
        pages.append(page_size)
        return send(connection, request, page_size, cookie)

    monkeypatch.setattr(ldap_wire, "send_page", counting)

    directory = read_ldap(ad_settings(users_base=f"OU=Bulk,{BASE}"))

    assert len(directory.employees) == BULK_PEOPLE
    assert len({e.id for e in directory.employees.values()}) == BULK_PEOPLE
    # One page of OUs, then the people in two pages of at most 1000.
    assert pages == [1000, 1000, 1000]


def test_a_change_read_follows_usn_changed(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    samba_dc.add(f"OU=Delta,{BASE}", "organizationalUnit", {})
    for name in ("erin", "frank"):
        samba_dc.add(
            f"CN={name},OU=Delta,{BASE}",
            "user",
            {"sAMAccountName": name, "userAccountControl": "544", "title": "Clerk"},
        )
    settings = ad_settings(users_base=f"OU=Delta,{BASE}")
    full = read_ldap(settings)
    assert set(people(full)) == {"erin", "frank"}

    samba_dc.modify(f"CN=erin,OU=Delta,{BASE}", {"title": "Head Clerk"})
    delta = read_ldap(settings, since=full.cursor)

    assert not delta.complete
    assert {u: e.job_title for u, e in people(delta).items()} == {"erin": "Head Clerk"}
    assert delta.cursor is not None and full.cursor is not None
    assert ad.UsnMark.parse(delta.cursor).usn > ad.UsnMark.parse(full.cursor).usn
    assert people(read_ldap(settings, since=delta.cursor)) == {}


def test_an_account_expiring_between_two_reads_departs_its_person(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    now = datetime.now(UTC)
    samba_dc.add(f"OU=Expiry,{BASE}", "organizationalUnit", {})
    samba_dc.add(
        f"CN=gina,OU=Expiry,{BASE}",
        "user",
        {
            "sAMAccountName": "gina",
            "userAccountControl": "544",
            "accountExpires": str(ad.filetime(now + timedelta(days=1))),
        },
    )
    samba_dc.add(
        f"CN=hank,OU=Expiry,{BASE}",
        "user",
        {"sAMAccountName": "hank", "userAccountControl": "544", "accountExpires": "0"},
    )
    settings = ad_settings(users_base=f"OU=Expiry,{BASE}")
    full = read_ldap(settings, clock=lambda: now)
    assert {u: e.state for u, e in people(full).items()} == {
        "gina": State.ACTIVE,
        "hank": State.ACTIVE,
    }

    # Two days on, nothing changed in the directory: no uSNChanged moved, yet gina's
    # account has expired. The change read finds her by the expiry window since the mark.
    later = now + timedelta(days=2)
    delta = read_ldap(settings, since=full.cursor, clock=lambda: later)

    assert {u: e.state for u, e in people(delta).items()} == {"gina": State.DEPARTED}
    assert delta.cursor is not None
    assert ad.UsnMark.parse(delta.cursor).checked == later.replace(microsecond=0)
    # The next change read looks only after that: gina is not read again.
    again = read_ldap(settings, since=delta.cursor, clock=lambda: later + timedelta(hours=1))
    assert people(again) == {}
    # A full read sees the same as the change read did.
    assert people(read_ldap(settings, clock=lambda: later))["gina"].state is State.DEPARTED


def test_an_expiry_passing_between_two_runs_locks_the_person_by_an_incremental_sync(
    samba_dc: SambaDC,
    tls_files: TlsFiles,
    emulator: RunningEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = datetime.now(UTC)
    base = f"OU=Lapsing,{BASE}"
    samba_dc.add(base, "organizationalUnit", {})
    for name, expires in (("lena", ad.filetime(now + timedelta(days=1))), ("mo", 0)):
        samba_dc.add(
            f"CN={name},{base}",
            "user",
            {"sAMAccountName": name, "userAccountControl": "544", "accountExpires": str(expires)},
        )
    config = tmp_path / "syncd.toml"
    config.write_text(
        f'state_dir = "{tmp_path / "state"}"\n'
        '[source]\nkind = "ldap"\n[source.ldap]\nflavor = "active_directory"\n'
        f'urls = ["{samba_dc.url}"]\nca_file = "{tls_files.ca_cert}"\n'
        f'bind_dn = "{samba_dc.bind_dn}"\nbind_password = "{samba_dc.password}"\n'
        f'users_base = "{base}"\n'
        "[sync]\nmax_removal_ratio = 0.5\n"  # lena's lock is half of the two people
        f'[platform]\nbase_url = "{emulator.base_url}"\ndomain_id = "acme"\norg_code = "acme"\n'
        'client_id = "syncd"\nclient_secret = "demo-secret"\norg_id = "acme"\n'
    )
    config.chmod(0o600)
    # The read's clock is set, as a day passing cannot be waited for: the rest is real.
    clock = [now]
    read = functools.partial(read_ldap, clock=lambda: clock[0])
    monkeypatch.setattr(syncd.sources.ldap, "read_ldap", read)
    admin = AnotherAdmin(emulator)

    assert run_cli(["sync", "--yes", "--config", str(config)]) == 0
    assert admin.employee("lena").get("locked") is not True

    # Two days on, nothing changed in the domain: only the expiry window finds lena.
    clock[0] = now + timedelta(days=2)
    assert run_cli(["sync", "--yes", "--incremental", "--config", str(config)]) == 0

    assert admin.employee("lena")["locked"] is True
    assert admin.employee("mo").get("locked") is not True


def test_the_configuration_partition_is_expected_a_child_domain_is_a_warning(
    ad_settings: Callable[..., LdapSource], caplog: pytest.LogCaptureFixture
) -> None:
    settings = ad_settings(
        users_base=BASE,  # the domain root: Samba refers to CN=Configuration and DC=child
        users_filter="(&(objectCategory=person)(objectClass=user)(sAMAccountName=alice))",
        departments_from="attribute",
        department_attribute="department",
    )

    with caplog.at_level(logging.DEBUG, logger="syncd.sources.ldap"):
        directory = read_ldap(settings)

    assert set(people(directory)) == {"alice"}
    (warning,) = directory.warnings
    assert warning.startswith("the domain child.acme.test was not read: ")
    assert re.search(r"CN=Configuration,DC=acme,DC=test is an application partition", caplog.text)


def forest_settings(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource], *names: str
) -> LdapSource:
    """The domain root read with the child domain through the Global Catalog (the named people)."""
    named = "".join(f"(sAMAccountName={name})" for name in names)
    return ad_settings(
        users_base=BASE,
        users_filter=f"(&{ad.USERS_FILTER}(|{named}))",
        departments_from="attribute",
        department_attribute="department",
        global_catalog=samba_dc.global_catalog_url,
    )


def test_a_child_domain_is_read_through_the_global_catalog(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    usn_before = samba_dc.highest_committed_usn()

    directory = read_ldap(forest_settings(samba_dc, ad_settings, "alice", "ivy"))

    assert set(people(directory)) == {"alice", "ivy"}
    assert directory.warnings == ()
    assert directory.cursor is not None
    mark = ad.UsnMark.parse(directory.cursor)
    # The catalog's own mark, and the domain read under it (one server here: its name too).
    assert mark.catalog is not None
    assert mark.catalog.server == mark.controller
    assert usn_before <= mark.catalog.usn <= samba_dc.highest_committed_usn()
    assert mark.catalog.domains == {"child.acme.test"}


def test_an_incremental_read_asks_the_catalog_by_the_catalogs_own_mark(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    samba_dc.add(f"OU=Forest,{BASE}", "organizationalUnit", {})
    kim = f"CN=kim,OU=Forest,{BASE}"
    samba_dc.add(kim, "user", {"sAMAccountName": "kim", "userAccountControl": "544"})
    settings = forest_settings(samba_dc, ad_settings, "kim", "ivy")
    full = read_ldap(settings)
    assert full.cursor is not None
    first = ad.UsnMark.parse(full.cursor)
    assert first.catalog is not None
    samba_dc.modify(f"CN=Ivy Child,{CHILD}", {"title": "Child Clerk"})
    samba_dc.modify(kim, {"title": "Forester"})
    after = samba_dc.highest_committed_usn()

    # With the marks as read, both changes are read; the new mark has both servers' own.
    delta = read_ldap(settings, since=full.cursor)
    assert {u: e.job_title for u, e in people(delta).items()} == {
        "ivy": "Child Clerk",
        "kim": "Forester",
    }
    assert delta.cursor is not None
    second = ad.UsnMark.parse(delta.cursor)
    assert second.catalog is not None and second.catalog.usn >= after
    assert people(read_ldap(settings, since=delta.cursor)) == {}

    # Each server's searches compare its own mark: the domain controller's past both
    # changes and the catalog's before them read ivy alone, the other way round kim alone.
    catalog_behind = replace(first, usn=after)
    assert set(people(read_ldap(settings, since=str(catalog_behind)))) == {"ivy"}
    main_behind = replace(first, catalog=replace(first.catalog, usn=after))
    assert set(people(read_ldap(settings, since=str(main_behind)))) == {"kim"}
    # A catalog mark from another server, or without the domain, reads the domain in full.
    for other in (
        replace(second.catalog, server="gc9.acme.test"),
        replace(second.catalog, domains=frozenset({"other.acme.test"})),
    ):
        since = str(replace(second, catalog=other))
        assert set(people(read_ldap(settings, since=since))) == {"ivy"}


def test_the_global_catalog_port_serves_a_read(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    directory = read_ldap(ad_settings(urls=[samba_dc.global_catalog_url]))

    assert {"alice", "bob", "dave"} <= set(people(directory))


def test_thumbnail_photos_are_read_and_fetched_again_by_dn(
    samba_dc: SambaDC, ad_settings: Callable[..., LdapSource]
) -> None:
    samba_dc.add(f"OU=Photos,{BASE}", "organizationalUnit", {})
    portrait = jpeg("ines", padding=3000)
    for name, photo in (("ines", portrait), ("jack", b"not an image at all")):
        samba_dc.add(
            f"CN={name},OU=Photos,{BASE}",
            "user",
            {"sAMAccountName": name, "userAccountControl": "544", "thumbnailPhoto": photo},
        )
    settings = ad_settings(users_base=f"OU=Photos,{BASE}")
    photos = PhotoSettings(enabled=True)  # Active Directory: thumbnailPhoto by default

    directory = read_ldap(settings, photos=photos)

    ines = people(directory)["ines"].photo
    assert ines is not None
    digest = hashlib.md5(portrait, usedforsecurity=False).hexdigest()
    assert (ines.digest, ines.type, ines.size) == (digest, "jpeg", len(portrait))
    assert ines.origin.lower() == f"CN=ines,OU=Photos,{BASE}".lower()
    assert people(directory)["jack"].photo is None
    (row,) = [r for r in directory.rejected if r.kind is Kind.PHOTO]
    assert row.username == "jack" and "neither JPEG nor PNG" in row.reason
    reader = PhotoReader(SourceSettings(kind="ldap", ldap=settings, photos=photos))
    try:
        assert reader(ines) == (ines, portrait)
    finally:
        reader.close()
