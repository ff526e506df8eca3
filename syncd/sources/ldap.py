"""Read departments and people from OpenLDAP or Active Directory.

The servers in ``urls`` are tried in order until one can be used. ldap3 does the
connecting (LDAPS or StartTLS with certificate checks, the simple bind) and encodes each
search request. The answers to the paged searches are read off the connection's socket
and decoded here instead: ldap3 turns every entry into dicts of formatted values through
per-attribute configuration lookups, which costs about ten times what the wire does (see
DESIGN.md, performance facts). Entries are streamed page by page and never held all at
once; their order is never relied on.

Identity is the immutable ``entryUUID`` (OpenLDAP) or ``objectGUID`` (AD), so a moved or
renamed entry is the same person or department. A read either returns a whole Directory
or raises SourceError naming the server and the step that failed.

Incremental reads (``since``): only people changed after the mark are read
(``modifyTimestamp`` or ``uSNChanged``); for ``ou_tree`` every department is still read.
Deletions cannot be seen in a delta: only a full read finds leavers.
"""

from __future__ import annotations

import logging
import math
import re
import ssl
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Protocol
from urllib.parse import urlsplit

import ldap3
from ldap3.core.exceptions import LDAPCertificateError, LDAPException
from ldap3.core.results import RESULT_CODES
from ldap3.operation.search import search_operation
from ldap3.protocol.rfc2696 import paged_search_control
from ldap3.utils.log import set_library_log_hide_sensitive_data

from syncd._gc import collection_paused
from syncd.config import LdapSource
from syncd.errors import ConfigError, SourceError
from syncd.logs import redact, register_secret
from syncd.model import (
    Department,
    Directory,
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    build_directory,
    normalize_gender,
)
from syncd.sources import active_directory as ad
from syncd.sources._paths import DepartmentPaths
from syncd.sources._text import parse_date, parse_flag, parse_int32

log = logging.getLogger(__name__)
set_library_log_hide_sensitive_data(True)  # should anyone turn ldap3's own logging on

OPENLDAP_USERS_FILTER = "(objectClass=inetOrgPerson)"
OPENLDAP_CHANGE_ATTRIBUTE = "modifyTimestamp"
DEPARTMENTS_FILTER = "(objectClass=organizationalUnit)"

# Model field -> LDAP attributes tried in order; ``attributes`` in the settings replaces one.
OPENLDAP_PRESET: dict[str, tuple[str, ...]] = {
    "id": ("entryUUID",),
    "username": ("uid",),
    "name": ("cn",),
    "email": ("mail",),
    "mobile": ("mobile",),
    "tel": ("telephoneNumber",),
    "sn": ("employeeNumber",),
    "job_title": ("title",),
}
EMPLOYEE_FIELDS = (
    "id", "username", "name", "en_name", "email", "mobile", "tel", "sn",
    "gender", "birthday", "job_title", "sort_order", "senior",
)  # fmt: skip
_RARE_FIELDS = ("gender", "birthday", "sort_order", "senior")  # mapped by settings only
# Department fields, as keys of ``attributes`` (the OU's name has its own setting).
DEPARTMENT_FIELDS = (
    "department_id",
    "department_sort_order",
    "department_sn",
    "department_en_name",
)

_GENERALIZED_TIME = re.compile(r"^(\d{8})\d{6}(?:[.,]\d+)?Z$")  # group 1: the date
_DN_ESCAPE = re.compile(r"\\([0-9a-fA-F]{2}|.)")
_RECV_SIZE = 1 << 18
_PAGED_RESULTS_OID = b"1.2.840.113556.1.4.319"
# The id an OU is placed under when its own id cannot be read: no department has it.
_UNREADABLE_ID = "rejected:"


def read_ldap(settings: LdapSource, *, since: str | None = None) -> Directory:
    """A Directory of the OU tree (or department paths) and the people under ``users_base``."""
    password = settings.bind_password.get_secret_value() if settings.bind_password else None
    register_secret(password)
    shape = Shape.from_settings(settings)
    session = _connect(settings, password)
    try:
        with collection_paused():
            return _read(session, settings, shape, since)
    finally:
        session.close()


# ---------------------------------------------------------------- what to ask for


@dataclass(frozen=True)
class Shape:
    """The attributes a read asks for, and which response slot holds which model field."""

    flavor: str
    users_filter: str
    attributes: tuple[str, ...]  # requested for people, slot i = attributes[i]
    fields: Mapping[str, tuple[int, ...]]  # model field -> slots tried in order
    guid_ids: bool  # the id attribute is AD's binary objectGUID
    change_slot: int
    account_control_slot: int | None
    department_slot: int  # departments_from = attribute; else empty_slot
    extras: tuple[tuple[int, str], ...]  # slot -> extra attribute name
    department_attributes: tuple[str, ...]  # requested for OUs: id, name, then the optional ones
    department_fields: Mapping[str, int]  # department field -> slot in department_attributes
    department_guid_ids: bool
    department_name_attribute: str

    @property
    def empty_slot(self) -> int:
        """One slot past the attributes, never filled: what unmapped fields read."""
        return len(self.attributes)

    @classmethod
    def from_settings(cls, settings: LdapSource) -> Shape:
        is_ad = settings.flavor == "active_directory"
        preset = dict(ad.PRESET if is_ad else OPENLDAP_PRESET)
        unknown = sorted(set(settings.attributes) - set(EMPLOYEE_FIELDS) - set(DEPARTMENT_FIELDS))
        if unknown:
            known = ", ".join(EMPLOYEE_FIELDS + DEPARTMENT_FIELDS)
            raise ConfigError(
                f"source.ldap.attributes: unknown field(s) {', '.join(unknown)}; known: {known}"
            )
        if settings.departments_from == "attribute" and not settings.department_attribute:
            raise ConfigError(
                "source.ldap.departments_from is 'attribute' "
                "but source.ldap.department_attribute is not set"
            )
        for name, attribute in settings.attributes.items():
            if name in EMPLOYEE_FIELDS:
                preset[name] = (attribute,)
        slots = _SlotTable()
        fields = {
            name: tuple(slots.add(a) for a in attributes) for name, attributes in preset.items()
        }
        change = slots.add(ad.CHANGE_ATTRIBUTE if is_ad else OPENLDAP_CHANGE_ATTRIBUTE)
        account_control = slots.add(ad.ACCOUNT_CONTROL_ATTRIBUTE) if is_ad else None
        department = (
            slots.add(settings.department_attribute)
            if settings.departments_from == "attribute" and settings.department_attribute
            else None
        )
        extras = tuple((slots.add(a), name) for a, name in settings.extra_attributes.items())
        empty = len(slots.names())

        id_attribute = preset["id"][0]
        department_slots = _SlotTable()
        department_id = settings.attributes.get("department_id", id_attribute)
        department_fields = {
            "department_id": department_slots.add(department_id),
            "name": department_slots.add(settings.department_name_attribute),
        }
        for name in DEPARTMENT_FIELDS[1:]:
            if name in settings.attributes:
                department_fields[name] = department_slots.add(settings.attributes[name])
        return cls(
            flavor=settings.flavor,
            users_filter=_parenthesized(
                settings.users_filter or (ad.USERS_FILTER if is_ad else OPENLDAP_USERS_FILTER)
            ),
            attributes=slots.names(),
            fields=fields,
            guid_ids=id_attribute.lower() == ad.GUID_ATTRIBUTE,
            change_slot=change,
            account_control_slot=account_control,
            department_slot=empty if department is None else department,
            extras=extras,
            department_attributes=department_slots.names(),
            department_fields=department_fields,
            department_guid_ids=department_id.lower() == ad.GUID_ATTRIBUTE,
            department_name_attribute=settings.department_name_attribute,
        )


class _SlotTable:
    """Attribute names, each once (case-insensitively), numbered in the order first asked for."""

    def __init__(self) -> None:
        self._slots: dict[str, int] = {}
        self._names: list[str] = []

    def add(self, attribute: str) -> int:
        key = attribute.lower()
        if key not in self._slots:
            self._slots[key] = len(self._names)
            self._names.append(attribute)
        return self._slots[key]

    def names(self) -> tuple[str, ...]:
        return tuple(self._names)


def _parenthesized(ldap_filter: str) -> str:
    ldap_filter = ldap_filter.strip()
    return ldap_filter if ldap_filter.startswith("(") else f"({ldap_filter})"


# ---------------------------------------------------------------- connecting


class _Unreachable(Exception):
    """This server could not be used (network, TLS): the next one in ``urls`` may be."""


@dataclass
class Session:
    """A connection to one server, named in every error raised while it is used."""

    url: str
    connection: ldap3.Connection
    read_timeout: float
    wire: Wire = field(init=False)

    def __post_init__(self) -> None:
        self.wire = Wire(self)

    def close(self) -> None:
        try:
            self.connection.unbind()
        except (LDAPException, OSError) as exc:  # already gone: nothing left to release
            log.debug("unbind from %s: %s", self.url, exc)

    def fail(self, step: str, problem: str) -> SourceError:
        return SourceError(redact(f"LDAP server {self.url}: {step}: {problem}"))


def _connect(settings: LdapSource, password: str | None) -> Session:
    """A bound session on the first server of ``urls`` that can be reached."""
    tls = _tls(settings)
    tried: list[str] = []
    for url in settings.urls:
        try:
            return _open(url, settings, password, tls)
        except _Unreachable as exc:
            log.warning("LDAP server %s cannot be used: %s", url, exc)
            tried.append(f"{url} ({exc})")
    raise SourceError(redact("no LDAP server could be used; tried " + "; ".join(tried)))


def _tls(settings: LdapSource) -> ldap3.Tls:
    if not settings.verify_tls:
        log.warning(
            "source.ldap.verify_tls is false: the LDAP server's certificate is NOT checked; "
            "anyone on the network path can read the bind password and the directory"
        )
        return ldap3.Tls(validate=ssl.CERT_NONE)
    ca_file = str(settings.ca_file) if settings.ca_file else None
    if settings.ca_file is not None and not settings.ca_file.exists():
        raise ConfigError(f"source.ldap.ca_file: {ca_file} does not exist")
    # A name the certificate may carry besides the URL's host (an IP address, an alias).
    names = [settings.tls_server_name] if settings.tls_server_name else None
    try:
        return ldap3.Tls(validate=ssl.CERT_REQUIRED, ca_certs_file=ca_file, valid_names=names)
    except LDAPException as exc:
        raise ConfigError(f"source.ldap.ca_file: {ca_file} cannot be used ({exc})") from None


def _open(url: str, settings: LdapSource, password: str | None, tls: ldap3.Tls) -> Session:
    secure = url.lower().startswith("ldaps://") or settings.start_tls
    if settings.bind_dn and not secure:
        log.warning(
            "LDAP %s: the bind password is sent unencrypted (use ldaps:// or start_tls)", url
        )
    try:
        server = ldap3.Server(
            url, get_info=ldap3.NONE, tls=tls, connect_timeout=settings.connect_timeout
        )
    except LDAPException as exc:
        raise _Unreachable(f"not a usable LDAP URL: {exc}") from None
    connection = ldap3.Connection(
        server,
        user=settings.bind_dn,
        password=password,
        authentication=ldap3.SIMPLE if settings.bind_dn else ldap3.ANONYMOUS,
        client_strategy=ldap3.SYNC,
        auto_referrals=False,
        raise_exceptions=False,
        read_only=True,
        check_names=False,
        # ldap3 packs it into SO_RCVTIMEO as a whole number; the exact value is set below.
        receive_timeout=max(1, math.ceil(settings.read_timeout)),
    )
    session = Session(url, connection, settings.read_timeout)
    _step(session, "connect", lambda: connection.open(read_server_info=False))
    wants_start_tls = settings.start_tls and not url.lower().startswith("ldaps://")
    if wants_start_tls and not _step(
        session, "starttls", lambda: connection.start_tls(read_server_info=False)
    ):
        session.close()
        raise _Unreachable(f"starttls: refused: {_result_text(connection.result)}")
    if settings.bind_dn:
        _bind(session, settings.bind_dn)
    connection.socket.settimeout(settings.read_timeout)
    return session


def _step(session: Session, step: str, action: Callable[[], Any]) -> Any:
    """Run a connect-phase action; network and TLS failures make the server unreachable."""
    try:
        return action()
    except (LDAPException, OSError) as exc:
        session.close()
        raise _Unreachable(f"{step}: {_describe_connect_error(exc, session.url)}") from None


def _bind(session: Session, bind_dn: str) -> None:
    connection = session.connection
    if _step(session, "bind", lambda: connection.bind(read_server_info=False)):
        return
    result = connection.result or {}
    session.close()
    if result.get("result") in (51, 52):  # busy, unavailable: another server may do
        raise _Unreachable(f"bind: {_result_text(result)}")
    # Refused credentials are not retried elsewhere: that could lock the account out.
    raise session.fail(f"bind as {bind_dn}", f"refused: {_result_text(result)}")


def _describe_connect_error(exc: BaseException, url: str) -> str:
    text = str(exc)
    host = urlsplit(url).hostname or url
    if "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text:
        return (
            f"TLS: the certificate of {host} is not trusted ({_ssl_reason(text)}); "
            "set source.ldap.ca_file to the CA that signed it"
        )
    if isinstance(exc, LDAPCertificateError) or "doesn't match any name" in text:
        return _name_mismatch(text, host)
    if isinstance(exc, TimeoutError) or "timed out" in text:
        return f"timed out ({text})"
    if "refused" in text.lower():
        return "connection refused"
    if "invalid server address" in text:
        return f"the host name {host} does not resolve"
    return text


# ldap3's mismatch message holds the certificate as ssl.getpeercert() gives it: its names
# are ('DNS', 'name') and ('IP Address', 'ip') pairs, else its subject's commonName (the
# first one: the issuer's comes after).
_CERTIFICATE_NAMES = re.compile(r"\('(?:DNS|IP Address)', '([^']+)'\)")
_COMMON_NAME = re.compile(r"\('commonName', '([^']+)'\)")


def _name_mismatch(text: str, host: str) -> str:
    names = _CERTIFICATE_NAMES.findall(text) or _COMMON_NAME.findall(text)[:1]
    named = (
        f"names {', '.join(dict.fromkeys(names))}, not {host}" if names else f"does not name {host}"
    )
    return (
        f"TLS: the certificate {named}; connect by a name it carries, or set "
        "source.ldap.tls_server_name to it (verification stays on)"
    )


def _ssl_reason(text: str) -> str:
    match = re.search(r"certificate verify failed: ([^(\]']+)", text)
    return match.group(1).strip() if match else text


def _result_text(result: Mapping[str, Any] | None) -> str:
    if not result:
        return "no answer"
    code = result.get("result")
    name = result.get("description") or RESULT_CODES.get(code or 0, f"result {code}")
    message = result.get("message")
    return f"{name}" + (f" ({message})" if message else "")


# ---------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Delta:
    """What a read selects, and what its new mark is made from."""

    changed_filter: str  # "" for a full read
    since: str | None  # the mark given, when it is used
    controller: str = ""  # AD: the domain controller read from
    usn_before: int | None = None  # AD: its highestCommittedUSN before the read


def _read(session: Session, settings: LdapSource, shape: Shape, since: str | None) -> Directory:
    delta = _plan_delta(session, shape, since)
    users_filter = shape.users_filter
    if delta.changed_filter:
        users_filter = f"(&{users_filter}{delta.changed_filter})"
    departed = _departed_ids(session, settings, shape, users_filter)

    departments: list[tuple[str, Department]] = []
    rejected: list[RejectedRow] = []
    placement: Placement
    if settings.departments_from == "ou_tree":
        tree = _ou_tree(session, settings, shape, rejected)
        departments = tree.departments
        placement = tree
    else:
        placement = DepartmentPaths(settings.department_path_separator)

    people = PeopleReader(shape, departed, placement, rejected)
    started = time.monotonic()
    search = Search(
        step=f"search users under {settings.users_base}",
        base=settings.users_base,
        filter=users_filter,
        attributes=shape.attributes,
        page_size=settings.page_size,
        skip_references=shape.flavor == "active_directory",
    )
    employees = [people.employee(dn, values) for dn, values in session.wire.entries(search)]
    elapsed = time.monotonic() - started
    if isinstance(placement, DepartmentPaths):
        departments = placement.departments()

    cursor = _new_mark(shape, delta, people.highest_change, elapsed)
    directory = build_directory(
        departments,
        ((where, e) for where, e in employees if e is not None),
        rejected=rejected,
        complete=not delta.changed_filter,
        source=_describe_source(session.url, settings.users_base),
        cursor=cursor,
    )
    log.info(
        "read %s from %s: %d departments, %d people, %d rejected, mark %s",
        "all" if directory.complete else f"changes since {since}",
        session.url,
        len(directory.departments),
        len(directory.employees),
        len(directory.rejected),
        cursor,
    )
    return directory


def _describe_source(url: str, base: str) -> str:
    return f"{url.rstrip('/')}/{base}"  # an LDAP URL of the base (RFC 4516, unescaped)


def _plan_delta(session: Session, shape: Shape, since: str | None) -> _Delta:
    if shape.flavor != "active_directory":
        if since is None:
            return _Delta("", None)
        if not _GENERALIZED_TIME.match(since):
            raise session.fail(
                "read changes", f"the mark {since!r} is not a generalized time (YYYYMMDDHHMMSSZ)"
            )
        return _Delta(f"({OPENLDAP_CHANGE_ATTRIBUTE}>={since})", since)

    controller, usn_before = _ad_root_dse(session)
    if since is None:
        return _Delta("", None, controller, usn_before)
    try:
        previous = ad.UsnMark.parse(since)
    except ValueError as exc:
        raise session.fail("read changes", str(exc)) from None
    if previous.controller != controller:
        # USNs are counted per controller: a mark from another one says nothing here.
        log.info(
            "the mark %s is from another domain controller: reading everything from %s",
            since,
            controller,
        )
        return _Delta("", None, controller, usn_before)
    return _Delta(previous.changed_filter(), since, controller, usn_before)


def _ad_root_dse(session: Session) -> tuple[str, int | None]:
    """The controller's name and ``highestCommittedUSN``, from its root DSE."""
    connection = session.connection
    try:
        found = connection.search(
            "", "(objectClass=*)", ldap3.BASE, attributes=["highestCommittedUSN", "dnsHostName"]
        )
    except (LDAPException, OSError) as exc:
        raise session.fail("read the root DSE", str(exc)) from None
    entries = (connection.response or []) if found else []
    raw = entries[0].get("raw_attributes", {}) if entries else {}
    controller = (
        _first_raw(raw, "dnsHostName") or urlsplit(session.url).hostname or session.url
    ).lower()
    usn = _first_raw(raw, "highestCommittedUSN")
    if usn is None or not usn.isdigit():
        log.warning(
            "%s publishes no highestCommittedUSN: the mark will be the highest uSNChanged read",
            session.url,
        )
        return controller, None
    return controller, int(usn)


def _first_raw(raw: Mapping[str, list[bytes]], name: str) -> str | None:
    for key, values in raw.items():
        if key.lower() == name.lower() and values:
            return values[0].decode("utf-8", "replace")
    return None


def _new_mark(shape: Shape, delta: _Delta, highest: str | None, elapsed: float) -> str | None:
    """The mark the next delta starts from; never earlier than the one given."""
    if shape.flavor == "active_directory":
        if delta.usn_before is not None:
            return str(ad.UsnMark(delta.usn_before, delta.controller))
        if highest is None:
            return delta.since
        return str(ad.UsnMark(int(highest), delta.controller))
    if highest is None:
        return delta.since
    # A paged read is no snapshot: an entry read early and changed later may carry an
    # older timestamp than one read at the end. Pulling the mark back by the read's own
    # duration makes the next delta re-read that window rather than miss it.
    mark = _minus_seconds(highest, math.ceil(elapsed) + 1)
    return max(mark, delta.since) if delta.since else mark


def _minus_seconds(generalized_time: str, seconds: int) -> str:
    moment = datetime.strptime(generalized_time[:14], "%Y%m%d%H%M%S") - timedelta(seconds=seconds)
    return moment.strftime("%Y%m%d%H%M%SZ")


def _departed_ids(
    session: Session, settings: LdapSource, shape: Shape, users_filter: str
) -> frozenset[str]:
    """Ids of the people ``departed_filter`` matches, evaluated by the server."""
    if not settings.departed_filter:
        return frozenset()
    id_slots = shape.fields["id"]
    search = Search(
        step="search departed users",
        base=settings.users_base,
        filter=f"(&{users_filter}{_parenthesized(settings.departed_filter)})",
        attributes=tuple(shape.attributes[slot] for slot in id_slots),
        page_size=settings.page_size,
        skip_references=shape.flavor == "active_directory",
    )
    ids: set[str] = set()
    for dn, values in session.wire.entries(search):
        raw = next((found for found in values if found), None)
        if raw is None:
            continue
        try:
            ids.add(entry_id(raw, guid=shape.guid_ids))
        except ValueError as exc:  # UnicodeDecodeError included
            # One entry must not stop the read: the people search reads it again and
            # rejects it for the same id, with its username, so it is kept as it is.
            log.warning(
                "%s: %s: the id cannot be read (%s); the person is rejected",
                search.step,
                dn,
                _value_problem(exc),
            )
    return frozenset(ids)


# ---------------------------------------------------------------- departments


class Placement(Protocol):
    """Finds the department a person belongs to, from a department path or the DN."""

    def department_of(self, path: str | None, where: str) -> str | None: ...


class OuTree:
    """Departments from the organizational units under a base; people placed by their DN."""

    def __init__(self, base: str) -> None:
        self.base_key = dn_key(base)
        self.departments: list[tuple[str, Department]] = []
        self._by_key: dict[str, str] = {}  # normalized OU DN -> department id
        self._by_parent: dict[str, str | None] = {}  # a person's parent DN as read -> department

    def add(self, key: str, department_id: str) -> None:
        """Place what is below the OU with this normalized DN in this department."""
        self._by_key[key] = department_id

    def nearest(self, key: str) -> str | None:
        """The department of the nearest OU at or above this normalized DN."""
        while key and key != self.base_key:
            found = self._by_key.get(key)
            if found is not None:
                return found
            key = parent_dn(key)
        return None

    def department_of(self, path: str | None, where: str) -> str | None:
        parent = parent_dn(where)  # ``where`` is the person's DN; paths are not used here
        try:
            return self._by_parent[parent]
        except KeyError:
            found = self._by_parent[parent] = self.nearest(dn_key(parent))
            return found


def _ou_tree(
    session: Session, settings: LdapSource, shape: Shape, rejected: list[RejectedRow]
) -> OuTree:
    base = settings.departments_base or settings.users_base
    tree = OuTree(base)
    search = Search(
        step=f"search departments under {base}",
        base=base,
        filter=ad.DEPARTMENTS_FILTER if shape.flavor == "active_directory" else DEPARTMENTS_FILTER,
        attributes=shape.department_attributes,
        page_size=settings.page_size,
        skip_references=shape.flavor == "active_directory",
    )
    read: list[tuple[str, str, Department]] = []
    for dn, values in session.wire.entries(search):
        key = dn_key(dn)
        if key == tree.base_key:
            continue  # the base is the root organization, not a department
        try:
            department = _department(dn, values, shape)
        except ValueError as exc:
            # Placement must still stop at this OU: passed over, its sub-OUs and people
            # would move up to the OU above it. Placed under an id no department has,
            # they are rejected too (as below a rejected row of a departments file), and
            # the id in the row keeps the OU and its subtree on the platform as they are.
            department_id = _readable_id(values, shape)
            rejected.append(RejectedRow(dn, _value_problem(exc), Kind.DEPARTMENT, department_id))
            tree.add(key, department_id or f"{_UNREADABLE_ID}{dn}")
            continue
        read.append((dn, key, department))
        tree.add(key, department.id)
    for dn, key, department in read:
        parent = tree.nearest(parent_dn(key))
        tree.departments.append((dn, replace(department, parent_id=parent)))
    return tree


def _department_id(values: Values, shape: Shape) -> str:
    raw = values[shape.department_fields["department_id"]]
    if not raw:
        return ""
    return entry_id(raw, guid=shape.department_guid_ids)


def entry_id(raw: bytes, *, guid: bool) -> str:
    """An entry's stable id as text: AD's binary objectGUID, or entryUUID's UTF-8."""
    return ad.guid_to_str(raw) if guid else raw.decode("utf-8")


def _readable_id(values: Values, shape: Shape) -> str | None:
    """A rejected OU's id, when that at least can be read."""
    try:
        return _department_id(values, shape) or None
    except ValueError:  # UnicodeDecodeError included
        return None


def _value_problem(exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"a value is not UTF-8 text ({exc})"
    return str(exc)


def _department(dn: str, values: Values, shape: Shape) -> Department:
    slots = shape.department_fields
    department_id = _department_id(values, shape)
    if shape.department_name_attribute.lower() == rdn_attribute(dn).lower():
        # ``ou`` may hold several values: the one in the DN is the one naming the entry.
        name = rdn_value(dn)
    else:
        name = raw.decode("utf-8") if (raw := values[slots["name"]]) else ""

    def text(field_name: str) -> str | None:
        slot = slots.get(field_name)
        raw = values[slot] if slot is not None else None
        return raw.decode("utf-8") if raw else None

    return Department(
        id=department_id,
        name=name,
        sort_order=_integer(text("department_sort_order"), "sort order"),
        sn=text("department_sn"),
        en_name=text("department_en_name"),
    )


# ---------------------------------------------------------------- people


class PeopleReader:
    """Turns each user entry into an Employee, or a rejected row saying why not.

    Called once per person: the fields' slots are looked up once, here, and values are
    decoded inline rather than through a helper per field.
    """

    def __init__(
        self,
        shape: Shape,
        departed: frozenset[str],
        placement: Placement,
        rejected: list[RejectedRow],
    ) -> None:
        self.shape = shape
        self.departed = departed
        self.placement = placement
        self.rejected = rejected
        self.highest_change: str | None = None
        self._highest_usn = -1
        self._slots = {
            name: shape.fields.get(name, (shape.empty_slot,)) for name in EMPLOYEE_FIELDS
        }
        self._first = {name: found[0] for name, found in self._slots.items()}
        self._rare_mapped = any(name in shape.fields for name in _RARE_FIELDS)

    def employee(self, dn: str, values: Values) -> tuple[str, Employee | None]:
        try:
            return dn, self._employee(dn, values)
        except ValueError as exc:
            reason = _value_problem(exc)
            key, username = self._safe(values, "id"), self._safe(values, "username")
            self.rejected.append(RejectedRow(dn, reason, Kind.EMPLOYEE, key, username))
            return dn, None

    def _employee(self, dn: str, values: Values) -> Employee:
        first, shape = self._first, self.shape
        if v := values[shape.change_slot]:
            self._note_change(v)
        employee_id = self._id_of(values)
        title = v.decode() if (v := values[first["job_title"]]) else None
        path = v.decode() if (v := values[shape.department_slot]) else None
        department = self.placement.department_of(path, dn)
        departed = employee_id in self.departed or self._disabled(values)
        gender, birthday, sort_order, senior = (
            self._rare_fields(values) if self._rare_mapped else (None, None, None, False)
        )
        return Employee(
            id=employee_id,
            username=self._text(values, "username") or "",
            name=self._text(values, "name") or "",
            positions=(Position(department, title, primary=True),)
            if department is not None
            else (),
            en_name=v.decode() if (v := values[first["en_name"]]) else None,
            email=v.decode() if (v := values[first["email"]]) else None,
            mobile=v.decode() if (v := values[first["mobile"]]) else None,
            tel=v.decode() if (v := values[first["tel"]]) else None,
            sn=v.decode() if (v := values[first["sn"]]) else None,
            gender=gender,
            birthday=birthday,
            job_title=title,
            sort_order=sort_order,
            senior=senior,
            state=State.DEPARTED if departed else State.ACTIVE,
            extra=self._extras(values) if shape.extras else (),
        )

    def _rare_fields(self, values: Values) -> tuple[str | None, str | None, int | None, bool]:
        """Gender, birthday, sort order and senior: no preset maps them, settings may."""
        return (
            normalize_gender(self._text(values, "gender")),
            _date(self._text(values, "birthday")),
            _integer(self._text(values, "sort_order"), "sort order"),
            _boolean(self._text(values, "senior"), "senior"),
        )

    def _note_change(self, raw: bytes) -> None:
        """Keep the highest change mark (modifyTimestamp text, or AD's uSNChanged number)."""
        if self.shape.flavor == "active_directory":
            usn = int(raw)
            if usn > self._highest_usn:
                self._highest_usn = usn
                self.highest_change = str(usn)
        else:
            stamp = raw.decode("ascii")
            if self.highest_change is None or stamp > self.highest_change:
                self.highest_change = stamp

    def _text(self, values: Values, field_name: str) -> str | None:
        """The field's first value present, as text, trying its attributes in order."""
        for slot in self._slots[field_name]:
            if raw := values[slot]:
                return raw.decode()
        return None

    def _id_of(self, values: Values) -> str:
        raw = next((found for slot in self._slots["id"] if (found := values[slot])), None)
        if not raw:
            return ""
        return entry_id(raw, guid=self.shape.guid_ids)

    def _disabled(self, values: Values) -> bool:
        slot = self.shape.account_control_slot
        raw = values[slot] if slot is not None else None
        return ad.is_disabled(raw.decode("ascii")) if raw else False

    def _extras(self, values: Values) -> tuple[tuple[str, str], ...]:
        return tuple(
            (name, raw.decode()) for slot, name in self.shape.extras if (raw := values[slot])
        )

    def _safe(self, values: Values, field_name: str) -> str | None:
        """A field for a rejected row's key, if it can be read at all."""
        try:
            return (
                self._id_of(values) if field_name == "id" else self._text(values, field_name)
            ) or None
        except ValueError:  # UnicodeDecodeError included
            return None


# Values are read by the same rules as the CSV source's cells.


def _integer(text: str | None, what: str) -> int | None:
    if text is None or not text.strip():
        return None
    number = parse_int32(text)
    if number is None:
        raise ValueError(f"{what} {text!r} is not a whole number the platform can store")
    return number


def _boolean(text: str | None, what: str) -> bool:
    flag = parse_flag(text or "")
    if flag is None:
        raise ValueError(f"{what} {text!r} is neither yes nor no")
    return flag


def _date(text: str | None) -> str | None:
    """An ISO date from a date as the CSV source reads them, or from a generalized time."""
    if text is None or not text.strip():
        return None
    day = parse_date(_GENERALIZED_TIME.sub(r"\1", text.strip()))
    if day is None:
        raise ValueError(f"birthday {text!r} is not a date")
    return day


# ---------------------------------------------------------------- distinguished names


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


# ---------------------------------------------------------------- the wire


@dataclass(frozen=True)
class Search:
    step: str  # for error texts: "search users under ou=People,dc=acme,dc=example"
    base: str
    filter: str
    attributes: tuple[str, ...]
    page_size: int
    skip_references: bool  # AD: references to application partitions hold no people


# A DN and the first value of each requested attribute by slot (None: not present),
# plus one last slot that is always None. Only first values are kept: every field is
# single-valued in the model, and skipping the rest is a good part of decoding's speed.
Values = list[bytes | None]
Entry = tuple[str, Values]


class Wire:
    """Paged searches on a session's socket, answers decoded here (see the module docstring)."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self._buffer = b""
        self._offset = 0

    def entries(self, search: Search) -> Iterator[Entry]:
        """Every entry the search finds, page by page, in no particular order."""
        slots = {name.lower().encode("utf-8"): i for i, name in enumerate(search.attributes)}
        request = self._request(search)
        cookie = b""
        page = 0
        while True:
            page += 1
            step = f"{search.step}: page {page}"
            try:
                message_id = send_page(self.session.connection, request, search.page_size, cookie)
                cookie = yield from self._page(
                    message_id, search, slots, len(search.attributes) + 1, step
                )
            except TimeoutError:
                raise self.session.fail(
                    step, f"no answer within {self.session.read_timeout:g}s"
                ) from None
            except (OSError, LDAPException) as exc:
                raise self.session.fail(
                    step, f"connection lost ({exc or type(exc).__name__})"
                ) from None
            except (IndexError, ValueError) as exc:
                raise self.session.fail(
                    step, f"could not decode the server's answer ({exc})"
                ) from None
            if not cookie:
                return

    def _request(self, search: Search) -> Any:
        connection = self.session.connection
        try:
            return search_operation(
                search_base=search.base,
                search_filter=search.filter,
                search_scope=ldap3.SUBTREE,
                dereference_aliases=ldap3.DEREF_NEVER,
                attributes=list(search.attributes),
                size_limit=0,
                time_limit=0,
                types_only=False,
                auto_escape=connection.auto_escape,
                auto_encode=connection.auto_encode,
            )
        except LDAPException as exc:
            raise self.session.fail(
                search.step, f"invalid filter {search.filter!r}: {exc}"
            ) from None

    def _page(
        self, message_id: int, search: Search, slots: dict[bytes, int], width: int, step: str
    ) -> Generator[Entry, None, bytes]:
        """The entries of one page; returns the cookie for the next (empty: none left).

        Messages are framed straight from the receive buffer: a generator per message
        layer would cost as much as decoding the entry.
        """
        data, i = self._buffer, self._offset
        while True:
            n = len(data)
            while n - i >= 2:
                if data[i] != 0x30:
                    raise ValueError(f"not an LDAP message (byte 0x{data[i]:02x})")
                length = data[i + 1]
                if length < 0x80:
                    start = i + 2
                    end = start + length
                else:
                    start = i + 2 + (length & 0x7F)
                    if start > n:
                        break
                    end = start + int.from_bytes(data[i + 2 : start], "big")
                if end > n:
                    break
                k = data[start + 1]  # messageID: INTEGER
                got_id = int.from_bytes(data[start + 2 : start + 2 + k], "big")
                op = start + 2 + k
                i = end
                if got_id == message_id and data[op] == 0x64:  # SearchResultEntry
                    yield decode_entry(data, op, slots, width)
                    continue
                self._buffer, self._offset = data, i
                done = self._other_message(data, op, end, got_id, message_id, search, step)
                if done is not None:
                    return done
            data = data[i:] + self._receive()
            i = 0

    def _other_message(
        self,
        data: bytes,
        op: int,
        end: int,
        got_id: int,
        message_id: int,
        search: Search,
        step: str,
    ) -> bytes | None:
        """Handle any message but an entry; a SearchResultDone gives the next page's cookie."""
        tag = data[op]
        if got_id != message_id:
            if got_id == 0:
                message = _unsolicited(data, op)
                raise self.session.fail(step, f"the server ended the session ({message})")
            raise self.session.fail(step, f"answer to another request ({got_id}, not {message_id})")
        if tag == 0x65:  # SearchResultDone
            return self._done(data, op, end, search, step)
        if tag == 0x73:  # SearchResultReference
            urls = ", ".join(_strings(data, op, end))
            if not search.skip_references:
                raise self.session.fail(
                    step,
                    f"part of the subtree is on another server (referral to {urls});"
                    " a partial read is not used: point the base below it",
                )
            log.debug("%s: skipped a continuation reference to %s", step, urls)
        else:
            log.debug("%s: ignored a message with tag 0x%02x", step, tag)
        return None

    def _receive(self) -> bytes:
        sock = self.session.connection.socket
        if sock is None:
            raise ConnectionError("the connection is closed")
        chunk: bytes = sock.recv(_RECV_SIZE)
        if not chunk:
            raise ConnectionError("the server closed the connection")
        return chunk

    def _done(self, data: bytes, i: int, end: int, search: Search, step: str) -> bytes:
        code, matched, message, referrals, op_end = decode_result(data, i)
        if code == 0:
            return paged_cookie(data, op_end, end)
        name = RESULT_CODES.get(code, f"result code {code}")
        detail = f" ({message})" if message else ""
        if code == 32:
            raise self.session.fail(
                step, f"the base {search.base} does not exist: noSuchObject{detail}"
            )
        if code == 10:
            raise self.session.fail(
                step,
                f"the base {search.base} is on another server: referral to {', '.join(referrals)}",
            )
        if code in (3, 4, 11):
            raise self.session.fail(
                step,
                f"the server stopped the search: {name}{detail};"
                " raise the server's limits for the bind DN",
            )
        return_text = f"{name}{detail}" + (f", matched {matched}" if matched else "")
        raise self.session.fail(step, return_text)


def send_page(connection: ldap3.Connection, request: Any, page_size: int, cookie: bytes) -> int:
    """Send one page's search request; its answer is read by Wire, not by ldap3."""
    controls = [paged_search_control(True, page_size, cookie)]
    message_id: int = connection.strategy.send("searchRequest", request, controls)
    connection.strategy._outstanding.pop(message_id, None)
    return message_id


def decode_entry(data: bytes, i: int, slots: dict[bytes, int], width: int) -> Entry:
    """A SearchResultEntry at ``data[i]``: its DN and the first value of each requested attribute.

    The hot loop of a read: BER lengths are decoded inline, attribute names are matched
    as bytes (a name seen in another case is learnt once into ``slots``).
    """
    i += 1
    b = data[i]
    i += 1 if b < 0x80 else 1 + (b & 0x7F)  # protocolOp length: not needed
    i += 1  # objectName: OCTET STRING
    b = data[i]
    if b < 0x80:
        n = b
        i += 1
    else:
        k = b & 0x7F
        n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
        i += 1 + k
    dn = data[i : i + n].decode("utf-8")
    i += n + 1  # attributes: SEQUENCE
    b = data[i]
    if b < 0x80:
        n = b
        i += 1
    else:
        k = b & 0x7F
        n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
        i += 1 + k
    stop = i + n
    values: Values = [None] * width
    while i < stop:
        i += 1  # PartialAttribute: SEQUENCE
        b = data[i]
        i += 2 if b < 0x80 else 2 + (b & 0x7F)  # its length, then the type's tag
        b = data[i]
        if b < 0x80:
            n = b
            i += 1
        else:
            k = b & 0x7F
            n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
            i += 1 + k
        name = data[i : i + n]
        i += n + 1  # vals: SET
        b = data[i]
        if b < 0x80:
            n = b
            i += 1
        else:
            k = b & 0x7F
            n = int.from_bytes(data[i + 1 : i + 1 + k], "big")
            i += 1 + k
        set_end = i + n
        slot = slots.get(name)
        if slot is None:
            slot = slots[name] = slots.get(name.lower(), -1)
        if slot >= 0 and n:
            b = data[i + 1]  # the first value's length, after its tag
            if b < 0x80:
                values[slot] = data[i + 2 : i + 2 + b]
            else:
                k = b & 0x7F
                start = i + 2 + k
                values[slot] = data[start : start + int.from_bytes(data[i + 2 : start], "big")]
        i = set_end
    return dn, values


def _tlv(data: bytes, i: int) -> tuple[int, int, int]:
    """(tag, start of value, end of value) of the element at ``data[i]``."""
    tag = data[i]
    b = data[i + 1]
    if b < 0x80:
        return tag, i + 2, i + 2 + b
    k = b & 0x7F
    start = i + 2 + k
    return tag, start, start + int.from_bytes(data[i + 2 : start], "big")


def _strings(data: bytes, i: int, stop: int) -> list[str]:
    """The OCTET STRINGs inside the constructed element at ``data[i]``."""
    _, j, end = _tlv(data, i)
    out = []
    while j < min(end, stop):
        _, start, j = _tlv(data, j)
        out.append(data[start:j].decode("utf-8", "replace"))
    return out


def decode_result(data: bytes, i: int) -> tuple[int, str, str, list[str], int]:
    """An LDAPResult: code, matched DN, diagnostic message, referral URLs, end of the element."""
    _, j, op_end = _tlv(data, i)
    _, start, j = _tlv(data, j)
    code = int.from_bytes(data[start:j], "big")
    _, start, j = _tlv(data, j)
    matched = data[start:j].decode("utf-8", "replace")
    _, start, j = _tlv(data, j)
    message = data[start:j].decode("utf-8", "replace")
    referrals = _strings(data, j, op_end) if j < op_end and data[j] == 0xA3 else []
    return code, matched, message, referrals, op_end


def _unsolicited(data: bytes, i: int) -> str:
    """What an unsolicited notification (a notice of disconnection) says."""
    try:
        code, _, message, _, _ = decode_result(data, i)
    except IndexError:
        return "unsolicited notification"
    return message or RESULT_CODES.get(code, f"result code {code}")


def paged_cookie(data: bytes, i: int, end: int) -> bytes:
    """The paged-results cookie among the controls after a SearchResultDone (empty: done)."""
    if i >= end or data[i] != 0xA0:
        return b""
    _, j, controls_end = _tlv(data, i)
    while j < controls_end:
        _, k, control_end = _tlv(data, j)
        _, start, k = _tlv(data, k)
        oid = data[start:k]
        value = b""
        while k < control_end:
            tag, start, k = _tlv(data, k)
            if tag == 0x04:
                value = data[start:k]
        if oid == _PAGED_RESULTS_OID and value:
            _, m, _ = _tlv(value, 0)  # realSearchControlValue: SEQUENCE
            _, _, m = _tlv(value, m)  # size
            _, start, m = _tlv(value, m)  # cookie
            return value[start:m]
        j = control_end
    return b""
