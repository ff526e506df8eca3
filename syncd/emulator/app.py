"""The emulator as an ASGI application (FastAPI)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse

from syncd.emulator.codes import INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, ApiError
from syncd.emulator.middleware import FaultMiddleware, is_api_path
from syncd.emulator.options import EmulatorOptions
from syncd.emulator.params import envelope
from syncd.emulator.routes.application import application_routes, token_routes
from syncd.emulator.routes.control import control_routes
from syncd.emulator.routes.employees import employee_routes
from syncd.emulator.routes.media import media_routes
from syncd.emulator.routes.organizations import organization_routes
from syncd.emulator.runtime import Runtime

log = logging.getLogger(__name__)


def create_app(options: EmulatorOptions | None = None) -> FastAPI:
    """A fresh emulator: loads ``options.state_file`` now, saves it at shutdown."""
    runtime = Runtime.start(options or EmulatorOptions())

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        server_log = logging.getLogger("uvicorn.error")
        access_log = logging.getLogger("uvicorn.access")
        server_log.addFilter(runtime.drop_filter)
        access_log.addFilter(runtime.token_redactor)
        try:
            yield
        finally:
            server_log.removeFilter(runtime.drop_filter)
            access_log.removeFilter(runtime.token_redactor)
            saved = runtime.save()
            if saved:
                log.info("emulator state saved to %s", saved)

    app = FastAPI(
        title="syncd platform emulator",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
        lifespan=lifespan,
    )
    app.state.runtime = runtime
    # Employees first: "/{code}/employees" must win over the node route "/{org_code}/{id}".
    routers = [
        employee_routes(runtime),
        organization_routes(runtime),
        token_routes(runtime),
        application_routes(runtime),
        media_routes(runtime),
        control_routes(runtime),
    ]
    for router in routers:
        app.include_router(router)
    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)
    # The routers' own routes (full paths) name the templates counted in the statistics.
    routes = [route for router in routers for route in router.routes]
    app.add_middleware(FaultMiddleware, runtime=runtime, routes=routes)
    return app


async def api_error(request: Request, error: Exception) -> JSONResponse:
    assert isinstance(error, ApiError)
    http_status = error.http_status
    runtime: Runtime = request.app.state.runtime
    if runtime.faults.settings.errors_as_http_500 and is_api_path(request.url.path):
        runtime.faults.counts["errors_as_http_500"] += 1
        http_status = 500
    return envelope(error.status, error.message, {}, http_status)


async def http_error(request: Request, error: Exception) -> JSONResponse:
    """Unknown paths and methods: the HTTP status, with an envelope like every answer."""
    assert isinstance(error, HTTPException)
    message = f"{str(error.detail).lower()}: {request.method} {request.url.path}"
    return envelope(error.status_code, message, {}, error.status_code)


async def internal_error(_: Request, error: Exception) -> JSONResponse:
    return envelope(INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, {}, 500)
