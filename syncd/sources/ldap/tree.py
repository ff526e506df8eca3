"""Departments from the organizational units under a base; people placed by their DN."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from syncd.config import LdapSource
from syncd.model import Department, Kind, RejectedRow
from syncd.sources import active_directory as ad
from syncd.sources.ldap.dn import dn_key, parent_dn, rdn_attribute, rdn_value
from syncd.sources.ldap.mapping import _integer
from syncd.sources.ldap.shape import DEPARTMENTS_FILTER, Shape, entry_id, value_problem
from syncd.sources.ldap.values import one_value
from syncd.sources.ldap.wire import Search, Values

if TYPE_CHECKING:
    from syncd.sources.ldap.forest import Forest

# The id an OU is placed under when its own id cannot be read: no department has it.
_UNREADABLE_ID = "rejected:"


class OuTree:
    """Departments from the organizational units under a base; people placed by their DN."""

    def __init__(self, base: str) -> None:
        self.base_key = dn_key(base)
        self.departments: list[tuple[str, Department]] = []
        self._by_key: dict[str, str] = {}  # normalized OU DN -> department id
        self._by_parent: dict[str, str | None] = {}  # a person's parent DN as read -> department
        self.heads: dict[str, str] = {}  # department id -> its head's DN, as the OU names it
        self.problems: list[str] = []  # heads that could not be read

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


def ou_tree(
    forest: Forest, settings: LdapSource, shape: Shape, rejected: list[RejectedRow]
) -> OuTree:
    base = settings.departments_base or settings.users_base
    tree = OuTree(base)
    search = Search(
        step=f"search departments under {base}",
        base=base,
        filter=ad.DEPARTMENTS_FILTER if shape.flavor == "active_directory" else DEPARTMENTS_FILTER,
        attributes=shape.department_attributes,
        page_size=settings.page_size,
    )
    read: list[tuple[str, str, Department]] = []
    for dn, values in forest.entries(search):
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
            rejected.append(RejectedRow(dn, value_problem(exc), Kind.DEPARTMENT, department_id))
            tree.add(key, department_id or f"{_UNREADABLE_ID}{dn}")
            continue
        read.append((dn, key, department))
        tree.add(key, department.id)
        if "head" in shape.department_fields:
            _read_head(tree, dn, department.id, values, shape)
    for dn, key, department in read:
        parent = tree.nearest(parent_dn(key))
        tree.departments.append((dn, replace(department, parent_id=parent)))
    return tree


def _read_head(tree: OuTree, dn: str, department_id: str, values: Values, shape: Shape) -> None:
    """The OU's head (a DN); several, or one that is not text, set none and are told."""
    try:
        raw = _one(values, shape, "head")
        if raw:
            tree.heads[department_id] = raw.decode("utf-8")
    except ValueError as exc:  # UnicodeDecodeError included
        tree.problems.append(f"{dn}: the head cannot be read ({value_problem(exc)}): none is set")


def _department_id(values: Values, shape: Shape) -> str:
    raw = _one(values, shape, "department_id")
    if not raw:
        return ""
    return entry_id(raw, guid=shape.department_guid_ids)


def _one(values: Values, shape: Shape, field_name: str) -> bytes | None:
    """An OU field's value; several reject the OU (an OU's fields take one value each)."""
    slot = shape.department_fields.get(field_name)
    if slot is None:
        return None
    return one_value(
        values[slot], shape.department_attributes[slot], f"the department's {field_name}"
    )


def _readable_id(values: Values, shape: Shape) -> str | None:
    """A rejected OU's id, when that at least can be read."""
    try:
        return _department_id(values, shape) or None
    except ValueError:  # UnicodeDecodeError included
        return None


def _department(dn: str, values: Values, shape: Shape) -> Department:
    department_id = _department_id(values, shape)
    if shape.department_name_attribute.lower() == rdn_attribute(dn).lower():
        # ``ou`` may hold several values: the one in the DN is the one naming the entry.
        name = rdn_value(dn)
    else:
        name = raw.decode("utf-8") if (raw := _one(values, shape, "name")) else ""

    def text(field_name: str) -> str | None:
        raw = _one(values, shape, field_name)
        return raw.decode("utf-8") if raw else None

    return Department(
        id=department_id,
        name=name,
        sort_order=_integer(text("department_sort_order"), "sort order"),
        sn=text("department_sn"),
        en_name=text("department_en_name"),
    )
