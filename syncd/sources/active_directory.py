"""Active Directory's ways, kept apart from the generic LDAP reader.

- ``objectGUID`` is 16 raw bytes; AD shows it as a GUID string whose first three groups
  are little-endian (``Guid.ToString()``): that string is the person's or the OU's id.
- ``userAccountControl`` is a bit field; bit 2 (ACCOUNTDISABLE) set means departed.
- ``uSNChanged`` is a per-domain-controller change counter: a delta asks for
  ``uSNChanged >= mark + 1``, and a mark is only meaningful on the controller that issued
  it, so the mark carries that controller's name. The mark itself is the controller's
  ``highestCommittedUSN`` read *before* the search, as Microsoft documents for polling:
  a change made while the paged search runs has a higher USN and is read next time.
  Other domains read through a Global Catalog are another server's counter: the mark
  carries the catalog's own (``CatalogMark``), with the domains read under it.
- ``accountExpires`` is a FILETIME (100 ns steps since 1601-01-01 UTC); 0 and 2**63 - 1
  mean never. Once it has passed the account is expired: departed, as if disabled. The
  passing changes nothing in the directory (no ``uSNChanged``), so a delta must ask for
  it: ``expired_filter`` selects the accounts that expired within a time window.
- Pages are capped at 1000 entries by the server (``MaxPageSize``).
- A search from the domain root returns continuation references to the application
  partitions (DomainDnsZones, ForestDnsZones, Configuration): they hold no people.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

ACCOUNTDISABLE = 0x0002
USERS_FILTER = "(&(objectCategory=person)(objectClass=user))"
DEPARTMENTS_FILTER = "(objectClass=organizationalUnit)"
GUID_ATTRIBUTE = "objectguid"  # lower case: attribute names are compared case-insensitively
CHANGE_ATTRIBUTE = "uSNChanged"
ACCOUNT_CONTROL_ATTRIBUTE = "userAccountControl"
EXPIRES_ATTRIBUTE = "accountExpires"
NEVER_EXPIRES = 2**63 - 1
_FILETIME_EPOCH = datetime(1601, 1, 1, tzinfo=UTC)
_GENERALIZED = "%Y%m%d%H%M%SZ"

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


# The first RDNs of partitions a domain search refers to that hold no people.
APPLICATION_PARTITIONS = ("dc=domaindnszones", "dc=forestdnszones", "cn=configuration")


def is_application_partition(dn: str) -> bool:
    """Whether a referenced DN is DNS zones or the configuration: no people there."""
    first = dn.split(",", 1)[0].replace(" ", "").lower()
    return first in APPLICATION_PARTITIONS


def domain_of(dn: str) -> str:
    """The DNS name of a domain's DN: ``DC=child,DC=corp,DC=example`` -> ``child.corp.example``."""
    parts = [rdn.strip() for rdn in dn.split(",")]
    return ".".join(p[3:].strip() for p in parts if p[:3].lower() == "dc=")


def filetime(moment: datetime) -> int:
    """A moment as AD stores times such as ``accountExpires``: 100 ns steps since 1601."""
    delta = moment - _FILETIME_EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10_000_000 + delta.microseconds * 10


def has_expired(account_expires: str, now: int) -> bool:
    """Whether an ``accountExpires`` value (decimal text) is at or before ``now`` (a FILETIME)."""
    expires = int(account_expires)
    return 0 < expires < NEVER_EXPIRES and expires <= now


def expired_filter(since: int | None, now: int) -> str:
    """The filter part selecting accounts whose expiry passed after ``since``, up to ``now``."""
    return f"({EXPIRES_ATTRIBUTE}>={max(since or 0, 0) + 1})({EXPIRES_ATTRIBUTE}<={now})"


@dataclass(frozen=True)
class CatalogMark:
    """The Global Catalog's own mark: its highest committed USN before the read's first
    search on it, and the domains read through it after that (``/`` and their DNS names).

    A domain not named was not read under this mark: its objects the catalog held before
    it may have lower USNs, so it is read in full.
    """

    usn: int
    server: str
    domains: frozenset[str]

    def __str__(self) -> str:
        return f"{self.usn}@{self.server}/{','.join(sorted(self.domains))}"

    @classmethod
    def parse(cls, text: str) -> CatalogMark:
        rest, _, domains = text.rpartition("/")
        usn, server = _usn_at(rest, text, "<usn>@<catalog>/<domain>,...")
        return cls(usn, server, frozenset(d for d in domains.split(",") if d))

    def changed_filter(self) -> str:
        return _changed_after(self.usn)


@dataclass(frozen=True)
class UsnMark:
    """A delta mark: the highest committed USN of one domain controller, when the read
    that made it checked account expiry (``#`` and a generalized time; older marks have
    none), and the Global Catalog's own mark when other domains were read through it
    (``;`` and the CatalogMark).
    """

    usn: int
    controller: str
    checked: datetime | None = None
    catalog: CatalogMark | None = None

    def __str__(self) -> str:
        checked = f"#{self.checked.strftime(_GENERALIZED)}" if self.checked else ""
        catalog = f";{self.catalog}" if self.catalog else ""
        return f"{self.usn}@{self.controller}{checked}{catalog}"

    @classmethod
    def parse(cls, text: str) -> UsnMark:
        main, _, catalog = text.partition(";")
        rest, _, checked = main.partition("#")
        usn, controller = _usn_at(rest, text, "<usn>@<domain controller>")
        try:
            moment = (
                datetime.strptime(checked, _GENERALIZED).replace(tzinfo=UTC) if checked else None
            )
        except ValueError as exc:
            raise ValueError(f"{text!r}: {checked!r} is not a time (YYYYMMDDHHMMSSZ)") from exc
        return cls(usn, controller, moment, CatalogMark.parse(catalog) if catalog else None)

    def changed_filter(self) -> str:
        """The filter part selecting what changed after this mark."""
        return _changed_after(self.usn)


def _changed_after(usn: int) -> str:
    return f"({CHANGE_ATTRIBUTE}>={usn + 1})"


def _usn_at(text: str, mark: str, form: str) -> tuple[int, str]:
    usn, separator, server = text.partition("@")
    if not separator or not usn.isdigit() or not server:
        raise ValueError(f"{mark!r} is not an Active Directory mark ({form})")
    return int(usn), server
