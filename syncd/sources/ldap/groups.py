"""Groups to tags: who is in each group a rule of ``source.ldap.group_tags`` names.

How membership is read (chosen for speed at 100,000 people, README "Groups to tags"):

- Active Directory: one paged search of the people per rule, with the in-chain matching
  rule, ``(memberOf:1.2.840.113556.1.4.1941:=<group DN>)``, asking only for the id
  attribute. The domain controller resolves nested groups itself; what travels is one id
  per member. Reading ``memberOf`` with every person instead would add all of everyone's
  group DNs (dozens per person in most domains) to the people search, where BER decoding
  is already most of the read's time (docs/design.md), and would not see nesting.
- OpenLDAP (groupOfNames ``member``, groupOfUniqueNames ``uniqueMember``): one paged
  listing of the groups under ``groups_base`` (their DNs and names only), then each rule's
  group entry is read, and the member groups among its members in turn (nested groups;
  each group read once, cycles harmless). Members are matched to the people read by DN.
  No overlay (memberof) is needed.

A rule naming a group that is not found, or any failed search, fails the whole read
(SourceError): no tag is then set or taken away, since nothing is planned at all.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from ldap3.utils.conv import escape_filter_chars

from syncd.config import LdapSource
from syncd.config.source import GroupTag
from syncd.sources.ldap.dn import dn_key
from syncd.sources.ldap.shape import Shape, entry_id, value_problem
from syncd.sources.ldap.values import one_value
from syncd.sources.ldap.wire import Search, Several, Value

if TYPE_CHECKING:
    from syncd.sources.ldap.forest import Forest

IN_CHAIN = "1.2.840.113556.1.4.1941"  # LDAP_MATCHING_RULE_IN_CHAIN
AD_GROUPS_FILTER = "(objectClass=group)"
OPENLDAP_GROUPS_FILTER = "(|(objectClass=groupOfNames)(objectClass=groupOfUniqueNames))"
MEMBERS = ("member", "uniqueMember")

Tag = tuple[str, str]


def group_tags(
    forest: Forest, settings: LdapSource, shape: Shape, people: Mapping[str, str]
) -> dict[str, tuple[Tag, ...]]:
    """Person id -> the tags (group, tag) their groups give them, sorted.

    ``people``: the people read, normalized DN (dn_key) -> source id. Raises SourceError
    when a search fails or a rule's group is not found.
    """
    reader = (_Directory if shape.flavor == "active_directory" else _OpenLdap)(
        forest, settings, shape, people
    )
    found: dict[str, set[Tag]] = {}
    for rule in settings.group_tags:
        for person_id in reader.members(rule):
            found.setdefault(person_id, set()).add((rule.tag_group, rule.tag))
    return {person_id: tuple(sorted(tags)) for person_id, tags in found.items()}


def _values(value: Value) -> Iterable[bytes]:
    if value is None:
        return ()
    return value if isinstance(value, Several) else (value,)


class _Groups:
    def __init__(
        self, forest: Forest, settings: LdapSource, shape: Shape, people: Mapping[str, str]
    ) -> None:
        self.forest = forest
        self.settings = settings
        self.shape = shape
        self.people = people
        self.base = settings.groups_base or settings.users_base

    def members(self, rule: GroupTag) -> set[str]:
        raise NotImplementedError

    def missing(self, rule: GroupTag, where: str) -> Exception:
        return self.forest.session.fail(
            "read groups",
            f"group {rule.group!r} (source.ldap.group_tags, tag {rule.tag_group}/{rule.tag}) "
            f"is not found {where}: no tag is set or removed until the rule is fixed",
        )


class _Directory(_Groups):
    """Active Directory: the DC resolves nesting through the in-chain matching rule."""

    def members(self, rule: GroupTag) -> set[str]:
        group = self._group_dn(rule)
        id_slots = self.shape.fields["id"]
        search = Search(
            step=f"search members of group {group}",
            base=self.settings.users_base,
            filter=(
                f"(&{self.shape.users_filter}(memberOf:{IN_CHAIN}:={escape_filter_chars(group)}))"
            ),
            attributes=tuple(self.shape.attributes[slot] for slot in id_slots),
            page_size=self.settings.page_size,
        )
        ids: set[str] = set()
        for _, values in self.forest.entries(search):
            for attribute, value in zip(search.attributes, values, strict=False):
                try:
                    raw = one_value(value, attribute, "the id")
                except ValueError:
                    raw = None  # the people search rejects that person for it
                if raw:
                    ids.add(entry_id(raw, guid=self.shape.guid_ids))
                    break
        return ids

    def _group_dn(self, rule: GroupTag) -> str:
        if "=" in rule.group:
            base, wanted = rule.group, f"{AD_GROUPS_FILTER}"
        else:
            name = escape_filter_chars(rule.group)
            base, wanted = self.base, f"(&{AD_GROUPS_FILTER}(|(cn={name})(sAMAccountName={name})))"
        search = Search(
            step=f"search group {rule.group}",
            base=base,
            filter=wanted,
            attributes=("cn",),
            page_size=self.settings.page_size,
        )
        found = [dn for dn, _ in self.forest.entries(search)]
        if "=" in rule.group:
            found = [dn for dn in found if dn_key(dn) == dn_key(rule.group)]
        if len(found) > 1:
            raise self.forest.session.fail(
                "read groups", f"{len(found)} groups are named {rule.group!r}: give its DN"
            )
        if not found:
            raise self.missing(rule, f"under {base}")
        return found[0]


class _OpenLdap(_Groups):
    """OpenLDAP: group entries' members, nested groups followed by syncd."""

    def __init__(
        self, forest: Forest, settings: LdapSource, shape: Shape, people: Mapping[str, str]
    ) -> None:
        super().__init__(forest, settings, shape, people)
        self.groups: dict[str, str] = {}  # dn_key -> DN, every group under groups_base
        self.names: dict[str, list[str]] = {}  # a name (cn), folded -> the groups' DNs
        listing = Search(
            step=f"search groups under {self.base}",
            base=self.base,
            filter=OPENLDAP_GROUPS_FILTER,
            attributes=("cn",),
            page_size=settings.page_size,
        )
        for dn, values in forest.entries(listing):
            self.groups[dn_key(dn)] = dn
            for raw in _values(values[0]):
                self.names.setdefault(raw.decode("utf-8", "replace").casefold(), []).append(dn)
        # A group's dn_key -> its own members: people's ids, and groups' dn_keys.
        self.read: dict[str, tuple[set[str], set[str]]] = {}

    def members(self, rule: GroupTag) -> set[str]:
        if "=" in rule.group:
            # A group of the listing: one named by DN is looked for under groups_base too.
            dn = self.groups.get(dn_key(rule.group), "")
            if not dn:
                raise self.missing(rule, f"under {self.base}")
        else:
            named = self.names.get(rule.group.casefold(), [])
            if len(named) > 1:
                raise self.forest.session.fail(
                    "read groups", f"{len(named)} groups are named {rule.group!r}: give its DN"
                )
            if not named:
                raise self.missing(rule, f"under {self.base}")
            dn = named[0]
        # Nested groups: every group reachable through members, each read once.
        people: set[str] = set()
        reached, waiting = {dn_key(dn)}, [dn]
        while waiting:
            direct, groups = self._direct(waiting.pop(), rule)
            people |= direct
            for key in groups - reached:
                reached.add(key)
                waiting.append(self.groups[key])
        return people

    def _direct(self, dn: str, rule: GroupTag) -> tuple[set[str], set[str]]:
        """A group's own members: the people read (ids), and the groups (dn_keys)."""
        key = dn_key(dn)
        if key in self.read:
            return self.read[key]
        search = Search(
            step=f"read group {dn}",
            base=dn,
            filter=OPENLDAP_GROUPS_FILTER,
            attributes=MEMBERS,
            page_size=self.settings.page_size,
        )
        entries = [values for found, values in self.forest.entries(search) if dn_key(found) == key]
        if not entries:
            raise self.missing(rule, f"at {dn}")
        people: set[str] = set()
        groups: set[str] = set()
        for value in (v for slot in entries[0][: len(MEMBERS)] for v in _values(slot)):
            try:
                member = value.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise self.forest.session.fail(
                    f"read group {dn}", f"a member is not a DN ({value_problem(exc)})"
                ) from exc
            if "#'" in member:  # uniqueMember's optional unique id: dn#'0101'B
                member = member[: member.rindex("#'")]
            member_key = dn_key(member)
            person = self.people.get(member_key)
            if person is not None:
                people.add(person)
            elif member_key in self.groups:
                groups.add(member_key)
        self.read[key] = (people, groups)
        return people, groups
