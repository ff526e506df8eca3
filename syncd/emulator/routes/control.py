"""Control endpoints under /_emulator: no token, never faulted, not counted in stats."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse

from syncd.emulator.codes import BAD_REQUEST, ApiError
from syncd.emulator.faults import FaultSettings
from syncd.emulator.fields import to_bool, to_int
from syncd.emulator.params import json_body, ok
from syncd.emulator.runtime import Runtime

PREFIX = "/_emulator"


async def optional_object(request: Request) -> dict[str, object]:
    body = await json_body(request)
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise ApiError(BAD_REQUEST, "request body must be a JSON object", http_status=400)
    return body


def control_routes(runtime: Runtime) -> APIRouter:
    router = APIRouter(prefix=PREFIX)

    @router.get("/state")
    async def state() -> JSONResponse:
        """Nodes, employees (list form), messages pushed and the number of tokens issued."""
        return ok(runtime.state.view())

    @router.get("/stats")
    async def stats() -> JSONResponse:
        return ok(runtime.stats())

    @router.get("/callers")
    async def callers(request: Request) -> JSONResponse:
        """Requests by caller (X-Syncd-Instance) and their writes, those that arrived at
        ``?since_ms=`` (wall clock, ms) or later."""
        since = to_int(request.query_params.get("since_ms", "0"), "since_ms")
        return ok(runtime.callers.view(since))

    @router.get("/faults")
    async def faults() -> JSONResponse:
        return ok(
            {
                **runtime.faults.settings.model_dump(mode="json"),
                "scripted_remaining": runtime.faults.scripted_remaining(),
            }
        )

    @router.post("/faults")
    async def replace_faults(request: Request) -> JSONResponse:
        """Replace all fault settings (keys left out take their defaults: no fault)."""
        try:
            settings = FaultSettings.model_validate(await optional_object(request))
        except ValidationError as error:
            message = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'body'}: {e['msg']}" for e in error.errors()
            )
            raise ApiError(BAD_REQUEST, f"invalid fault settings: {message}", 400) from error
        runtime.faults.replace(settings)
        return ok(settings.model_dump(mode="json"))

    @router.post("/reset")
    async def reset(request: Request) -> JSONResponse:
        """Clear faults and stats; with {"data": true} also all nodes but the root, employees,
        tokens and messages."""
        body = await optional_object(request)
        runtime.reset(data=to_bool(body.get("data", False), "data"))
        return ok({})

    @router.post("/save")
    async def save() -> JSONResponse:
        path = runtime.save()
        if path is None:
            raise ApiError(BAD_REQUEST, "no state_file configured", http_status=400)
        return ok(
            {
                "path": str(path),
                "nodes": len(runtime.state.tree),
                "employees": len(runtime.state.staff),
            }
        )

    @router.post("/clock")
    async def move_clock(request: Request) -> JSONResponse:
        """Move the emulator's clock forward by {"advance_ms": n} (token expiry tests), or
        step it back by {"back_ms": n} (a platform whose clock was set back)."""
        body = await optional_object(request)
        clock = runtime.state.clock
        clock.advance(to_int(body.get("advance_ms", 0), "advance_ms"))
        now = clock.set_back(to_int(body.get("back_ms", 0), "back_ms"))
        return ok({"now": now})

    return router
