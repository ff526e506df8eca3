"""Employees: validation, the username/email/mobile indexes, upsert, import and search.

Removing an employee leaves the domain's user (section D): the platform marks the employee
record deleted, and nothing says the user goes. The user is still listed (D3), its
``refresh_time`` moved by the removal, and found by D1/D2; an employee created again
with that username takes the same user back.
"""

from __future__ import annotations

import bisect
import re
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from syncd.emulator.codes import (
    EMPLOYEE_CONFLICT,
    USERNAME_IMMUTABLE,
    ApiError,
    bad_request,
    no_matching_employee,
    no_matching_organization,
)
from syncd.emulator.fields import Body, is_blank, require_object, required_text, text, to_bool
from syncd.emulator.orgs import Rejector
from syncd.emulator.tags import Tag, TagCatalog
from syncd.emulator.tree import Node, OrgTree

FIRST_EMPLOYEE_ID = 2_000_001
# Accepted on create only and never echoed back (credentials) or kept elsewhere.
NOT_IN_PROFILE = frozenset(
    {
        "username",
        "positions",
        "ops",
        "password",
        "source_credentials",
        "source_identifiers",
        "user_id",
        "source_id",
        "tags",  # kept as the employee's Tag list (emulator/tags.py)
        "tag_names",
    }
)
CREATE_ONLY = frozenset(
    {"source_id", "user_id", "password", "source_credentials", "source_identifiers"}
)
EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
MOBILE = re.compile(r"^\+?\d{6,15}$")
MOBILE_SEPARATORS = re.compile(r"[\s\-().]")


@dataclass(slots=True)
class Position:
    org_id: int
    job_title: str = ""
    primary: bool = False
    chief: bool = False


@dataclass(slots=True)
class Employee:
    """One employee; ``profile`` keeps the body fields as given (name, email, sn, ...)."""

    id: int
    username: str
    user_id: str
    profile: dict[str, Any]
    positions: list[Position]
    created: int
    last_modified: int
    locked: bool = False
    tags: tuple[Tag, ...] = ()  # sorted by id

    def field(self, key: str) -> str:
        value = self.profile.get(key)
        return "" if value is None else str(value)


@dataclass(slots=True)
class Draft:
    """A validated body, ready to apply: profile changes (None removes) and positions."""

    profile: dict[str, Any] = field(default_factory=dict)
    positions: list[Position] | None = None
    tags: tuple[Tag, ...] | None = None  # None: the body named no tags, they are kept


def email_key(email: str) -> str:
    return email.strip().lower()


def mobile_key(mobile: str) -> str:
    return MOBILE_SEPARATORS.sub("", mobile)


class Staff:
    """All employees of the organization, indexed by id, username, email and mobile."""

    def __init__(
        self,
        tree: OrgTree,
        employees: Iterable[Employee] = (),
        next_id: int = FIRST_EMPLOYEE_ID,
        former: Iterable[Employee] = (),
        tags: TagCatalog | None = None,
    ) -> None:
        self.tree = tree
        self.tags = tags if tags is not None else TagCatalog()
        self.next_id = next_id
        self._by_id: dict[int, Employee] = {}
        self._by_username: dict[str, int] = {}
        self._by_email: dict[str, int] = {}
        self._by_mobile: dict[str, int] = {}
        # Removed employees' users, by username: the employee as it was when removed.
        self._former: dict[str, Employee] = {e.username: e for e in former}
        # Users by (last_modified, id) and their stamps, made when first asked after a write.
        self._by_time: tuple[list[Employee], list[int]] | None = None
        for employee in sorted(employees, key=lambda e: e.id):
            self._index(employee)
            self.next_id = max(self.next_id, employee.id + 1)

    def __len__(self) -> int:
        return len(self._by_id)

    def __iter__(self) -> Iterator[Employee]:
        return iter(self._by_id.values())

    def find(self, employee_id: int) -> Employee | None:
        return self._by_id.get(employee_id)

    def get(self, employee_id: str | int) -> Employee:
        try:
            employee = self._by_id.get(int(employee_id))
        except ValueError:
            employee = None
        if employee is None:
            raise no_matching_employee()
        return employee

    def find_by_username(self, username: str) -> Employee | None:
        employee_id = self._by_username.get(username)
        return None if employee_id is None else self._by_id[employee_id]

    def users(self) -> Iterator[Employee]:
        """The domain's users (section D): every employee's, and removed employees' too."""
        yield from self
        yield from self._former.values()

    def former(self) -> list[Employee]:
        """Removed employees whose users remain."""
        return list(self._former.values())

    def user(self, username: str) -> Employee | None:
        """The user holding this username: an employee's, or a removed employee's."""
        return self.find_by_username(username) or self._former.get(username)

    # --- changes -------------------------------------------------------------------

    def create(self, body: Body, stamp: int) -> Employee:
        username = required_text(body, "username")
        if username in self._by_username:
            raise ApiError(EMPLOYEE_CONFLICT, "username already exists")
        draft = self.validate(body, None)
        former = self._former.pop(username, None)  # the domain's user comes back
        user_id = text(body, "user_id") or (former.user_id if former else uuid.uuid4().hex)
        employee = Employee(self.next_id, username, user_id, {}, [], stamp, stamp)
        self.next_id += 1
        self._apply(employee, draft, stamp)
        self._by_id[employee.id] = employee
        self._by_username[username] = employee.id
        return employee

    def update(self, employee: Employee, body: Body, stamp: int) -> Employee:
        """Single-employee update: the username cannot change; create-only fields are ignored."""
        if "username" in body and text(body, "username") not in ("", employee.username):
            raise ApiError(USERNAME_IMMUTABLE, "username cannot be changed")
        trimmed = {k: v for k, v in body.items() if k not in CREATE_ONLY}
        self._apply(employee, self.validate(trimmed, employee), stamp)
        return employee

    def upsert(self, body: Body, stamp: int) -> Employee:
        existing = self.find_by_username(required_text(body, "username"))
        if existing is None:
            return self.create(body, stamp)
        trimmed = {k: v for k, v in body.items() if k not in CREATE_ONLY}
        self._apply(existing, self.validate(trimmed, existing), stamp)
        return existing

    def remove(self, employee: Employee, stamp: int) -> None:
        """The employee goes; the user stays, refreshed (see the module docstring)."""
        self.tree.place(employee.id, ())
        del self._by_id[employee.id]
        del self._by_username[employee.username]
        self._unindex_contacts(employee)
        self._former[employee.username] = employee
        self._touch(employee, stamp)

    def set_locked(self, employee: Employee, locked: bool, stamp: int) -> None:
        employee.locked = locked
        self._touch(employee, stamp)

    def import_employees(self, items: list[Any], stamp: int, reject: Rejector) -> dict[str, Any]:
        """Upsert by username in order; ``ops`` REMOVE deletes; failures stay per item."""
        successes: dict[str, int] = {}
        failures: dict[str, str] = {}
        for index, item in enumerate(items):
            username = item.get("username") if isinstance(item, dict) else None
            key = (
                username.strip() if isinstance(username, str) and username.strip() else f"#{index}"
            )
            try:
                successes[key] = self._import_one(require_object(item), stamp, reject)
                failures.pop(key, None)
            except ApiError as error:
                successes.pop(key, None)
                failures[key] = error.message
        return {"successes": successes, "failures": failures}

    def _import_one(self, body: Body, stamp: int, reject: Rejector) -> int:
        username = required_text(body, "username")
        rejection = reject(body)
        if rejection is not None:
            raise bad_request(rejection)
        ops = text(body, "ops").upper()
        if ops == "REMOVE":
            employee = self.find_by_username(username)
            if employee is None:
                raise bad_request("employee not found")
            self.remove(employee, stamp)
            return employee.id
        if ops:
            raise bad_request(f"unknown ops: {ops}")
        return self.upsert(body, stamp).id

    # --- validation ----------------------------------------------------------------

    def validate(self, body: Body, current: Employee | None) -> Draft:
        """Check a create/update body against the rules and the other employees."""
        draft = Draft()
        if current is None or "name" in body:
            draft.profile["name"] = required_text(body, "name")
        if "email" in body:
            draft.profile["email"] = self._checked_email(text(body, "email"), current)
        if "mobile" in body:
            draft.profile["mobile"] = self._checked_mobile(text(body, "mobile"), current)
        if current is None or "positions" in body:
            draft.positions = self._positions(body.get("positions"))
        if "properties" in body:
            draft.profile["properties"] = self._properties(body["properties"], current)
        ids = self.tags.ids_from_body(body)
        if ids is not None:
            draft.tags = tuple(t for i in ids if (t := self.tags.get(i)) is not None)
        for key, value in body.items():
            if key not in NOT_IN_PROFILE and key not in draft.profile:
                draft.profile[key] = value
        return draft

    def _checked_email(self, email: str, current: Employee | None) -> str:
        if not email:
            return ""
        if not EMAIL.match(email):
            raise bad_request(f"invalid email: {email}")
        owner = self._by_email.get(email_key(email))
        if owner is not None and (current is None or owner != current.id):
            raise ApiError(EMPLOYEE_CONFLICT, "email already used by another employee")
        return email

    def _checked_mobile(self, mobile: str, current: Employee | None) -> str:
        if not mobile:
            return ""
        if not MOBILE.match(mobile_key(mobile)):
            raise bad_request(f"invalid mobile: {mobile}")
        owner = self._by_mobile.get(mobile_key(mobile))
        if owner is not None and (current is None or owner != current.id):
            raise ApiError(EMPLOYEE_CONFLICT, "mobile already used by another employee")
        return mobile

    @staticmethod
    def _properties(value: Any, current: Employee | None) -> list[dict[str, Any]]:
        """Custom fields (section G's Property): each data_schema_id given replaces that
        property's values (none: it is removed); the others are kept."""
        if not isinstance(value, list):
            raise bad_request("properties must be a list")
        kept = (
            {p["data_schema_id"]: p for p in (current.profile.get("properties") or [])}
            if current
            else {}
        )
        for item in value:
            schema = item.get("data_schema_id") if isinstance(item, dict) else None
            values = item.get("values") if isinstance(item, dict) else None
            if not isinstance(schema, str) or not schema or not isinstance(values, list):
                raise bad_request("a property needs data_schema_id and a list of values")
            if not all(isinstance(v, str) for v in values):
                raise bad_request(f"property {schema}: values must be text")
            if values:
                kept[schema] = {"data_schema_id": schema, "values": values}
            else:
                kept.pop(schema, None)
        return list(kept.values())

    def _positions(self, value: Any) -> list[Position]:
        if not isinstance(value, list) or not value:
            raise bad_request("positions is required")
        return [self._position(require_object(item)) for item in value]

    def _position(self, body: Body) -> Position:
        node: Node | None
        if not is_blank(body.get("org_id")):
            reference = text(body, "org_id")
            node = self.tree.find(int(reference)) if reference.isdigit() else None
        elif not is_blank(body.get("org_path")):
            reference = text(body, "org_path")
            node = self.tree.resolve_name_path(reference)
        else:
            raise bad_request("org_id or org_path is required")
        if node is None:
            raise no_matching_organization(f"organization not found: {reference}")
        return Position(
            node.id,
            text(body, "job_title"),
            to_bool(body.get("primary"), "primary"),
            to_bool(body.get("chief"), "chief"),
        )

    # --- indexes -------------------------------------------------------------------

    def _apply(self, employee: Employee, draft: Draft, stamp: int) -> None:
        self._unindex_contacts(employee)
        for key, value in draft.profile.items():
            if value is None:
                employee.profile.pop(key, None)
            else:
                employee.profile[key] = value
        if draft.positions is not None:
            employee.positions = draft.positions
        if draft.tags is not None:
            employee.tags = draft.tags
        self._index_contacts(employee)
        self.tree.place(employee.id, (p.org_id for p in employee.positions))
        self._touch(employee, stamp)

    def _touch(self, employee: Employee, stamp: int) -> None:
        """Every write moves last_modified, and so refresh_time, even one that changed nothing."""
        employee.last_modified = stamp
        self._by_time = None

    def changed_since(self, since: int) -> list[Employee]:
        """Users modified after ``since`` (ms), oldest first: the users list (D3)."""
        if self._by_time is None:
            ordered = sorted(self.users(), key=lambda e: (e.last_modified, e.id))
            self._by_time = (ordered, [e.last_modified for e in ordered])
        ordered, stamps = self._by_time
        return ordered[bisect.bisect_right(stamps, since) :]

    def _index(self, employee: Employee) -> None:
        self._by_time = None
        self._by_id[employee.id] = employee
        self._by_username[employee.username] = employee.id
        self._index_contacts(employee)
        self.tree.place(employee.id, (p.org_id for p in employee.positions))

    def _index_contacts(self, employee: Employee) -> None:
        if employee.field("email"):
            self._by_email[email_key(employee.field("email"))] = employee.id
        if employee.field("mobile"):
            self._by_mobile[mobile_key(employee.field("mobile"))] = employee.id

    def _unindex_contacts(self, employee: Employee) -> None:
        for index, key in (
            (self._by_email, email_key(employee.field("email"))),
            (self._by_mobile, mobile_key(employee.field("mobile"))),
        ):
            if key and index.get(key) == employee.id:
                del index[key]

    # --- search --------------------------------------------------------------------

    def search(
        self, query: str, by: str, matching: bool, within: set[int] | None
    ) -> list[Employee]:
        """The list endpoint: ``matching`` = exact comma-separated batch by ``by`` (id or
        username), otherwise a case-insensitive substring of name or username; ``within``
        limits to those employee ids."""
        if not query and within is not None:  # a node's people: only theirs are gone over
            return [self._by_id[i] for i in sorted(within) if i in self._by_id]
        if matching and query:
            found = self._batch(query, by)
        elif query:
            found = fuzzy(query, self)
        else:
            found = list(self)
        return found if within is None else [e for e in found if e.id in within]

    def _batch(self, query: str, by: str) -> list[Employee]:
        found: dict[int, Employee] = {}
        for value in (v.strip() for v in query.split(",")):
            if by == "username":
                employee = self.find_by_username(value)
            else:
                employee = self._by_id.get(int(value)) if value.isdigit() else None
            if employee is not None:
                found[employee.id] = employee
        return list(found.values())


def fuzzy(query: str, among: Iterable[Employee]) -> list[Employee]:
    """Those whose name or username holds ``query``, in any letter case."""
    needle = query.lower()
    return [e for e in among if needle in e.field("name").lower() or needle in e.username.lower()]
