"""Active Directory: what can be checked here without a domain controller.

The GUID rendering, userAccountControl and the USN mark are unit-tested; the flavor's
reading is exercised against the test slapd with a few AD attributes (ad-lite.schema),
and a child domain of the forest with a referral entry and a second slapd as its Global
Catalog. test_samba_ad.py reads a real domain controller.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from syncd.config import LdapSource
from syncd.model import Directory, Employee, State
from syncd.plan import Action, Policy, plan
from syncd.sources import active_directory as ad
from syncd.sources import set_aside
from syncd.sources.ldap import Shape, read_ldap
from tests.engine.plan_world import NOW, synced
from tests.support.slapd import Slapd, running_slapd

SettingsFactory = Callable[..., LdapSource]
AD_SCHEMA = Path(__file__).resolve().parents[1] / "data" / "ldap" / "ad-lite.schema"

ALICE_GUID = "00112233-4455-6677-8899-aabbccddeeff"
ENGINEERING_GUID = "0d0c0b0a-0f0e-1110-1213-141516171819"


def people(directory: Directory) -> dict[str, Employee]:
    return {e.username: e for e in directory.employees.values()}


def place(directory: Directory, employee: Employee) -> tuple[str, ...] | None:
    department = next((p.department_id for p in employee.positions if p.primary), None)
    return directory.path(department) if department else None


# ---------------------------------------------------------------- pure functions


def test_object_guid_renders_as_ad_shows_it() -> None:
    # The first three groups are little-endian on the wire, the last two big-endian.
    raw = bytes.fromhex("33221100554477668899aabbccddeeff")

    assert ad.guid_to_str(raw) == ALICE_GUID
    assert ad.guid_to_str(bytes.fromhex("78563412bc9af0de0102030405060708")) == (
        "12345678-9abc-def0-0102-030405060708"
    )


def test_an_object_guid_has_sixteen_bytes() -> None:
    with pytest.raises(ValueError, match="16 bytes, not 15"):
        ad.guid_to_str(bytes(15))


@pytest.mark.parametrize(
    ("value", "disabled"),
    [
        ("512", False),  # NORMAL_ACCOUNT
        ("514", True),  # NORMAL_ACCOUNT | ACCOUNTDISABLE
        ("66048", False),  # NORMAL_ACCOUNT | DONT_EXPIRE_PASSWORD
        ("66050", True),  # ... | ACCOUNTDISABLE
        ("2", True),
        ("16", False),  # LOCKOUT is not a departure
    ],
)
def test_user_account_control_disabled_bit(value: str, disabled: bool) -> None:
    assert ad.is_disabled(value) is disabled


def test_usn_marks_belong_to_one_controller() -> None:
    mark = ad.UsnMark.parse("12345@dc1.corp.example")

    assert mark == ad.UsnMark(12345, "dc1.corp.example")
    assert str(mark) == "12345@dc1.corp.example"
    assert mark.changed_filter() == "(uSNChanged>=12346)"
    for bad in ("12345", "dc1@12345", "@dc1", "12a@dc1", "12@"):
        with pytest.raises(ValueError, match="not an Active Directory mark"):
            ad.UsnMark.parse(bad)


def test_a_mark_carries_when_it_checked_expiry() -> None:
    checked = datetime(2026, 3, 1, 12, 30, tzinfo=UTC)
    mark = ad.UsnMark(9, "dc1.corp.example", checked)

    assert str(mark) == "9@dc1.corp.example#20260301123000Z"
    assert ad.UsnMark.parse(str(mark)) == mark
    with pytest.raises(ValueError, match="is not a time"):
        ad.UsnMark.parse("9@dc1#yesterday")


def test_a_mark_carries_the_global_catalogs_own() -> None:
    catalog = ad.CatalogMark(
        7010, "gc1.corp.example", frozenset({"b.corp.example", "a.corp.example"})
    )
    mark = ad.UsnMark(9, "dc1.corp.example", datetime(2026, 3, 1, tzinfo=UTC), catalog)

    text = "9@dc1.corp.example#20260301000000Z;7010@gc1.corp.example/a.corp.example,b.corp.example"
    assert str(mark) == text
    assert ad.UsnMark.parse(text) == mark
    assert catalog.changed_filter() == "(uSNChanged>=7011)"
    with pytest.raises(ValueError, match="not an Active Directory mark"):
        ad.UsnMark.parse("9@dc1;gc1/a.corp.example")


def test_account_expiry() -> None:
    assert ad.filetime(datetime(1601, 1, 1, tzinfo=UTC)) == 0
    assert ad.filetime(datetime(2020, 1, 1, tzinfo=UTC)) == 132223104000000000
    now = ad.filetime(datetime(2026, 1, 1, tzinfo=UTC))
    assert ad.has_expired("132223104000000000", now)
    assert not ad.has_expired("0", now) and not ad.has_expired(str(ad.NEVER_EXPIRES), now)
    assert not ad.has_expired(str(now + 1), now) and ad.has_expired(str(now), now)
    assert ad.expired_filter(None, 5) == "(accountExpires>=1)(accountExpires<=5)"
    assert ad.expired_filter(3, 5) == "(accountExpires>=4)(accountExpires<=5)"


def test_referred_partitions_and_domains() -> None:
    for dn in ("CN=Configuration,DC=corp,DC=example", "DC=DomainDnsZones,DC=corp,DC=example",
               "dc=forestdnszones, dc=corp,dc=example"):  # fmt: skip
        assert ad.is_application_partition(dn)
    assert not ad.is_application_partition("DC=child,DC=corp,DC=example")
    assert ad.domain_of("DC=child,DC=corp,DC=example") == "child.corp.example"
    assert ad.domain_of("dc=child, ou=x,dc=acme,dc=example") == "child.acme.example"


def test_the_active_directory_preset(ldap_settings: SettingsFactory) -> None:
    shape = Shape.from_settings(ldap_settings(flavor="active_directory"))

    assert shape.users_filter == "(&(objectCategory=person)(objectClass=user))"
    asked = {a.lower() for a in shape.attributes}
    assert {"objectguid", "samaccountname", "displayname", "cn", "mail", "mobile"} <= asked
    assert {"telephonenumber", "employeeid", "title", "useraccountcontrol", "usnchanged"} <= asked
    assert shape.guid_ids and shape.department_guid_ids
    named = {field: [shape.attributes[s] for s in slots] for field, slots in shape.fields.items()}
    assert named["id"] == ["objectGUID"]
    assert named["username"] == ["sAMAccountName"]
    assert named["name"] == ["displayName", "cn"]
    assert named["sn"] == ["employeeID"]


def test_the_preset_can_be_overridden(ldap_settings: SettingsFactory) -> None:
    shape = Shape.from_settings(
        ldap_settings(
            flavor="active_directory",
            attributes={"username": "userPrincipalName"},
            users_filter="(&(objectClass=user)(!(sAMAccountName=svc-*)))",
        )
    )

    assert [shape.attributes[s] for s in shape.fields["username"]] == ["userPrincipalName"]
    assert shape.users_filter == "(&(objectClass=user)(!(sAMAccountName=svc-*)))"


# ---------------------------------------------------------------- against the AD-like slapd


@pytest.fixture
def ad_base(ldap_base: str, load_ldif: Callable[[str], None]) -> str:
    load_ldif("ad.ldif")
    return ldap_base


def test_reading_the_active_directory_flavor(ad_base: str, ldap_settings: SettingsFactory) -> None:
    directory = read_ldap(ldap_settings(flavor="active_directory"))

    everyone = people(directory)
    assert set(everyone) == {"alice", "bob", "carol"}  # PRINTER01$ is no person
    alice, bob, carol = everyone["alice"], everyone["bob"], everyone["carol"]
    assert alice.id == ALICE_GUID
    assert (alice.name, alice.sn, alice.email) == ("Alice L.", "1001", "alice@acme.example")
    assert place(directory, alice) == ("Engineering",)
    assert alice.positions[0].department_id == ENGINEERING_GUID
    assert bob.state is State.DEPARTED and alice.state is carol.state is State.ACTIVE
    assert bob.name == "Bob Builder"  # no displayName: cn
    assert place(directory, bob) == ("Engineering", "Operations")
    assert carol.positions == ()
    # slapd publishes no highestCommittedUSN: the mark is the highest uSNChanged read,
    # with when the read checked account expiry.
    assert directory.cursor is not None
    assert re.fullmatch(r"103@127\.0\.0\.1#\d{14}Z", directory.cursor)


def test_an_active_directory_delta(
    slapd: Slapd, ad_base: str, ldap_settings: SettingsFactory
) -> None:
    settings = ldap_settings(flavor="active_directory")
    full = read_ldap(settings)
    # What a domain controller does on its own: count the change, here by hand.
    slapd.modify(
        f"dn: cn=Bob Builder,ou=Operations,ou=Engineering,{ad_base}\nchangetype: modify\n"
        "replace: userAccountControl\nuserAccountControl: 512\n-\n"
        "replace: uSNChanged\nuSNChanged: 110\n"
    )

    delta = read_ldap(settings, since=full.cursor)

    assert not delta.complete
    assert {u: e.state for u, e in people(delta).items()} == {"bob": State.ACTIVE}
    assert delta.cursor is not None and delta.cursor.startswith("110@127.0.0.1#")
    assert len(delta.departments) == 2


def test_a_mark_from_another_controller_means_a_full_read(
    ad_base: str, ldap_settings: SettingsFactory
) -> None:
    directory = read_ldap(ldap_settings(flavor="active_directory"), since="90@dc9.corp.example")

    assert directory.complete
    assert set(people(directory)) == {"alice", "bob", "carol"}


SHORT_GUID = "AQIDBAUGBwgJCgsMDQ4P"  # 15 bytes: no objectGUID


def test_an_ou_whose_guid_cannot_be_read_still_holds_its_people(
    slapd: Slapd, ad_base: str, ldap_settings: SettingsFactory
) -> None:
    slapd.add_ldif(
        f"dn: ou=Broken,ou=Engineering,{ad_base}\nobjectClass: organizationalUnit\n"
        f"objectClass: adObject\nou: Broken\nobjectGUID:: {SHORT_GUID}\n\n"
        f"dn: cn=Dora,ou=Broken,ou=Engineering,{ad_base}\nobjectClass: user\ncn: Dora\n"
        "sn: D\nsAMAccountName: dora\nobjectGUID:: ESIzRFVmd4iZqrvM3e7/AA==\n"
        "objectCategory: person\nuserAccountControl: 512\n"
    )

    directory = read_ldap(ldap_settings(flavor="active_directory"))

    # Not moved up into Engineering: rejected, by her id, with the OU she is in.
    dora, ou = sorted(directory.rejected, key=lambda row: row.where)  # cn=, ou=
    assert ou.where.startswith("ou=Broken,") and ou.key is None
    assert "an objectGUID has 16 bytes, not 15" in ou.reason
    assert dora.where.startswith("cn=Dora,") and dora.username == "dora"
    assert dora.key == "44332211-6655-8877-99aa-bbccddeeff00" and "ou=Broken" in dora.reason
    assert set(people(directory)) == {"alice", "bob", "carol"}


def test_an_unreadable_id_among_the_departed_rejects_that_person_only(
    slapd: Slapd, ad_base: str, ldap_settings: SettingsFactory, caplog: pytest.LogCaptureFixture
) -> None:
    dn = f"cn=Dan,ou=Engineering,{ad_base}"
    slapd.add_ldif(
        f"dn: {dn}\nobjectClass: user\ncn: Dan\nsn: D\nsAMAccountName: dan\n"
        f"objectGUID:: {SHORT_GUID}\nobjectCategory: person\nuserAccountControl: 512\n"
        "employeeID: 9001\n"
    )

    with caplog.at_level(logging.WARNING, logger="syncd.sources.ldap"):
        directory = read_ldap(
            ldap_settings(flavor="active_directory", departed_filter="(employeeID=9001)")
        )

    assert f"{dn}: the id cannot be read (an objectGUID has 16 bytes, not 15)" in caplog.text
    (row,) = directory.rejected
    assert row.username == "dan" and "16 bytes, not 15" in row.reason
    assert set(people(directory)) == {"alice", "bob", "carol"}


def test_an_account_whose_user_account_control_is_absent_is_not_taken_for_enabled(
    slapd: Slapd, ad_base: str, ldap_settings: SettingsFactory
) -> None:
    # Unknown must not mean active: read so, a former employee hidden from the bind
    # account's view of userAccountControl would be unlocked.
    dn = f"cn=Eve,ou=Engineering,{ad_base}"
    slapd.add_ldif(
        f"dn: {dn}\nobjectClass: user\ncn: Eve\nsn: E\nsAMAccountName: eve\n"
        "objectGUID:: ESIzRFVmd4iZqrvM3e7/AQ==\nobjectCategory: person\n"
    )

    directory = read_ldap(ldap_settings(flavor="active_directory"))

    (row,) = directory.rejected
    assert (row.where, row.username) == (dn, "eve")
    assert row.reason.startswith("userAccountControl is absent")
    assert set(people(directory)) == {"alice", "bob", "carol"}
    assert directory.leavers_known  # eve is named: kept as she is
    # A status syncd cannot read is loud, as a CSV status nobody named (issue 32).
    assert row.status == "userAccountControl absent"
    read = {"employees": len(directory.employees), "departments": len(directory.departments)}
    (told,) = set_aside.problems({**read, **set_aside.counts(directory)})
    assert told.startswith("1 row set aside for a status value nobody named")


# ---------------------------------------------------------------- other domains of the forest


def child_domain(slapd: Slapd, ad_base: str, catalog_url: str) -> str:
    """A child domain below the base: a referral entry, as AD answers for one."""
    child = f"dc=child,{ad_base}"
    slapd.add_ldif(
        f"dn: {child}\nobjectClass: referral\nobjectClass: extensibleObject\ndc: child\n"
        f"ref: {catalog_url}/{child}\n",
        manage_dsa_it=True,
    )
    return child


@pytest.fixture
def catalog(tmp_path: Path, ad_base: str) -> Iterator[Slapd]:
    """A second server playing the Global Catalog: it holds the child domain's people."""
    with running_slapd(tmp_path / "catalog", schemas=[AD_SCHEMA]) as server:
        test_ou = ad_base.split(",")[0].split("=")[1]
        server.add_ldif(
            f"dn: {ad_base}\nobjectClass: organizationalUnit\nou: {test_ou}\n\n"
            f"dn: dc=child,{ad_base}\nobjectClass: domain\ndc: child\n\n"
            f"dn: cn=Ivy,dc=child,{ad_base}\nobjectClass: user\ncn: Ivy\nsn: I\n"
            "sAMAccountName: ivy\nobjectGUID:: VVVVVVVVVVVVVVVVVVVVVQ==\n"
            "objectCategory: person\nuserAccountControl: 512\n"
        )
        yield server


def test_a_child_domain_not_read_is_a_warning_naming_it(
    slapd: Slapd,
    ad_base: str,
    catalog: Slapd,
    ldap_settings: SettingsFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    child_domain(slapd, ad_base, catalog.url)

    with caplog.at_level(logging.WARNING, logger="syncd.sources.ldap"):
        directory = read_ldap(ldap_settings(flavor="active_directory"))

    assert set(people(directory)) == {"alice", "bob", "carol"}
    (warning,) = directory.warnings  # the OU search and the people search: one warning
    assert warning.startswith("the domain child.acme.example was not read: ")
    assert "set source.ldap.global_catalog" in warning
    assert warning in caplog.text


def test_a_child_domain_no_longer_read_makes_nobody_a_leaver(
    slapd: Slapd, ad_base: str, catalog: Slapd, ldap_settings: SettingsFactory
) -> None:
    """Ivy, of the child domain, synced while the Global Catalog was set; then it is not
    (the setting taken out, a settings file put back): the domain is not read, and who it
    holds is unknown. Nobody is a leaver, Ivy is not locked, and the run says why (partial),
    as a join of several sources does for a source's part not read."""
    child_domain(slapd, ad_base, catalog.url)
    before = read_ldap(ldap_settings(flavor="active_directory", global_catalog=catalog.url))
    snapshot, view = synced(before)

    now = read_ldap(ldap_settings(flavor="active_directory"))
    p = plan(now, snapshot, view, Policy(leaver_policy="remove"), NOW)

    assert "ivy" not in people(now), people(now)
    assert not [c for c in p.changes if c.display == "ivy" or c.action is Action.REMOVE]
    (note,) = [n.message for n in p.notes if n.kind == "leavers"]
    assert "the domain child.acme.example was not read" in note, note
    read = {"employees": len(now.employees), "departments": len(now.departments)}
    (told,) = set_aside.problems({**read, **set_aside.counts(now, people_held=True)})
    assert told.startswith("leavers not looked for: 1 part of the source was not read"), told


def test_a_child_domain_is_read_through_the_global_catalog(
    slapd: Slapd, ad_base: str, catalog: Slapd, ldap_settings: SettingsFactory
) -> None:
    child_domain(slapd, ad_base, catalog.url)

    directory = read_ldap(ldap_settings(flavor="active_directory", global_catalog=catalog.url))

    assert set(people(directory)) == {"alice", "bob", "carol", "ivy"}
    assert people(directory)["ivy"].id == "55555555-5555-5555-5555-555555555555"
    assert directory.warnings == ()


def test_an_incremental_read_reads_a_child_domain_in_full_without_the_catalogs_own_mark(
    slapd: Slapd,
    ad_base: str,
    catalog: Slapd,
    ldap_settings: SettingsFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    child_domain(slapd, ad_base, catalog.url)
    settings = ldap_settings(flavor="active_directory", global_catalog=catalog.url)
    full = read_ldap(settings)
    assert full.cursor is not None
    # The catalog publishes no highestCommittedUSN: the mark has no part of its own.
    assert ad.UsnMark.parse(full.cursor).catalog is None

    with caplog.at_level(logging.INFO, logger="syncd.sources.ldap"):
        delta = read_ldap(settings, since=full.cursor)

    # Nothing changed; the main server's mark (uSNChanged 103 there) says nothing of the
    # catalog's numbers (ivy has none at all): the child domain is read in full.
    assert not delta.complete
    assert set(people(delta)) == {"ivy"}
    assert f"dc=child,{ad_base} is read in full through the Global Catalog" in caplog.text
