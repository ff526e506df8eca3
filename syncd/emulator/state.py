"""Everything the emulated platform holds, and its saved form (JSON-ready dicts)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from syncd.emulator.clock import Clock
from syncd.emulator.media import MediaStore
from syncd.emulator.options import EmulatorOptions
from syncd.emulator.people import Employee, Position, Staff
from syncd.emulator.records import ListForms, employee_list_record, node_record
from syncd.emulator.tags import TagCatalog
from syncd.emulator.tokens import Application, Token, TokenBook
from syncd.emulator.tree import Node, OrgTree

ROOT_ID = 1000
STATE_FORMAT = "syncd-emulator-state"
STATE_VERSION = 1
NODE_FIELDS = (
    "id",
    "parent_id",
    "type",
    "name",
    "created",
    "last_modified",
    "en_name",
    "sort_order",
    "sn",
    "serial_no",
    "extra",
)


class EmulatorState:
    """The organization tree, the employees, tokens and pushed messages of one emulator."""

    def __init__(self, options: EmulatorOptions, clock: Clock | None = None) -> None:
        self.options = options
        self.clock = clock or Clock()
        self.tokens = TokenBook(options.token_lifetime_seconds)
        self.messages: list[dict[str, Any]] = []
        self.tree = OrgTree.new(
            options.org_code, options.domain_id, options.org_name, ROOT_ID, self.clock.stamp()
        )
        self.staff = Staff(self.tree)
        self.media = MediaStore()
        self.list_forms = ListForms()

    @property
    def application(self) -> Application:
        org_ids = {str(self.tree.root.id), self.options.org_code}
        if self.options.org_id:
            org_ids.add(self.options.org_id)
        return Application(
            self.options.client_id,
            self.options.client_secret,
            self.options.domain_id,
            frozenset(org_ids),
        )

    def reset_data(self) -> None:
        """Back to a bare root (same id); ids keep counting so stale ids never match."""
        next_node, next_employee = self.tree.next_id, self.staff.next_id
        self.clock = Clock()
        self.tree = OrgTree.new(
            self.options.org_code,
            self.options.domain_id,
            self.options.org_name,
            self.tree.root.id,
            self.clock.stamp(),
        )
        self.tree.next_id = next_node
        self.staff = Staff(self.tree, next_id=next_employee)
        self.list_forms = ListForms()
        self.tokens = TokenBook(self.options.token_lifetime_seconds)
        self.messages = []
        self.media = MediaStore(next_id=self.media.next_id)

    def view(self) -> dict[str, Any]:
        """The read-only dump served at /_emulator/state."""
        return {
            "org_code": self.tree.org_code,
            "domain_id": self.tree.domain_id,
            "root_id": self.tree.root.id,
            "now": self.clock.now(),
            "nodes": [
                {**node_record(self.tree, node), "full_name_path": node.name_path}
                for node in self.tree.nodes()
            ],
            "employees": [employee_list_record(self.tree, e) for e in self.staff],
            "messages": self.messages,
            "tokens_issued": self.tokens.issued,
            "media": self.media.view(),
        }

    # --- saved form ----------------------------------------------------------------

    def dump(self) -> dict[str, Any]:
        return {
            "format": STATE_FORMAT,
            "version": STATE_VERSION,
            "org_code": self.tree.org_code,
            "clock": {"offset_ms": self.clock.offset_ms, "last_stamp": self.clock.last_stamp},
            "next_node_id": self.tree.next_id,
            "next_employee_id": self.staff.next_id,
            "nodes": [{key: getattr(n, key) for key in NODE_FIELDS} for n in self.tree.nodes()],
            "employees": [dump_employee(e) for e in self.staff],
            "former_users": [dump_employee(e) for e in self.staff.former()],
            "messages": self.messages,
            "tokens": [asdict(t) for t in self.tokens.tokens()],
            "tokens_issued": self.tokens.issued,
            "media": self.media.dump(),
            "tags": self.staff.tags.dump(),
        }

    @classmethod
    def restore(cls, options: EmulatorOptions, data: dict[str, Any]) -> EmulatorState:
        """Rebuild a saved state; raises ValueError if it is not one, or for another org."""
        if data.get("format") != STATE_FORMAT or data.get("version") != STATE_VERSION:
            raise ValueError("not an emulator state file (format or version differ)")
        if data.get("org_code") != options.org_code:
            raise ValueError(
                f"the state file holds organization {data.get('org_code')!r}, "
                f"not {options.org_code!r}"
            )
        try:
            state = cls(options, Clock(**data["clock"]))
            state.tree = OrgTree(
                options.org_code,
                options.domain_id,
                [Node(**node) for node in data["nodes"]],
                int(data["next_node_id"]),
            )
            catalog = TagCatalog.load(data.get("tags") or ())  # absent from older files
            employees = [load_employee(e, catalog) for e in data["employees"]]
            former = [load_employee(e, catalog) for e in data.get("former_users") or ()]
            state.staff = Staff(
                state.tree, employees, int(data["next_employee_id"]), former, catalog
            )
            state.messages = list(data["messages"])
            state.tokens = TokenBook(
                options.token_lifetime_seconds,
                [Token(**t) for t in data["tokens"]],
                int(data["tokens_issued"]),
            )
            state.media = MediaStore.load(data.get("media") or {})  # absent from older files
        except (KeyError, TypeError) as error:
            raise ValueError(f"damaged emulator state file: {error!r}") from error
        return state


def dump_employee(employee: Employee) -> dict[str, Any]:
    return {
        "id": employee.id,
        "username": employee.username,
        "user_id": employee.user_id,
        "profile": employee.profile,
        "positions": [asdict(p) for p in employee.positions],
        "created": employee.created,
        "last_modified": employee.last_modified,
        "locked": employee.locked,
        "tags": [t.id for t in employee.tags],
    }


def load_employee(data: dict[str, Any], catalog: TagCatalog) -> Employee:
    positions = [Position(**p) for p in data["positions"]]
    tags = tuple(t for i in data.get("tags") or () if (t := catalog.get(int(i))) is not None)
    return Employee(
        int(data["id"]),
        data["username"],
        data["user_id"],
        dict(data["profile"]),
        positions,
        int(data["created"]),
        int(data["last_modified"]),
        bool(data["locked"]),
        tags,
    )
