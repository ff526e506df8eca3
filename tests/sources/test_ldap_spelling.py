"""The LDAP source against a real slapd reads names, usernames and department paths in
NFC, as the CSV source does: both go through build_directory."""

from __future__ import annotations

import base64
import unicodedata
from collections.abc import Callable

from syncd.config import LdapSource
from syncd.model import Kind
from syncd.sources.ldap import read_ldap
from tests.support.slapd import Slapd

NFC_RENEE, NFD_RENEE = "ren\u00e9e", "rene\u0301e"
CAFE = "Caf\u00e9"
CAFE_NFD = unicodedata.normalize("NFD", CAFE)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def entries(base: str) -> str:
    """LDIF (non-ASCII values base64-encoded, as LDIF wants them)."""
    cafe_dn = f"ou={CAFE_NFD},{base}"
    people = [
        # (OU dn, uid, cn, departmentNumber)
        (cafe_dn, NFD_RENEE, "Rene\u0301e Li", f"Head Office/{CAFE_NFD}"),
        (f"ou=Bar,{base}", NFC_RENEE, "Ren\u00e9e Wu", "Bar"),
        (cafe_dn, "jose", "Jose\u0301 Diaz", f"Head Office/{CAFE}"),
        (f"ou=Bar,{base}", "eve\u200b", "Eve", "Bar"),
    ]
    text = [
        f"dn:: {b64(cafe_dn)}\nobjectClass: organizationalUnit\nou:: {b64(CAFE_NFD)}\n",
        f"dn: ou=Bar,{base}\nobjectClass: organizationalUnit\nou: Bar\n",
    ]
    for ou, uid, cn, path in people:
        text.append(
            f"dn:: {b64(f'uid={uid},{ou}')}\nobjectClass: inetOrgPerson\nuid:: {b64(uid)}\n"
            f"cn:: {b64(cn)}\nsn: X\ndepartmentNumber:: {b64(path)}\n"
        )
    return "\n".join(text)


def test_ldap_values_are_read_in_nfc(
    slapd: Slapd, ldap_base: str, ldap_settings: Callable[..., LdapSource]
) -> None:
    slapd.add_ldif(entries(ldap_base))

    tree = read_ldap(ldap_settings())
    assert sorted(d.name for d in tree.departments.values()) == ["Bar", CAFE]
    assert {e.username: e.name for e in tree.employees.values()} == {"jose": "Jos\u00e9 Diaz"}
    why = sorted(r.reason for r in tree.rejected if r.kind is Kind.EMPLOYEE)
    assert why == [
        "username 'eve\\u200b' contains U+200B ZERO WIDTH SPACE, which cannot be seen",
        f"username '{NFC_RENEE}' is used by 2 people",
        f"username '{NFC_RENEE}' is used by 2 people",
    ]

    paths = read_ldap(
        ldap_settings(departments_from="attribute", department_attribute="departmentNumber")
    )
    assert set(paths.departments) == {"Head Office", f"Head Office/{CAFE}", "Bar"}
    assert paths.employees[next(iter(paths.employees))].positions[0].department_id == (
        f"Head Office/{CAFE}"
    )
