"""Distinguished names: split, compared and unescaped without a parser per entry."""

from __future__ import annotations

import re

_DN_ESCAPE = re.compile(r"\\([0-9a-fA-F]{2}|.)")


def split_dn(dn: str) -> tuple[str, str]:
    """The first RDN and the parent DN ("" above the top): split at the first unescaped comma."""
    if "\\" not in dn:
        rdn, _, parent = dn.partition(",")
        return rdn, parent
    i = 0
    while i < len(dn):
        if dn[i] == "\\":
            i += 2
        elif dn[i] == ",":
            return dn[:i], dn[i + 1 :]
        else:
            i += 1
    return dn, ""


def parent_dn(dn: str) -> str:
    """The DN one level up ("" above the top)."""
    if "\\" not in dn:
        return dn.partition(",")[2]  # the common case, once per person: kept short
    return split_dn(dn)[1]


def dn_key(dn: str) -> str:
    """A DN for comparing: lower case, no spaces around separators."""
    parts = []
    rest = dn.strip()
    while rest:
        rdn, rest = split_dn(rest)
        attribute, _, value = rdn.partition("=")
        parts.append(f"{attribute.strip()}={value.strip()}".lower())
        rest = rest.strip()
    return ",".join(parts)


def rdn_attribute(dn: str) -> str:
    """The attribute type of a DN's first RDN: ``ou`` for ``ou=Sales,dc=x``."""
    return dn.partition("=")[0].strip()


def rdn_value(dn: str) -> str:
    """The unescaped value of a DN's first RDN: ``ou=R\\2CD,dc=x`` -> ``R,D``."""
    value = split_dn(dn)[0].partition("=")[2].strip()
    if "\\" not in value:
        return value
    # Hex escapes are UTF-8 bytes, possibly several for one character: rebuild the bytes.
    out = bytearray()
    position = 0
    for match in _DN_ESCAPE.finditer(value):
        out += value[position : match.start()].encode("utf-8")
        token = match.group(1)
        out += bytes.fromhex(token) if len(token) == 2 else token.encode("utf-8")
        position = match.end()
    out += value[position:].encode("utf-8")
    return out.decode("utf-8", "replace")
