"""The token endpoint, users (D1-D3) and text message push (B).

Users are the employees' and removed employees' (see ``syncd.emulator.people``)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import JSONResponse

from syncd.emulator.codes import bad_request, no_matching_employee
from syncd.emulator.messages import push
from syncd.emulator.params import (
    object_body,
    ok,
    paged,
    query,
    query_bool,
    query_int,
    required_query,
)
from syncd.emulator.people import Employee, fuzzy
from syncd.emulator.records import user_record
from syncd.emulator.routes.common import token_guard
from syncd.emulator.runtime import Runtime

DEFAULT_PAGE = 10


def token_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter()

    @router.post("/v1/token")
    async def issue_token(request: Request) -> JSONResponse:
        state = runtime.state
        body = await object_body(request)
        token = state.tokens.issue(state.application, body, state.clock.now())
        return ok(token.as_result())

    return router


def application_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter(dependencies=[Depends(token_guard(runtime))])

    def find_users(request: Request, by: str, values: list[str]) -> list[Employee]:
        staff = runtime.state.staff
        if by == "username":
            found = [staff.user(v) for v in values]
        elif by == "id":
            by_user_id = {e.user_id: e for e in staff.users()}
            found = [by_user_id.get(v) for v in values]
        else:
            raise bad_request("type must be id or username")
        return [e for e in found if e is not None]

    @router.get("/v1/users")
    async def users(request: Request) -> JSONResponse:
        """D1 (search) when ``query`` is given, else D3 (paged list since ``refresh_time``)."""
        tree, staff = runtime.state.tree, runtime.state.staff
        if query(request, "query"):
            text = required_query(request, "query")
            by = required_query(request, "type")
            if query_bool(request, "matching", False):
                found = find_users(request, by, [v.strip() for v in text.split(",")])
            else:
                exact = find_users(request, by, [text])
                found = exact + [e for e in fuzzy(text, staff.users()) if e not in exact]
            return ok({"total_count": len(found), "users": [user_record(tree, e) for e in found]})
        changed = staff.changed_since(query_int(request, "refresh_time", -1))
        skip, limit = query_int(request, "skip", 0), query_int(request, "limit", DEFAULT_PAGE)
        page = paged(changed, skip, runtime.faults.capped(limit))
        return ok({"total_count": len(changed), "users": [user_record(tree, e) for e in page]})

    @router.get("/v1/users/{user}")
    async def one_user(request: Request, user: str) -> JSONResponse:
        found = find_users(request, required_query(request, "type"), [user])
        if not found:
            raise no_matching_employee()
        return ok(user_record(runtime.state.tree, found[0]))

    @router.post("/app/mbox")
    async def push_message(request: Request) -> JSONResponse:
        state = runtime.state
        body = await object_body(request)
        message = push(
            state.staff, body, runtime.options.client_id, str(state.tree.root.id), state.clock.now()
        )
        state.messages.append(message)
        return ok(message["plan"])

    return router
