"""The organizations' endpoints: the tree's nodes, read, created, updated and deleted."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from syncd.errors import PlatformError
from syncd.platform._answers import _import_result, _model
from syncd.platform._requests import Requests
from syncd.platform.schemas import ImportResult, Node

ORGS = "/v1/admin/organizations"
ORG = ORGS + "/{org_code}"
NODE = ORG + "/{id}"
NO_SUCH_NODE = 208502


class Organizations:
    """The root, every node page by page, one by id or serial_no; created, updated, deleted."""

    def __init__(self, requests: Requests) -> None:
        self._requests = requests

    def root(self) -> Node:
        """The root organization (CORP), with its direct children and employees."""
        return _model(Node, self._requests.call("GET", ORG), f"GET {ORG}")

    def page_orgs(
        self, *, refresh_time: int | None = None, page_size: int = 1000
    ) -> Iterator[Node]:
        """Every node, page by page; with ``refresh_time``, those changed after it."""
        template = ORG + "/page-orgs"
        params: dict[str, Any] = {"domain_id": self._requests.settings.domain_id}
        if refresh_time is not None:
            params["refresh_time"] = refresh_time
        for record in self._requests.pages(template, "records", params, page_size):
            yield _model(Node, record, f"GET {template}")

    def node(self, node_id: int) -> Node:
        return _model(Node, self._requests.call("GET", NODE, path={"id": node_id}), f"GET {NODE}")

    def node_by_serial(self, serial_no: str) -> Node | None:
        """The node holding this third-party serial number, or None when there is none."""
        template = ORG + "/serial/{serial_no}"
        try:
            result = self._requests.call(
                "GET",
                template,
                path={"serial_no": serial_no},
                params={"domain_id": self._requests.settings.domain_id},
            )
        except PlatformError as exc:
            if exc.status == NO_SUCH_NODE:
                return None
            raise
        return _model(Node, result, f"GET {template}") if result else None

    def create_node(self, body: Mapping[str, Any], *, in_path: bool = True) -> Node | None:
        """Create one node; the platform's answer is a node on some versions, empty on others."""
        if in_path:
            template, payload = ORG, dict(body)
        else:
            template, payload = ORGS, {"org_code": self._requests.settings.org_code, **body}
        result = self._requests.call(
            "POST", template, body=payload, repeatable=bool(payload.get("serial_no"))
        )
        if isinstance(result, dict) and result.get("id") is not None:
            return _model(Node, result, f"POST {template}")
        return None

    def update_node(self, node_id: int, body: Mapping[str, Any]) -> None:
        """Rename, re-parent (``new_parentId``) or re-sort one node."""
        self._requests.call("POST", NODE, path={"id": node_id}, body=dict(body))

    def delete_node(self, node_id: int) -> None:
        """Delete an empty node; 208507 (still has employees) and 208502 (gone) propagate."""
        self._requests.call("DELETE", NODE, path={"id": node_id})

    def import_orgs(self, bodies: Sequence[Mapping[str, Any]]) -> ImportResult:
        """Create nodes in bulk, parents first; per-item failures come back, never raise."""
        if not bodies:
            return ImportResult()
        template = ORG + "/import-orgs"
        # Resending is safe only when the platform can refuse the copies by serial_no.
        repeatable = all(b.get("serial_no") for b in bodies)
        result = self._requests.call(
            "POST", template, body=[dict(b) for b in bodies], repeatable=repeatable
        )
        return _import_result(result, f"POST {template}")
