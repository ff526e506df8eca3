"""What a read asks for: the attributes of people and OUs, each in its slot, and how
several values in each slot are read (``values.py``).

Model fields map to attributes by the flavor's preset (OpenLDAP or Active Directory),
which ``attributes`` in the settings can replace field by field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from syncd.config import LdapSource
from syncd.errors import ConfigError
from syncd.mapping import Rules
from syncd.sources import active_directory as ad
from syncd.sources.ldap.values import FIELD_RULES, Choices, Rule, SlotRule, combined

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
    "gender", "birthday", "job_title", "sort_order", "senior", "start_date", "end_date",
)  # fmt: skip
RARE_FIELDS = ("gender", "birthday", "sort_order", "senior")  # mapped by settings only
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
    photo_slot: int | None = None  # source.photos on: the photo attribute
    # Slot -> how several values are read there (values.py); a slot missing is read by nobody.
    value_rules: Mapping[int, SlotRule] = field(default_factory=dict)
    choices: Choices = field(default_factory=Choices)

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
        _check(settings)
        for name, attribute in settings.attributes.items():
            if name in EMPLOYEE_FIELDS:
                preset[name] = (attribute,)
        slots = _SlotTable()
        fields = {
            name: tuple(slots.add(a) for a in attributes) for name, attributes in preset.items()
        }
        change, account_control, department, extras, expires, photo = _marks(
            slots, settings, photo_attribute
        )
        value_rules = _value_rules(
            fields,
            [
                (change, Rule.HIGHEST, "the change mark"),
                (department, Rule.DEPARTMENT, "the department"),
                (account_control, Rule.REJECT, "departed"),
                (expires, Rule.REJECT, "departed"),
                (photo, Rule.PHOTO, "the photo"),
                *((slot, Rule.REJECT, f"extra attribute {name}") for slot, name in extras),
            ],
            [(slots.add(a), key) for a, key in (rules.attributes() if rules else {}).items()],
        )
        empty = len(slots.names())
        ruled = tuple(rules.fields) if rules else ()
        own_fields = dict(fields)
        for i, name in enumerate(ruled):
            fields[name] = (empty + 1 + i,)

        id_attribute = preset["id"][0]
        department_id = settings.attributes.get("department_id", id_attribute)
        department_slots, department_fields = _department_fields(settings, department_id)
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
            value_rules=value_rules,
            choices=Choices(
                tuple(settings.email_domains),
                tuple(settings.department_values_ignored),
                settings.several_departments,
                settings.department_path_separator,
            ),
        )


def _value_rules(
    fields: Mapping[str, tuple[int, ...]],
    others: list[tuple[int | None, Rule, str]],
    ruled: list[tuple[int, str]],
) -> dict[int, SlotRule]:
    """Each slot's rule for several values, from what reads it (values.py).

    ``others``: (slot, rule, reader) beside the fields; ``ruled``: (slot, setting) of the
    attributes mapping rules read, which take the rule of a field reading the same
    attribute, and otherwise reject.
    """
    readers: dict[int, list[tuple[Rule, str]]] = {}
    for name, found in fields.items():
        for slot in found:
            readers.setdefault(slot, []).append((FIELD_RULES.get(name, Rule.REJECT), name))
    for where, rule, reader in others:
        if where is not None:
            readers.setdefault(where, []).append((rule, reader))
    for slot, key in ruled:
        readers.setdefault(slot, [(Rule.REJECT, key)])
    return {slot: combined(found) for slot, found in readers.items()}


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


def _check(settings: LdapSource) -> None:
    """ConfigError for attributes of no known field, or departments from an attribute
    that is not named."""
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


def _department_fields(
    settings: LdapSource, department_id: str
) -> tuple[_SlotTable, dict[str, int]]:
    """The department entries' attributes, in slots, and each field's slot."""
    slots = _SlotTable()
    fields = {
        "department_id": slots.add(department_id),
        "name": slots.add(settings.department_name_attribute),
    }
    for name in DEPARTMENT_FIELDS[1:]:
        if name in settings.attributes:
            fields[name] = slots.add(settings.attributes[name])
    if settings.department_head_attribute:  # department heads (sources/heads.py)
        fields["head"] = slots.add(settings.department_head_attribute)
    return slots, fields


def _marks(
    slots: _SlotTable, settings: LdapSource, photo_attribute: str | None
) -> tuple[int, int | None, int | None, tuple[tuple[int, str], ...], int | None, int | None]:
    """The slots of what is read besides the fields, in this order: the change mark, AD's
    account control, the department attribute, the extra attributes (with their names),
    AD's account expiry and the photo (None: not read)."""
    is_ad = settings.flavor == "active_directory"
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
    return change, account_control, department, extras, expires, photo
