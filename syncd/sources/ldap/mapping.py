"""What a read asks for, and how each user entry becomes an Employee (or a rejected row).

Model fields map to attributes by the flavor's preset (OpenLDAP or Active Directory),
which ``attributes`` in the settings can replace field by field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from syncd.config import LdapSource
from syncd.errors import ConfigError
from syncd.mapping import Get, Mapped, Rules, with_mapped
from syncd.model import (
    Employee,
    Kind,
    Position,
    RejectedRow,
    State,
    normalize_gender,
)
from syncd.sources import active_directory as ad
from syncd.sources._text import parse_date, parse_flag, parse_int32
from syncd.sources._trace import Outcome, Tracer
from syncd.sources.ldap.wire import Values

if TYPE_CHECKING:
    from syncd.sources.photos import PhotoCheck

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

GENERALIZED_TIME = re.compile(r"^(\d{8})\d{6}(?:[.,]\d+)?Z$")  # group 1: the date


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
    expires_slot: int | None = None  # AD: accountExpires
    rules: Rules | None = None
    # Fields a rule makes: their values go to slots past the empty one, in this order.
    ruled: tuple[str, ...] = ()
    own_fields: Mapping[str, tuple[int, ...]] | None = None  # fields' slots without the rules
    attribute_slots: Mapping[str, int] = field(default_factory=dict)  # lower-case name -> slot
    photo_slot: int | None = None  # source.photos on: the photo attribute (first value)

    @property
    def empty_slot(self) -> int:
        """One slot past the attributes, never filled: what unmapped fields read."""
        return len(self.attributes)

    def slot_of(self, attribute: str) -> int:
        """The slot an attribute is read into (the empty slot for one not asked for)."""
        return self.attribute_slots.get(attribute.lower(), self.empty_slot)

    @classmethod
    def from_settings(
        cls, settings: LdapSource, rules: Rules | None = None, *, photo_attribute: str | None = None
    ) -> Shape:
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
        expires = slots.add(ad.EXPIRES_ATTRIBUTE) if is_ad else None
        photo = slots.add(photo_attribute) if photo_attribute else None
        for attribute in rules.attributes() if rules else ():
            slots.add(attribute)
        empty = len(slots.names())
        ruled = tuple(rules.fields) if rules else ()
        own_fields = dict(fields)
        for i, name in enumerate(ruled):
            fields[name] = (empty + 1 + i,)

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
            users_filter=parenthesized(
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
            expires_slot=expires,
            rules=rules,
            ruled=ruled,
            own_fields=own_fields,
            attribute_slots={name.lower(): i for i, name in enumerate(slots.names())},
            photo_slot=photo,
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


def parenthesized(ldap_filter: str) -> str:
    ldap_filter = ldap_filter.strip()
    return ldap_filter if ldap_filter.startswith("(") else f"({ldap_filter})"


def entry_id(raw: bytes, *, guid: bool) -> str:
    """An entry's stable id as text: AD's binary objectGUID, or entryUUID's UTF-8."""
    return ad.guid_to_str(raw) if guid else raw.decode("utf-8")


def value_problem(exc: ValueError) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return f"a value is not UTF-8 text ({exc})"
    return str(exc)


# ---------------------------------------------------------------- people


class Placement(Protocol):
    """Finds the department a person belongs to, from a department path or the DN."""

    def department_of(self, path: str | None, where: str) -> str | None: ...


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
        *,
        expired_before: int = 0,  # AD: accountExpires at or below this (and above 0) is past
        trace: Tracer | None = None,
        photos: PhotoCheck | None = None,
    ) -> None:
        self.shape = shape
        self.photos = photos  # checks the photo of each person, when photos are read
        self.departed = departed
        self.placement = placement
        self.rejected = rejected
        self.expired_before = expired_before
        self.trace = trace
        self.filtered = 0  # people the row filter left out
        self.highest_change: str | None = None
        self._highest_usn = -1
        self._slots = {
            name: shape.fields.get(name, (shape.empty_slot,)) for name in EMPLOYEE_FIELDS
        }
        self._first = {name: found[0] for name, found in self._slots.items()}
        self._rare_mapped = any(name in shape.fields for name in _RARE_FIELDS)
        self._account_checked = (
            shape.account_control_slot is not None or shape.expires_slot is not None
        )
        # (department, title as read) -> the positions of everyone placed so: one value, shared.
        self._positions: dict[tuple[str | None, bytes | None], tuple[Position, ...]] = {}
        self._own = dict(shape.own_fields or shape.fields)
        self._own.update((name, (slot,)) for slot, name in shape.extras)
        if trace is not None:
            own = {
                name: tuple(shape.attributes[s] for s in slots) for name, slots in self._own.items()
            }
            trace.start(own)

    def employee(self, dn: str, values: Values) -> tuple[str, Employee | None]:
        try:
            if self.shape.rules is None and self.trace is None:
                return dn, self._employee(dn, values)
            return dn, self._mapped(dn, values)
        except ValueError as exc:
            reason = value_problem(exc)
            key, username = self._safe(values, "id"), self._safe(values, "username")
            self.rejected.append(RejectedRow(dn, reason, Kind.EMPLOYEE, key, username))
            if self.trace is not None:
                self.trace.record(dn, self._getter(values), Outcome(None, reason))
            return dn, None

    def _mapped(self, dn: str, values: Values) -> Employee | None:
        """The person by the mapping rules: None when the row filter leaves them out."""
        get, rules = self._getter(values), self.shape.rules
        mapped: Mapped | None = None
        if rules is not None:
            reason = rules.left_out(get)
            if reason is not None:
                self.filtered += 1
                if self.trace is not None:
                    self.trace.record(dn, get, Outcome(None, reason, left_out=True))
                return None
            mapped = rules.apply(get, lambda section, name: self._own_text(values, name))
            values.extend(
                None if (v := mapped.fields[name]) is None else v.encode()
                for name in self.shape.ruled
            )
        employee = self._employee(dn, values)
        if mapped is not None:
            employee = with_mapped(employee, mapped)
        if self.trace is not None:
            self.trace.record(dn, get, Outcome(employee))
        return employee

    def _getter(self, values: Values) -> Get:
        """An attribute's first value as text, by name (a value not UTF-8 rejects the person)."""
        slot_of = self.shape.slot_of

        def get(attribute: str) -> str | None:
            raw = values[slot_of(attribute)]
            return raw.decode() if raw else None

        return get

    def _own_text(self, values: Values, name: str) -> str | None:
        """A field's (or extra attribute's) value read the way it is without a rule."""
        for slot in self._own.get(name, ()):
            if raw := values[slot]:
                return raw.decode()
        return None

    def _employee(self, dn: str, values: Values) -> Employee:
        first, shape = self._first, self.shape
        if v := values[shape.change_slot]:
            self._note_change(v)
        employee_id = self._id_of(values)
        raw_title = values[first["job_title"]]
        path = v.decode() if (v := values[shape.department_slot]) else None
        department = self.placement.department_of(path, dn)
        title = None
        positions = self._positions.get((department, raw_title))
        if positions is None:
            title = raw_title.decode() if raw_title else None
            placed = (Position(department, title, primary=True),) if department is not None else ()
            positions = self._positions[(department, raw_title)] = placed
        elif positions:  # titles repeat across thousands of people: the string is shared
            title = positions[0].job_title
        elif raw_title:
            title = raw_title.decode()
        departed = employee_id in self.departed or (
            self._account_checked and (self._disabled(values) or self._expired(values))
        )
        gender, birthday, sort_order, senior = (
            self._rare_fields(values) if self._rare_mapped else (None, None, None, False)
        )
        username = self._text(values, "username") or ""
        photo = None
        if self.photos is not None and shape.photo_slot is not None:
            data = values[shape.photo_slot]
            photo = self.photos.photo(data, dn, employee_id, username) if data else None
        return Employee(
            id=employee_id,
            username=username,
            name=self._text(values, "name") or "",
            positions=positions,
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
            photo=photo,
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
        for slot in self._slots["id"]:
            if raw := values[slot]:
                return entry_id(raw, guid=self.shape.guid_ids)
        return ""

    def _disabled(self, values: Values) -> bool:
        slot = self.shape.account_control_slot
        if slot is None:
            return False
        raw = values[slot]
        if not raw:
            # Every AD account has one: absent, the bind account may not read it, and an
            # unknown state must never pass for an enabled account (the person is kept).
            raise ValueError(
                f"{ad.ACCOUNT_CONTROL_ATTRIBUTE} is absent, so whether the account is disabled "
                "is unknown (may the bind account read it?)"
            )
        return ad.is_disabled(raw.decode("ascii"))

    def _expired(self, values: Values) -> bool:
        slot = self.shape.expires_slot
        raw = values[slot] if slot is not None else None
        return ad.has_expired(raw.decode("ascii"), self.expired_before) if raw else False

    def _extras(self, values: Values) -> tuple[tuple[str, str], ...]:
        return tuple(
            (name, raw.decode()) for slot, name in self.shape.extras if (raw := values[slot])
        )

    def _safe(self, values: Values, field_name: str) -> str | None:
        """A field for a rejected row's key, if it can be read at all."""
        try:
            return (
                self._id_of(values) if field_name == "id" else self._own_text(values, field_name)
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
    day = parse_date(GENERALIZED_TIME.sub(r"\1", text.strip()))
    if day is None:
        raise ValueError(f"birthday {text!r} is not a date")
    return day
