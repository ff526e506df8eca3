"""The platform's records as syncd reads them: organization nodes, employees, positions.

Field names and types follow the record tables of ``platform-api.md``. Unknown fields
are ignored, so a platform that answers with more than the spec shows still parses;
every field but the id is optional, because the spec shows samples, not guarantees.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class PositionRecord(_Record):
    """One of an employee's positions (the spec's "the service" record)."""

    id: int | str | None = None  # the spec gives no type; some platforms answer "<emp>-<n>"
    domain_id: str | None = None
    code: str | None = None  # the organization code
    employee_id: int | None = None
    org_id: int | None = None
    path: str | None = None  # id path, /<rootId>/<childId>/
    type: str | None = None
    job_title: str | None = None
    level: int | None = None
    primary: bool = False
    chief: bool = False
    display_nodes: list[dict[str, Any]] = []
    full_name_path: str | None = None
    org_name: str | None = None


class EmployeeRecord(_Record):
    """An employee in the list form (``GET .../employees``)."""

    id: int
    type: str | None = None
    domain_id: str | None = None
    org_code: str | None = None
    display_name: str | None = None
    name: str | None = None
    pinyin: str | None = None
    initial: str | None = None
    gender: str | None = None
    email: str | None = None
    mobile: str | None = None
    status: str | None = None
    sn: str | None = None  # work number
    user_id: str | None = None
    username: str | None = None
    nickname: str | None = None
    avatar: str | None = None
    sort_order: int | None = None
    senior: bool = False
    locked: bool = False  # the departure flag
    # Not in the list-form table, but carried by the create form and by the platform's
    # samples; syncd adopts people by it when present.
    extension_id: str | None = None
    disabled: bool = False  # V4 departure flag
    employee_rank: int | None = None
    tags: list[int] = []
    tag_names: list[str] = []
    positions: list[PositionRecord] = []
    data_schemas: list[dict[str, Any]] = []
    properties: Any = None
    created: int | None = None
    last_modified: int | None = None
    root_org_info: dict[str, Any] | None = None
    platforms: list[Any] = []


class Node(_Record):
    """An organization node: the root (CORP) or a department (DEPT)."""

    id: int
    domain_id: str | None = None
    org_code: str | None = None
    parent_org_id: int | None = None  # absent on the root
    type: str | None = None
    path: str | None = None  # id path, /<rootId>/<childId>/
    name: str | None = None
    en_name: str | None = None
    tw_name: str | None = None
    logo: str | None = None
    sort_order: int | None = None
    level: int | None = None
    uuid: str | None = None
    sn: str | None = None
    serial_no: str | None = None
    owner_id: str | None = None
    owner: str | None = None
    owner_name: str | None = None
    created: int | None = None
    last_modified: int | None = None
    disabled: bool = False
    employee_count: int | None = None
    all_employee_count: int | None = None
    employees: list[EmployeeRecord] = []
    children: list[Node] = []
    parent_org_name: str | None = None
    directly_corp: dict[str, Any] | None = None
    full_name_path: str | None = None


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What an import call did, per item: key (name path or username) to id or error text."""

    successes: dict[str, int] = field(default_factory=dict)
    failures: dict[str, str] = field(default_factory=dict)
