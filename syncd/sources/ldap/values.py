"""What an attribute's several values mean, by the field that reads it: never "the first".

An LDAP attribute's values are a set: the server returns them in any order, and changing
one value may reorder the others (a 389 Directory Server entry with ``ou: People`` and
``ou: Accounting`` comes back as People, Payroll once Accounting is replaced). So where
a field takes one value, several are read by a rule that gives the same answer in any
order, or the person is rejected naming the attribute and its values:

- ``username`` and ``name``: the value the entry's RDN names (``uid=alice`` picks
  ``alice`` among the ``uid`` values); when the RDN is another attribute, rejected.
- ``email``: the one value in the first of ``email_domains`` that holds any; rejected
  when there are no such domains, none of the values is in one, or two are in that one.
- the department (``departments_from = "attribute"``): values matching
  ``department_values_ignored`` do not count; one left is the department, none is the
  root organization; several are rejected, or with ``several_departments = "positions"``
  each is a position, the primary the first by its path in alphabetical order.
- the photo: the photo is rejected (the person is synced without it).
- the change mark: the highest.
- anything else (the id, mobile, tel, work number, job title, the optional fields, extra
  attributes, attributes that only mapping rules read, an attribute two fields with
  different rules read): rejected.

Values that are empty, or the same once trimmed, count once.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple, cast

from syncd.sources._text import split_path
from syncd.sources.ldap.dn import rdn_attribute, rdn_value, split_dn
from syncd.sources.ldap.wire import Several, Value, WithSeveral

Plain = list[bytes | None]  # one value (or none) per slot: what the fields are read from
_SHOWN = 5  # values listed in a reason at most
_SHOWN_LENGTH = 60  # characters of each
_NO_ORDER = "an attribute's values come in no order, so none of them is taken"


class Rule(Enum):
    """How a slot read by one field takes several values (the module's docstring)."""

    REJECT = "reject"
    RDN = "rdn"
    EMAIL = "email"
    DEPARTMENT = "department"
    PHOTO = "photo"
    HIGHEST = "highest"


FIELD_RULES: Mapping[str, Rule] = {"username": Rule.RDN, "name": Rule.RDN, "email": Rule.EMAIL}


@dataclass(frozen=True)
class SlotRule:
    """The rule a slot is read by, and what reads it (for reasons): ``job_title``."""

    rule: Rule
    readers: str


def combined(rules: Iterable[tuple[Rule, str]]) -> SlotRule:
    """One slot's rule from every reader's: theirs when they agree, else rejection."""
    found = list(rules)
    kinds = {rule for rule, _ in found}
    readers = ", ".join(dict.fromkeys(reader for _, reader in found))
    return SlotRule(kinds.pop() if len(kinds) == 1 else Rule.REJECT, readers)


@dataclass(frozen=True)
class Choices:
    """The settings several values are chosen by (``source.ldap``)."""

    email_domains: tuple[str, ...] = ()
    department_values_ignored: tuple[str, ...] = ()
    several_departments: str = "reject"
    path_separator: str = "/"

    def ignored(self, value: str) -> bool:
        """Whether a department value names no department (department_values_ignored)."""
        text = value.strip().casefold()
        return any(
            fnmatch.fnmatchcase(text, p.strip().casefold()) for p in self.department_values_ignored
        )


class Picked(NamedTuple):
    """One entry's values once its several values were read by their rules."""

    values: Plain
    departments: tuple[str, ...] | None = None  # the department values that count, if several
    photos: Several | None = None  # several photos: the photo is rejected


class SeveralValues(ValueError):
    """Several values where a field takes one: the reason rejects the person (or the OU)."""


def distinct(several: Several) -> list[bytes]:
    """The values that count: not empty once trimmed, each once, in no meaningful order."""
    return [v for v in dict.fromkeys(map(bytes.strip, several)) if v]


def shown(values: Sequence[bytes]) -> str:
    """Values for a reason, sorted (a reason must not depend on the server's order)."""
    texts = sorted(v.decode("utf-8", "replace") for v in values)
    parts = [repr(t if len(t) <= _SHOWN_LENGTH else t[:_SHOWN_LENGTH] + "…") for t in texts]
    more = f" and {len(parts) - _SHOWN} more" if len(parts) > _SHOWN else ""
    return ", ".join(parts[:_SHOWN]) + more


def several_reason(attribute: str, values: Sequence[bytes], readers: str, why: str) -> str:
    return f"{attribute} has {len(values)} values ({shown(values)}); {readers} takes one: {why}"


class Picker:
    """Reads an entry's several values by each slot's rule, for one read.

    In a 389 Directory Server every person may carry ``ou: People`` beside a department:
    what a set of department values means is worked out once per set and remembered.
    """

    def __init__(
        self, rules: Mapping[int, SlotRule], attributes: Sequence[str], choices: Choices
    ) -> None:
        self.rules = rules  # slot -> its rule; a slot no field reads is left as None
        self.attributes = attributes  # slot -> the attribute's name
        self.choices = choices
        self._departments: dict[frozenset[bytes], tuple[str, ...] | SeveralValues] = {}
        self._ignored: dict[str, bool] = {}

    def pick(self, dn: str, values: WithSeveral) -> Picked:
        """The entry's values, one per slot; raises SeveralValues when a rule rejects."""
        plain = cast(Plain, list(values))  # each Several is replaced below
        departments: tuple[str, ...] | None = None
        photos: Several | None = None
        for slot in values.slots:
            several = values[slot]
            assert isinstance(several, Several)
            found = distinct(several)
            slot_rule = self.rules.get(slot)
            if len(found) <= 1 or slot_rule is None:
                plain[slot] = found[0] if found and slot_rule is not None else None
                continue
            attribute = self.attributes[slot]
            rule = slot_rule.rule
            plain[slot] = None
            if rule is Rule.HIGHEST:  # a generalized time, or a number (uSNChanged)
                numbers = all(v.isdigit() for v in found)
                plain[slot] = max(found, key=lambda v: int(v) if numbers else v)
            elif rule is Rule.PHOTO:
                photos = several
            elif rule is Rule.DEPARTMENT:
                departments = self.departments(attribute, found)
            else:
                plain[slot] = one_of(dn, attribute, found, slot_rule, self.choices)
        return Picked(plain, departments, photos)

    def departments(self, attribute: str, found: Sequence[bytes]) -> tuple[str, ...]:
        """``department_values``, remembered by the set of values."""
        key = frozenset(found)
        known = self._departments.get(key)
        if known is None:
            try:
                known = department_values(attribute, found, self.choices)
            except SeveralValues as exc:
                known = exc
            self._departments[key] = known
        if isinstance(known, SeveralValues):
            raise SeveralValues(str(known))
        return known

    def ignored(self, value: str) -> bool:
        """``Choices.ignored``, remembered by the value."""
        known = self._ignored.get(value)
        if known is None:
            known = self._ignored[value] = self.choices.ignored(value)
        return known


def one_of(
    dn: str, attribute: str, found: Sequence[bytes], slot_rule: SlotRule, choices: Choices
) -> bytes:
    """The one value a rule picks among several distinct ones, or SeveralValues."""
    rule, readers = slot_rule.rule, slot_rule.readers
    if rule is Rule.RDN:
        return _named_by_rdn(dn, attribute, found, readers)
    if rule is Rule.EMAIL:
        return _in_domains(attribute, found, readers, choices.email_domains)
    raise SeveralValues(several_reason(attribute, found, readers, _NO_ORDER))


def _named_by_rdn(dn: str, attribute: str, found: Sequence[bytes], readers: str) -> bytes:
    named = rdn_values(dn).get(attribute.lower())
    if named is None:
        why = f"the entry's RDN is not {attribute}, so none of them names it"
        raise SeveralValues(several_reason(attribute, found, readers, why))
    exact = [v for v in found if v.decode("utf-8", "replace") == named]
    if len(exact) == 1:
        return exact[0]
    folded = named.casefold()
    same = [v for v in found if v.decode("utf-8", "replace").casefold() == folded]
    if len(same) == 1:
        return same[0]
    why = f"the entry's RDN names {named!r}, which is not one of them"
    raise SeveralValues(several_reason(attribute, found, readers, why))


def rdn_values(dn: str) -> dict[str, str]:
    """The first RDN's values by lower-case attribute: ``cn=A+uid=a,ou=x`` -> cn: A, uid: a."""
    rdn = split_dn(dn)[0]
    parts, start, i = [], 0, 0
    while i < len(rdn):
        if rdn[i] == "\\":
            i += 2
            continue
        if rdn[i] == "+":
            parts.append(rdn[start:i])
            start = i + 1
        i += 1
    parts.append(rdn[start:])
    return {rdn_attribute(part).lower(): rdn_value(part).strip() for part in parts}


def _in_domains(
    attribute: str, found: Sequence[bytes], readers: str, domains: Sequence[str]
) -> bytes:
    if not domains:
        why = "list the company's mail domains in source.ldap.email_domains to choose by domain"
        raise SeveralValues(several_reason(attribute, found, readers, why))
    for domain in domains:
        wanted = domain.strip().lstrip("@").casefold()
        inside = [v for v in found if _domain(v) == wanted]
        if len(inside) == 1:
            return inside[0]
        if inside:
            why = f"{len(inside)} of them are in {domain!r}, the first of email_domains with any"
            raise SeveralValues(several_reason(attribute, found, readers, why))
    why = f"none of them is in source.ldap.email_domains ({', '.join(domains)})"
    raise SeveralValues(several_reason(attribute, found, readers, why))


def _domain(mail: bytes) -> str | None:
    local, at, domain = mail.decode("utf-8", "replace").rpartition("@")
    return domain.strip().casefold() if at and local else None


def department_values(attribute: str, found: Sequence[bytes], choices: Choices) -> tuple[str, ...]:
    """The department values (paths) that count, each once, sorted; SeveralValues when
    several count and each is not to be a position."""
    paths: dict[tuple[str, ...], str] = {}
    for raw in found:
        text = raw.decode()  # not UTF-8: the person is rejected, as for any field
        if choices.department_values_ignored and choices.ignored(text):
            continue
        names = split_path(text, choices.path_separator)
        if names:  # spellings of one path ("A / B", "A/B"): one, whatever the order
            paths[names] = min(paths.get(names, text), text)
    kept = tuple(paths[names] for names in sorted(paths))
    if len(kept) > 1 and choices.several_departments != "positions":
        kept_bytes = [v.encode() for v in kept]
        why = (
            "leave out values that name no department with source.ldap.department_values_ignored,"
            ' or set several_departments = "positions"'
        )
        raise SeveralValues(several_reason(attribute, kept_bytes, "the department", why))
    return kept


def one_value(value: Value, attribute: str, readers: str) -> bytes | None:
    """A slot that takes one value, where several reject: the value, or SeveralValues."""
    if not isinstance(value, Several):
        return value
    found = distinct(value)
    if len(found) <= 1:
        return found[0] if found else None
    raise SeveralValues(several_reason(attribute, found, readers, _NO_ORDER))
