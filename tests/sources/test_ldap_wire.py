"""The LDAP source's own BER decoding and DN handling, on hand-made bytes and strings."""

from __future__ import annotations

import pytest

from syncd.sources.ldap import (
    decode_entry,
    decode_result,
    dn_key,
    paged_cookie,
    parent_dn,
    rdn_value,
    split_dn,
)
from syncd.sources.ldap.wire import Several, WithSeveral


def tlv(tag: int, content: bytes) -> bytes:
    """One BER element, with the length in short or long form as BER requires."""
    n = len(content)
    if n < 0x80:
        return bytes([tag, n]) + content
    size = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([tag, 0x80 | len(size)]) + size + content


def attribute(name: str, *values: bytes) -> bytes:
    return tlv(0x30, tlv(0x04, name.encode()) + tlv(0x31, b"".join(tlv(0x04, v) for v in values)))


def entry(dn: str, *attributes: bytes) -> bytes:
    """A SearchResultEntry protocolOp (what follows the message id)."""
    return tlv(0x64, tlv(0x04, dn.encode()) + tlv(0x30, b"".join(attributes)))


def test_an_entry_keeps_the_values_of_requested_attributes_by_slot() -> None:
    long_value = "描述".encode() * 100  # 600 bytes: a two-byte long-form length
    data = entry(
        "uid=alice,ou=R&D,dc=acme,dc=example",
        attribute("UID", b"alice", b"alice2"),  # another case than asked; several values
        attribute("description", long_value),
        attribute("objectClass", b"top", b"inetOrgPerson"),  # not asked for
        attribute("mail", b"alice@acme.example"),
    )
    slots = {b"uid": 0, b"mail": 1, b"description": 2}

    dn, values = decode_entry(data, 0, slots, 4)

    assert dn == "uid=alice,ou=R&D,dc=acme,dc=example"
    # Several values are all kept, as Several: which one counts is the field's rule.
    assert values == [Several((b"alice", b"alice2")), b"alice@acme.example", long_value, None]
    assert isinstance(values[0], Several) and not isinstance(values[1], Several)
    assert isinstance(values, WithSeveral) and values.slots == (0,)  # where the rules apply
    assert slots[b"UID"] == 0 and slots[b"objectClass"] == -1  # learnt for the next entries


def test_several_values_are_all_kept_whatever_their_lengths() -> None:
    long_value = b"x" * 300  # a long-form length among short ones
    data = entry("cn=x", attribute("ou", b"People", long_value, b"", b"Payroll"))

    _, values = decode_entry(data, 0, {b"ou": 0}, 2)

    assert values == [Several((b"People", long_value, b"", b"Payroll")), None]


def test_an_entry_with_an_empty_value_set() -> None:
    data = entry("cn=x", tlv(0x30, tlv(0x04, b"mail") + tlv(0x31, b"")))

    dn, values = decode_entry(data, 0, {b"mail": 0}, 2)

    assert (dn, values) == ("cn=x", [None, None])
    assert type(values) is list  # not WithSeveral


def test_a_result_and_the_paged_cookie() -> None:
    paged = tlv(0x30, tlv(0x02, b"\x00") + tlv(0x04, b"cookie-123"))
    control = tlv(0x30, tlv(0x04, b"1.2.840.113556.1.4.319") + tlv(0x04, paged))
    other = tlv(0x30, tlv(0x04, b"1.2.3.4") + tlv(0x01, b"\xff") + tlv(0x04, b"x"))
    done = tlv(0x65, tlv(0x0A, b"\x00") + tlv(0x04, b"") + tlv(0x04, b""))
    message = done + tlv(0xA0, other + control)

    code, matched, text, referrals, end = decode_result(message, 0)

    assert (code, matched, text, referrals) == (0, "", "", [])
    assert paged_cookie(message, end, len(message)) == b"cookie-123"
    assert paged_cookie(done, len(done), len(done)) == b""  # no controls: no more pages


def test_a_referral_result() -> None:
    referral = tlv(0xA3, tlv(0x04, b"ldap://a.example/dc=a") + tlv(0x04, b"ldap://b.example/dc=a"))
    done = tlv(0x65, tlv(0x0A, b"\x0a") + tlv(0x04, b"dc=a") + tlv(0x04, b"elsewhere") + referral)

    code, matched, text, referrals, _ = decode_result(done, 0)

    assert (code, matched, text) == (10, "dc=a", "elsewhere")
    assert referrals == ["ldap://a.example/dc=a", "ldap://b.example/dc=a"]


@pytest.mark.parametrize(
    ("dn", "parent"),
    [
        ("uid=a,ou=Sales,dc=acme", "ou=Sales,dc=acme"),
        ("cn=Smith\\, John,ou=Sales,dc=acme", "ou=Sales,dc=acme"),
        ("ou=Support\\2C Europe,dc=acme", "dc=acme"),
        ("cn=a\\\\,dc=acme", "dc=acme"),  # an escaped backslash, then a real separator
        ("dc=acme", ""),
    ],
)
def test_parent_dn(dn: str, parent: str) -> None:
    assert parent_dn(dn) == parent


def test_split_dn_keeps_escaped_commas_in_the_rdn() -> None:
    assert split_dn("cn=a\\,,dc=acme") == ("cn=a\\,", "dc=acme")
    assert split_dn("cn=Smith\\, John,ou=X") == ("cn=Smith\\, John", "ou=X")
    assert split_dn("dc=acme") == ("dc=acme", "")


def test_dn_keys_ignore_case_and_spaces_around_separators() -> None:
    assert dn_key("OU=Sales , DC=Acme,dc=Example ") == "ou=sales,dc=acme,dc=example"
    assert dn_key("cn=Smith\\, John, ou=X") == "cn=smith\\, john,ou=x"


@pytest.mark.parametrize(
    ("dn", "value"),
    [
        ("ou=Sales,dc=acme", "Sales"),
        ("ou=Support\\2C Europe,dc=acme", "Support, Europe"),
        ("ou=Support\\, Europe,dc=acme", "Support, Europe"),
        ("ou=R\\C3\\A9sum\\C3\\A9,dc=acme", "Résumé"),  # hex escapes are UTF-8 bytes
        ("ou=研发部,dc=acme", "研发部"),
    ],
)
def test_rdn_value_unescapes(dn: str, value: str) -> None:
    assert rdn_value(dn) == value
