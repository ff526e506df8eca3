"""Active Directory's ways, kept apart from the generic LDAP reader.

- ``objectGUID`` is 16 raw bytes; AD shows it as a GUID string whose first three groups
  are little-endian (``Guid.ToString()``): that string is the person's or the OU's id.
- ``userAccountControl`` is a bit field; bit 2 (ACCOUNTDISABLE) set means departed.
- ``uSNChanged`` is a per-domain-controller change counter: a delta asks for
  ``uSNChanged >= mark + 1``, and a mark is only meaningful on the controller that issued
  it, so the mark carries that controller's name. The mark itself is the controller's
  ``highestCommittedUSN`` read *before* the search, as Microsoft documents for polling:
  a change made while the paged search runs has a higher USN and is read next time.
- Pages are capped at 1000 entries by the server (``MaxPageSize``).
- A search from the domain root returns continuation references to the application
  partitions (DomainDnsZones, ForestDnsZones, Configuration): they hold no people.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

ACCOUNTDISABLE = 0x0002
USERS_FILTER = "(&(objectCategory=person)(objectClass=user))"
DEPARTMENTS_FILTER = "(objectClass=organizationalUnit)"
GUID_ATTRIBUTE = "objectguid"  # lower case: attribute names are compared case-insensitively
CHANGE_ATTRIBUTE = "uSNChanged"
ACCOUNT_CONTROL_ATTRIBUTE = "userAccountControl"

# Model field -> attributes tried in order (the first one present wins).
PRESET: dict[str, tuple[str, ...]] = {
    "id": ("objectGUID",),
    "username": ("sAMAccountName",),
    "name": ("displayName", "cn"),  # displayName is optional in AD; cn never is
    "email": ("mail",),
    "mobile": ("mobile",),
    "tel": ("telephoneNumber",),
    "sn": ("employeeID",),
    "job_title": ("title",),
}


def guid_to_str(raw: bytes) -> str:
    """``objectGUID`` bytes as AD shows them (``Guid.ToString()``): lower case, no braces."""
    if len(raw) != 16:
        raise ValueError(f"an objectGUID has 16 bytes, not {len(raw)}")
    return str(uuid.UUID(bytes_le=raw))


def is_disabled(user_account_control: str) -> bool:
    """Whether a ``userAccountControl`` value (decimal text) has ACCOUNTDISABLE set."""
    return bool(int(user_account_control) & ACCOUNTDISABLE)


@dataclass(frozen=True)
class UsnMark:
    """A delta mark: the highest committed USN of one domain controller."""

    usn: int
    controller: str

    def __str__(self) -> str:
        return f"{self.usn}@{self.controller}"

    @classmethod
    def parse(cls, text: str) -> UsnMark:
        usn, separator, controller = text.partition("@")
        if not separator or not usn.isdigit() or not controller:
            raise ValueError(
                f"{text!r} is not an Active Directory mark (<usn>@<domain controller>)"
            )
        return cls(int(usn), controller)

    def changed_filter(self) -> str:
        """The filter part selecting what changed after this mark."""
        return f"({CHANGE_ATTRIBUTE}>={self.usn + 1})"
