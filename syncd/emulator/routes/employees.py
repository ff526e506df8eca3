"""Section G: employees under /v1/admin/organizations/{code}."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse

from syncd.emulator.codes import bad_request, no_matching_organization
from syncd.emulator.params import array_body, object_body, ok, query, query_bool
from syncd.emulator.records import employee_detail_record
from syncd.emulator.routes.common import own_domain, own_org, token_guard
from syncd.emulator.runtime import Runtime
from syncd.emulator.tree import OrgTree

PREFIX = "/v1/admin/organizations/{code}"


def search_scope(tree: OrgTree, request: Request) -> set[int] | None:
    """The employee ids ``org_id`` (with ``recursion``) and ``path`` limit a search to."""
    scope: set[int] | None = None
    org_id = query(request, "org_id")
    if org_id:
        node = tree.find(int(org_id)) if org_id.isdigit() else None
        if node is None:
            raise no_matching_organization()
        recursive = query_bool(request, "recursion", False)
        scope = set(tree.members_within(node) if recursive else tree.members(node))
    path = query(request, "path")
    if path:
        last = path.strip("/").rsplit("/", 1)[-1]
        node = tree.find(int(last)) if last.isdigit() else None
        if node is None or node.path != "/" + path.strip("/") + "/":
            raise no_matching_organization()
        under = tree.members_within(node)
        scope = under if scope is None else scope & under
    return scope


def employee_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix=PREFIX, dependencies=[Depends(token_guard(runtime))])

    def stamp() -> int:
        return runtime.state.clock.stamp()

    @router.get("/employees")
    async def search(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        own_domain(runtime, request)
        state = runtime.state
        by = query(request, "type") or "id"
        if by not in ("id", "username"):
            raise bad_request("type must be id or username")
        found = state.staff.search(
            query(request, "query"),
            by,
            query_bool(request, "matching", False),
            search_scope(state.tree, request),
        )
        return ok(state.list_forms.of(state.tree, found))

    @router.post("/employees")
    async def create(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        body = await object_body(request)
        employee = runtime.state.staff.create(body, stamp())
        return ok(employee_detail_record(runtime.state.tree, employee))

    @router.post("/import-employees")
    async def import_employees(request: Request, code: str) -> JSONResponse:
        own_org(runtime, code)
        items = await array_body(request)
        reject = runtime.faults.rejector("import-employees")
        return ok(runtime.state.staff.import_employees(items, stamp(), reject))

    @router.get("/employees/{employee_id}")
    async def get(code: str, employee_id: str) -> JSONResponse:
        own_org(runtime, code)
        employee = runtime.state.staff.get(employee_id)
        return ok(employee_detail_record(runtime.state.tree, employee))

    @router.post("/employees/{employee_id}")
    async def update(request: Request, code: str, employee_id: str) -> JSONResponse:
        own_org(runtime, code)
        # Read the body before looking the employee up: no await may come between the
        # lookup and the update, or another request could remove them in between.
        body = await object_body(request)
        employee = runtime.state.staff.get(employee_id)
        runtime.state.staff.update(employee, body, stamp())
        return ok(employee_detail_record(runtime.state.tree, employee))

    @router.delete("/employees/{employee_id}")
    async def delete(code: str, employee_id: str) -> JSONResponse:
        own_org(runtime, code)
        staff = runtime.state.staff
        staff.remove(staff.get(employee_id), stamp())
        return ok({})

    def set_locked(locked: bool, code: str, employee_id: str) -> JSONResponse:
        own_org(runtime, code)
        staff = runtime.state.staff
        staff.set_locked(staff.get(employee_id), locked, stamp())
        return ok({})

    @router.post("/employees/{employee_id}/lock")
    async def lock(code: str, employee_id: str) -> JSONResponse:
        return set_locked(True, code, employee_id)

    @router.post("/employees/{employee_id}/unlock")
    async def unlock(code: str, employee_id: str) -> JSONResponse:
        return set_locked(False, code, employee_id)

    if runtime.options.api_version == "v4":
        # V3 platforms have no such endpoints: there they answer 404 like any unknown path.

        @router.post("/employees/{employee_id}/disable")
        async def disable(code: str, employee_id: str) -> JSONResponse:
            return set_locked(True, code, employee_id)

        @router.post("/employees/{employee_id}/enable")
        async def enable(code: str, employee_id: str) -> JSONResponse:
            return set_locked(False, code, employee_id)

    return router
