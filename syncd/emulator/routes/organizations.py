"""Section F: organization nodes under /v1/admin/organizations."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse

from syncd.emulator.codes import bad_request, no_matching_organization
from syncd.emulator.orgs import create_node, import_orgs, update_node
from syncd.emulator.params import array_body, object_body, ok, paged, query, query_int
from syncd.emulator.records import node_record, node_with_lists
from syncd.emulator.routes.common import own_domain, own_org, token_guard
from syncd.emulator.runtime import Runtime
from syncd.emulator.tree import Node, OrgTree

PREFIX = "/v1/admin/organizations"
DEFAULT_PAGE = 10


def node_by_id(tree: OrgTree, node_id: str) -> Node:
    if not node_id.strip().isdigit():
        raise no_matching_organization()
    return tree.get(int(node_id))


def nested(tree: OrgTree, node: Node) -> dict[str, Any]:
    """The deprecated tree form: each node with all its descendants nested."""
    record = node_record(tree, node)
    record["children"] = [nested(tree, child) for child in tree.children(node)]
    return record


def organization_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix=PREFIX, dependencies=[Depends(token_guard(runtime))])

    def tree() -> OrgTree:
        return runtime.state.tree

    def optional_node(request: Request) -> Node:
        org_id = query(request, "org_id")
        return node_by_id(tree(), org_id) if org_id else tree().root

    @router.get("/{code}/page-orgs")
    async def page_orgs(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        keyword = query(request, "kw").lower()
        since = query_int(request, "refresh_time", -1)
        found = [
            node
            for node in tree().nodes()
            if node.last_modified > since and keyword in node.name.lower()
        ]
        skip, limit = query_int(request, "skip", 0), query_int(request, "limit", DEFAULT_PAGE)
        page = paged(found, skip, runtime.faults.capped(limit))
        return ok({"total_count": len(found), "records": [node_record(tree(), n) for n in page]})

    @router.get("/{code}/view")
    async def view(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        node = optional_node(request)
        record = node_with_lists(tree(), runtime.state.staff, node, view=True)
        for key in ("employee", "org"):
            listed = "employees" if key == "employee" else "children"
            skip = query_int(request, f"{key}_skip", 0)
            record[listed] = paged(record[listed], skip, query_int(request, f"{key}_limit", -1))
        return ok([record])

    @router.get("/{code}/tree")
    async def deprecated_tree(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        return ok(nested(tree(), optional_node(request)))

    @router.get("/{code}/list-all")
    async def list_all(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        top = optional_node(request)
        return ok([node_record(tree(), node) for node in tree().subtree(top)])

    @router.get("/{code}/serial/{serial_no}")
    async def by_serial(request: Request, code: str, serial_no: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        node = tree().find_by_serial(serial_no)
        if node is None:
            raise no_matching_organization()
        return ok(node_record(tree(), node))

    @router.get("/{org_code}/{node_id}")
    async def get_node(org_code: str, node_id: str) -> JSONResponse:
        own_org(runtime, org_code)
        return ok(node_record(tree(), node_by_id(tree(), node_id)))

    @router.get("/{org_code}")
    async def get_organization(org_code: str) -> JSONResponse:
        own_org(runtime, org_code)
        return ok(node_with_lists(tree(), runtime.state.staff, tree().root))

    @router.post("")
    async def create_with_code_in_body(request: Request) -> JSONResponse:
        body = await object_body(request)
        if not isinstance(body.get("org_code"), str) or not body["org_code"]:
            raise bad_request("org_code is required")
        own_org(runtime, body["org_code"])
        node = create_node(tree(), body, runtime.state.clock.stamp())
        return ok(node_record(tree(), node))

    @router.post("/{org_code}/import-orgs")
    async def import_nodes(request: Request, org_code: str) -> JSONResponse:
        own_org(runtime, org_code)
        items = await array_body(request)
        stamp = runtime.state.clock.stamp()
        return ok(import_orgs(tree(), items, stamp, runtime.faults.rejector("import-orgs")))

    @router.post("/{org_code}/{node_id}")
    async def update(request: Request, org_code: str, node_id: str) -> JSONResponse:
        own_org(runtime, org_code)
        # Body first: no await between the lookup and the update (see employees.update).
        body = await object_body(request)
        node = node_by_id(tree(), node_id)
        update_node(tree(), node, body, runtime.state.clock.stamp())
        return ok(node_record(tree(), node))

    @router.post("/{org_code}")
    async def create(request: Request, org_code: str) -> JSONResponse:
        own_org(runtime, org_code)
        body = await object_body(request)
        if body.get("org_code") not in (None, "", org_code):
            raise no_matching_organization()
        node = create_node(tree(), body, runtime.state.clock.stamp())
        return ok(node_record(tree(), node))

    @router.delete("/{org_code}/{node_id}")
    async def delete(org_code: str, node_id: str) -> JSONResponse:
        own_org(runtime, org_code)
        tree().remove(node_by_id(tree(), node_id))
        return ok({})

    return router
